"""Builds that stream their engine through an IStreamWriter (issue 24), on the real library.

`Builder.build_serialized_network_to_stream(network, config, writer)` hands the engine to the app's
writer in pieces instead of returning it whole (tests/apps/build_to_stream.py). Every build entry
point must capture and replay: the shim forwards the app's writer (the library writes through a
writer of the shim's, which hashes each piece on its way) and records the build's outcome like
`build_serialized_network`; the player streams the engine into its output and `--check` compares it.
NVIDIA's shim does not record the call at all (docs/json-bin-layout.md, "Which calls are recorded").
"""

import json
import pathlib
import re
import resource
import signal
import subprocess
import sys

import pytest

from conftest import PLAYER, ROOT, capture, play, run_app, trt_lib, trtrace

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nvidia_capture as nv  # noqa: E402

APP = "build_to_stream.py"
STREAMED = "Builder::buildSerializedNetworkToStream"


def engines(prefix, networks):
    """The engine files of an app or a replay: <prefix> for one network, <prefix>0, ... for several."""
    return [pathlib.Path(f"{prefix}{i}" if networks > 1 else prefix) for i in range(networks)]


def streamed_builds(trace):
    return [line for line in trtrace("dump", trace).stdout.splitlines() if STREAMED in line]


def test_every_build_entry_point_is_recorded_with_its_outcome():
    """The spec's build role (api::flag::kBuild, by signature) against what capture and replay do:
    every build entry point is recorded (not UNSUPPORTED or passed through), and each has the
    hand-written outcome code (the hooks of buildSerializedNetwork, or a whole-method override on
    both sides) that records its engine's size and hash and has the player compare and write it."""
    sys.path.insert(0, str(ROOT / "schema"))
    import apimodel
    import apispec

    spec = apispec.load(ROOT / "schema" / "api")
    builds = [m for m in apimodel.all_methods(spec) if apimodel.is_build(spec, m)]
    names = {f"{m.interface}.{m.name}" for m in builds}
    assert {"Builder.buildSerializedNetwork", "Builder.buildSerializedNetworkToStream"} <= names, names
    for m in builds:
        key = f"{m.interface}.{m.name}"
        assert m.mode == "record", f"{key} is {m.mode}: a build must capture and replay"
        for side in ("capture", "replay"):
            hooked = {"pre", "post"} <= spec.hooks[side].get(key, set())
            assert hooked or key in spec.overrides[side], f"{key}: no {side} code records/compares its outcome"


@pytest.mark.parametrize("networks", [1, 2])
def test_streamed_build_replays_the_apps_engine(tmp, networks):
    trace = tmp / "t.trtrace"
    proc = capture(APP, trace, "--out", tmp / "app", "--networks", networks)
    assert proc.stdout.count(": built,") == networks, proc.stdout
    app = [p.read_bytes() for p in engines(tmp / "app", networks)]
    # The shim is invisible to the app: without it the library writes the same bytes to its writer.
    run_app(APP, "--out", tmp / "plain", "--networks", networks)
    assert [p.read_bytes() for p in engines(tmp / "plain", networks)] == app
    # Recorded as a build with its outcome (the bytes the app's writer was given), not UNSUPPORTED.
    builds = streamed_builds(trace)
    assert len(builds) == networks, builds
    for line, engine in zip(builds, app):
        assert "UNSUPPORTED" not in line and "[ok]" in line, line
        assert re.search(rf"engine {len(engine)} B xxh3 [0-9a-f]{{32}}", line), line
    # The hash of the pieces is the hash of the whole: the same networks built whole record the same.
    capture(APP, tmp / "whole.trtrace", "--out", tmp / "whole", "--networks", networks, "--whole")
    whole = [
        line
        for line in trtrace("dump", tmp / "whole.trtrace").stdout.splitlines()
        if "Builder::buildSerializedNetwork(" in line
    ]
    assert [line.split("] ")[-1] for line in whole] == [line.split("] ")[-1] for line in builds], (whole, builds)
    info = trtrace("info", trace).stdout
    assert f"builds: {networks} ({networks} ok)" in info, info
    # The player streams each engine into its output; --check compares it with the capture's.
    out = play(trace, tmp / "replay", "--check", "--json")
    report = json.loads(out.stdout)
    assert [n["vs_capture"] for n in report["networks"]] == ["identical"] * networks, out.stdout
    assert [n["size"] for n in report["networks"]] == [len(e) for e in app], out.stdout
    assert [p.read_bytes() for p in engines(tmp / "replay", networks)] == app
    assert not list(tmp.glob("replay*.tmp.*")), "a temporary engine file was left behind"
    if networks > 1:  # --network picks one streamed build, written to the output as named
        one = play(trace, tmp / "one", "--network", "1", "--check")
        assert "identical to capture" in one.stdout, one.stdout
        assert (tmp / "one").read_bytes() == app[1]


def test_streamed_engine_that_cannot_be_written_leaves_nothing(tmp):
    """A write that fails while the library streams the engine (here EFBIG: `ulimit -f` below the
    engine, SIGXFSZ ignored as a shell's `ulimit` leaves it) is one line naming the output, exit 1
    (docs/errors.md: output not writable), and neither the engine nor its temporary file stays."""
    trace = tmp / "t.trtrace"
    capture(APP, trace, "--out", tmp / "app")
    limit = (tmp / "app").stat().st_size // 2

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cmd = [str(PLAYER), "-q", "-j", str(trace), "-o", str(tmp / "replay"), "--lib", str(trt_lib())]
    out = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=small_files)
    assert out.returncode == 1, out.stdout + out.stderr
    assert out.stderr.splitlines() == [f"tensorrt_player: {tmp / 'replay'}: write failed (File too large)"], out.stderr
    assert not list(tmp.glob("replay*")), list(tmp.glob("replay*"))


def test_streamed_build_failure_is_reproduced(tmp):
    trace = tmp / "t.trtrace"
    proc = capture(APP, trace, "--out", tmp / "app", "--fail", check=False)
    assert proc.returncode == 1 and "FAILED" in proc.stdout, proc.stdout + proc.stderr
    builds = streamed_builds(trace)
    assert len(builds) == 1 and "[failed]" in builds[0].lower() and "UNSUPPORTED" not in builds[0], builds
    out = play(trace, tmp / "replay", "--check", check=False)
    assert out.returncode == 3, out.stdout + out.stderr  # the capture's failure, reproduced
    assert "build failed, as at capture" in out.stdout, out.stdout
    assert not list(tmp.glob("replay*")), "a failed streamed build left an engine file"


@pytest.mark.parametrize("how", ["shim", "convert"])
def test_streamed_build_through_nvidia_json_layout(tmp, how):
    """Our JSON+BIN (NVIDIA's layout), from the shim's export or `trtrace convert`, holds the streamed
    build as a call; the player rebuilds it."""
    trace, doc = tmp / "t.trtrace", tmp / "t.json"
    capture(
        APP,
        trace,
        "--out",
        tmp / "app",
        "--networks",
        2,
        env={"TRT_SHIM_OUTPUT_JSON_FILE": str(doc)} if how == "shim" else None,
    )
    if how == "convert":
        trtrace("convert", trace, doc)
    records = [c for c in json.loads(doc.read_text())["api_calls"] if c["function"] == "buildSerializedNetworkToStream"]
    assert len(records) == 2 and all(set(c) >= {"network", "config"} and "writer" not in c for c in records), records
    out = play(doc, tmp / "replay")
    assert out.stdout.count("engine ") == 2, out.stdout
    assert [p.read_bytes() for p in engines(tmp / "replay", 2)] == [p.read_bytes() for p in engines(tmp / "app", 2)]


@pytest.mark.skipif(not nv.available(), reason=str(nv.unavailable_reason()))
def test_nvidia_shim_does_not_record_streamed_builds(tmp):
    """The documented limit of NVIDIA captures: its shim passes the streamed build through unrecorded,
    so its JSON cannot say that a build happened, and nothing is rebuilt from it. Should a later shim
    record it, this test fails and the converter must map the record (as our own JSON's above)."""
    json_path, _, proc = nv.capture(
        [str(pathlib.Path(__file__).parent / "apps" / APP), "--out", str(tmp / "app")], tmp / "cap.json", cwd=tmp
    )
    assert ": built," in proc.stdout, proc.stdout + proc.stderr
    calls = nv.load(json_path)["api_calls"]
    assert calls and not [c for c in calls if c["function"].startswith("build")], calls[-3:]
    assert calls[-1]["function"] == "createBuilderConfig", calls[-1]
    p = play(json_path, tmp / "replay", check=False)
    assert p.returncode == 6 and "nothing written to" in p.stderr, p.stderr  # every call replays; no build
    assert not (tmp / "replay").exists()
