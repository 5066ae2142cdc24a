"""Every tool, and trtrace.open, reads NVIDIA's JSON+BIN in place (issue 24, items 2 and 3).

One run of a 2-network app (tests/apps/build_cnn.py) under our shim writes its trace and, through
TRT_SHIM_OUTPUT_JSON_FILE, the same calls in NVIDIA's JSON+BIN layout; where NVIDIA's own shim is
installed (tools/setup.sh) a second run writes its capture. Each tool is run on the trace and on each
JSON, and must give the same answer: info's counts (builds included: a build is a build by the API
spec, not by the optional outcome that JSON captures lack), dump's calls, verify ok, diff
"equivalent", strip/extract/reduce writing traces, export's build.py writing the same engines, and
trtrace.open(json).builds. NVIDIA's layout leaves out destructors and HostMemory calls, which cannot
change a build: the trace's calls are compared without them.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import nvidia_capture as nv
from conftest import APPS, BIN, ROOT, TRTRACE, capture, play, trt_lib, trtrace, info
from test_capture_replay import engines

NETWORKS = 2
SOURCES = ["ours", "nvidia"]


@pytest.fixture(scope="module")
def caps(tmp_path_factory):
    d = tmp_path_factory.mktemp("json_everywhere")
    app = ["--out", d / "app.engine", "--networks", str(NETWORKS)]
    capture("build_cnn.py", d / "app.trtrace", *app, env={"TRT_SHIM_OUTPUT_JSON_FILE": str(d / "ours.json")})
    got = {"trace": d / "app.trtrace", "ours": d / "ours.json", "dir": d}
    if nv.available():
        json_path, _, proc = nv.capture(
            [APPS / "build_cnn.py", "--out", d / "nv.engine", "--networks", str(NETWORKS)], d / "nv.json"
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got["nvidia"] = json_path
    return got


def source(caps, which):
    if which not in caps:
        pytest.skip(nv.unavailable_reason())
    return caps[which]


@pytest.mark.parametrize("which", SOURCES)
def test_info_counts_builds_by_the_spec(caps, which):
    t, j = info(caps["trace"]), info(source(caps, which))
    assert t["builds"] == j["builds"] == NETWORKS
    assert t["builds_ok"] == NETWORKS and t["builds_not_recorded"] == 0
    assert j["builds_ok"] == 0 and j["builds_not_recorded"] == NETWORKS  # JSON holds no build outcome
    assert sorted(t["networks"]) == sorted(j["networks"])
    for k in ("references", "logical_bytes", "unique_blobs", "unique_bytes", "inline_bytes"):
        assert t["weights"][k] == j["weights"][k], k
    text = trtrace("info", source(caps, which)).stdout
    assert f"builds: {NETWORKS} (0 ok, {NETWORKS} outcome not recorded)" in text, text


@pytest.mark.parametrize("which", SOURCES)
def test_a_converted_trace_counts_its_builds(caps, which, tmp_path):
    """`trtrace convert` JSON -> trace: its builds are builds, though no outcome is recorded."""
    trtrace("convert", source(caps, which), tmp_path / "c.trtrace")
    c = info(tmp_path / "c.trtrace")
    assert c["builds"] == NETWORKS and c["builds_not_recorded"] == NETWORKS


def calls_of_dump(text):
    """(network, Interface::method) of each dumped call that can change a build."""
    out = []
    for line in text.splitlines():
        m = re.match(r"#\d+ t=\d+ net=(\S+) (\w+)::(~|\w+)\(", line)
        assert m, line
        if m.group(3).startswith("~") or m.group(2) == "HostMemory":
            continue
        out.append((m.group(1), f"{m.group(2)}::{m.group(3)}"))
    return out


@pytest.mark.parametrize("which", SOURCES)
def test_dump_lists_the_same_calls(caps, which):
    t = trtrace("dump", caps["trace"]).stdout
    j = trtrace("dump", source(caps, which)).stdout
    assert calls_of_dump(j) == calls_of_dump(t)
    builds = [l for l in j.splitlines() if "Builder::buildSerializedNetwork(" in l]
    assert len(builds) == NETWORKS and all(l.endswith("build outcome not recorded") for l in builds), j


@pytest.mark.parametrize("which", SOURCES)
def test_verify_and_diff(caps, which):
    j = source(caps, which)
    v = trtrace("verify", j)
    assert v.stdout.startswith(f"{j}: OK: ") and v.stderr == "", v.stdout + v.stderr
    for a, b in ((caps["trace"], j), (j, caps["trace"]), (j, j)):
        d = trtrace("diff", a, b)
        assert d.stdout.startswith("equivalent: "), d.stdout


@pytest.mark.parametrize("which", SOURCES)
def test_strip_and_extract_write_traces(caps, which, tmp_path):
    j = source(caps, which)
    trtrace("strip", j, "-o", tmp_path / "s.trtrace")
    play(tmp_path / "s.trtrace", tmp_path / "s.engine")  # stand-in weights: replays, same structure
    for n in range(NETWORKS):
        trtrace("extract", j, "--network", n, "-o", tmp_path / f"j{n}.trtrace")
        trtrace("extract", caps["trace"], "--network", n, "-o", tmp_path / f"t{n}.trtrace")
        assert trtrace("diff", tmp_path / f"j{n}.trtrace", tmp_path / f"t{n}.trtrace").stdout.startswith("equivalent")
        play(tmp_path / f"j{n}.trtrace", tmp_path / f"x{n}.engine")
        assert (tmp_path / f"x{n}.engine").read_bytes() == (caps["dir"] / f"app.engine{n}").read_bytes()


@pytest.mark.parametrize("which", SOURCES)
def test_export_writes_the_same_engines(caps, which, tmp_path):
    out = tmp_path / "py"
    trtrace("export", source(caps, which), "--python", out)
    run = subprocess.run(
        [sys.executable, str(out / "build.py"), "--out", str(tmp_path / "py.engine")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for ours, app in zip(engines(tmp_path / "py.engine", NETWORKS), engines(caps["dir"] / "app.engine", NETWORKS)):
        assert ours.read_bytes() == app.read_bytes(), ours


def reduced(path, out):
    p = trtrace("reduce", path, "-o", out, "--lib", trt_lib())
    m = re.search(r"layers (\d+) → (\d+)", p.stdout)
    assert m, p.stdout + p.stderr
    return int(m.group(1)), int(m.group(2))


def test_reduce_a_json_capture(tmp_path):
    """A failing build, captured both ways in one run, shrinks to the same layers."""
    capture(
        "build_cnn.py",
        tmp_path / "f.trtrace",
        "--out",
        tmp_path / "f.engine",
        "--fail",
        env={"TRT_SHIM_OUTPUT_JSON_FILE": str(tmp_path / "f.json")},
        check=False,
    )
    t = reduced(tmp_path / "f.trtrace", tmp_path / "rt.trtrace")
    j = reduced(tmp_path / "f.json", tmp_path / "rj.trtrace")
    assert j == t and t[1] < t[0]


PY = f"import sys, json; sys.path.insert(0, {str(ROOT / 'python')!r}); import trtrace\n"


def python_view(path):
    """What the Python API says of a capture: builds, networks, weights (digest), verify's verdict."""
    code = PY + (
        "import hashlib\n"
        f"t = trtrace.open({str(path)!r})\n"
        "print(json.dumps({'builds': [[b.network, b.ok] for b in t.builds],\n"
        "  'networks': [len(n.builds) for n in t.networks],\n"
        "  'weights': [hashlib.sha256(w.array().tobytes()).hexdigest() for w in t.weights],\n"
        "  'verify': t.verify()['ok']}))\n"
    )
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")  # the package finds this build's libtrtrace_c
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("which", SOURCES)
def test_python_open_reads_json(caps, which):
    t, j = python_view(caps["trace"]), python_view(source(caps, which))
    assert t["builds"] == [[n, True] for n in range(NETWORKS)]
    assert j["builds"] == [[n, None] for n in range(NETWORKS)]  # a build, its outcome not recorded
    assert t["networks"] == j["networks"] == [1] * NETWORKS
    assert t["weights"] == j["weights"] and t["verify"] and j["verify"]


def test_the_player_and_the_tools_share_one_opener():
    """convert::openCapture is the only place a capture is opened: no tool calls Reader::open on its
    input (issue 24 item 3; the C interface included). push sends a trace file's bytes: it refuses
    JSON with one line (test_push_says_to_convert_json)."""
    users = []
    for folder in ("cli", "replay", "trace/capi"):
        for f in sorted((ROOT / folder).glob("*.cpp")):
            if "Reader::open(" in f.read_text() and f.name not in (
                "cmd_capture.cpp",
                "cmd_rewrite.cpp",
                "cmd_push.cpp",
            ):
                users.append(f.name)
    assert users == []


def test_push_says_to_convert_json(caps, tmp_path):
    """push uploads the trace file's bytes, so a JSON+BIN capture is converted first: one line, exit 1
    (cannot read the trace: docs/errors.md), before any registry is contacted (none listens there)."""
    p = subprocess.run([str(TRTRACE), "push", str(caps["ours"]), "127.0.0.1:9/t:x"], capture_output=True, text=True)
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "NVIDIA JSON+BIN; push takes a trace (trtrace convert" in lines[0], p.stderr
