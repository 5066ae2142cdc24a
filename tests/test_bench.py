"""trtrace bench (issue 25): fresh player processes per run, variants interleaved, the report in every
format, --set read in the spec's types, failed runs kept apart, throughput over several traces, and
--compare. No assertion here is on speed: the figures live in BENCHMARKS.md (`make bench`)."""

import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest

from conftest import PLAYER, ROOT, TRTRACE, capture, trt_lib

LIB17 = (
    ROOT
    / ".deps"
    / "venv-1.7"
    / "lib"
    / f"python{sys.version_info.major}.{sys.version_info.minor}"
    / "site-packages"
    / "tensorrt_rtx_libs"
    / "libtensorrt_rtx.so.1"
)
OPT = "BuilderConfig::setBuilderOptimizationLevel"


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    capture("build_cnn.py", d / "cnn.trtrace", "--out", d / "app.engine")
    return d / "cnn.trtrace"


def bench(*args, check=None):
    env = dict(os.environ, TRTRACE_PYTHON=sys.executable, VIRTUAL_ENV=sys.prefix)  # the player's library: this venv's
    p = subprocess.run([str(TRTRACE), "bench", *map(str, args)], capture_output=True, text=True, env=env)
    if check is not None:
        assert p.returncode == check, p.stdout + p.stderr
    return p


def test_report_in_every_format_with_two_library_versions(cnn, tmp_path):
    libs = [trt_lib()] + ([LIB17] if LIB17.exists() else [])
    out = {k: tmp_path / f"r.{k}" for k in ("json", "csv", "md", "png", "html")}
    args = [
        cnn,
        "--runs",
        2,
        "--warmup",
        1,
        *[x for lib in libs for x in ("--lib", lib)],
        "--json",
        out["json"],
        "--csv",
        out["csv"],
        "--md",
        out["md"],
        "--plot",
        out["png"],
    ]
    p = bench(*args, check=0)
    assert "median ms" in p.stdout and "2 of 2 runs measured" in p.stdout
    doc = json.loads(out["json"].read_text())
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "bench.schema.json").read_text()))
    assert [v["library"]["path"] for v in doc["variants"]] == [str(x) for x in libs]
    if len(libs) == 2:  # a 1.6 capture replayed on 1.7: as --ignore-version, and said
        assert doc["variants"][1]["other_version"] and "another library version" in p.stdout
        assert doc["variants"][1]["library"]["version"].startswith("1.7")
    measured = [r for r in doc["runs"] if not r["warmup"]]
    assert len(measured) == 2 * len(libs) and len(doc["runs"]) == 3 * len(libs)
    assert [r["variant"] for r in doc["runs"]][: 2 * len(libs)] == list(range(len(libs))) * 2  # interleaved
    for r in measured:
        assert r["status"] == "ok" and r["engines"][0]["ok"]
        # every phase is measured, and together they are the run's wall time (fork to wait)
        assert set(r["phases"]) == {"start", "open", "library", "decode", "dispatch", "build", "write", "check", "exit"}
        assert abs(sum(r["phases"].values()) - r["wall"]) <= 0.002 + 0.01 * r["wall"], r
        assert r["phases"]["build"] > 0 and r["peak_rss"] > 0
    assert len(out["csv"].read_text().splitlines()) == 1 + len(doc["runs"])
    assert out["md"].read_text().startswith("# trtrace bench") and "| build |" in out["md"].read_text().replace(
        "  ", " "
    )
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bench(cnn, "--runs", 2, "--warmup", 0, "--plot", out["html"], check=0)
    assert b"data:image/png;base64," in out["html"].read_bytes()


def test_set_values_are_variants_and_reach_the_build(cnn, tmp_path):
    p = bench(cnn, "--runs", 2, "--warmup", 0, "--set", f"{OPT}=0,5", "--json", tmp_path / "r.json", check=0)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [v["sets"] for v in doc["variants"]] == [[f"{OPT}=0"], [f"{OPT}=5"]]
    for r in doc["runs"]:  # the capture never set the level: each run made the call before the build
        assert r["settings"] == [
            {"set": doc["variants"][r["variant"]]["sets"][0], "replaced": 0, "added": 1, "rejected": 0}
        ]
    assert {c["figure"] for c in doc["comparisons"]} >= {"build", "wall"}
    assert all(c["verdict"] in ("faster", "slower", "no significant difference") for c in doc["comparisons"])
    assert "x " in p.stdout  # the ratio column


@pytest.mark.parametrize(
    "setting, message",
    [
        ("BuilderConfig::setNoSuchThing=1", "no method BuilderConfig::setNoSuchThing in the API spec"),
        (f"{OPT}=fast", "'fast' is not an integer"),
        (
            "BuilderConfig::setHardwareCompatibilityLevel=kWARP9",
            "'kWARP9' is not an enumerator of HardwareCompatibilityLevel",
        ),
        ("BuilderConfig::setMemoryPoolLimit=1", "does not take one scalar"),
        (OPT, "expected Interface::method=V1,V2,..."),
    ],
)
def test_a_bad_setting_is_one_line_before_any_run(cnn, setting, message):
    p = bench(cnn, "--runs", 1, "--set", setting, check=1)
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("trtrace: bench: ") and message in p.stderr, p.stderr
    assert p.stdout == ""


def test_player_set_counts_added_and_rejected_calls(cnn):
    p = subprocess.run(
        [
            str(PLAYER),
            "-j",
            cnn,
            "--json",
            "-q",
            "--lib",
            trt_lib(),
            "--set",
            f"{OPT}=1",
            "--set",
            "BuilderConfig::setMaxAuxStreams=-5",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["settings"]
    assert s[0]["added"] == 1 and s[1] == {
        "set": "BuilderConfig::setMaxAuxStreams=-5",
        "replaced": 0,
        "added": 1,
        "rejected": 1,
    }


def test_failed_and_rejected_runs_are_reported_not_averaged(cnn, tmp_path):
    # the library refuses a negative stream count (the setter returns false) ...
    p = bench(
        cnn,
        "--runs",
        1,
        "--warmup",
        0,
        "--set",
        "BuilderConfig::setMaxAuxStreams=1,-5",
        "--json",
        tmp_path / "r.json",
        check=2,
    )
    res = json.loads((tmp_path / "r.json").read_text())["results"]
    assert res[0]["failures"] == {} and res[0]["ok_runs"] == 1
    assert (
        res[1]["failures"] == {"setting-rejected": 1}
        and res[1]["ok_runs"] == 0
        and res[1]["figures"]["wall"] == {"n": 0}
    )
    assert "failed: setting-rejected x1" in p.stdout
    # ... and fails the build with more compute capabilities than it has
    p = bench(
        cnn,
        "--runs",
        1,
        "--warmup",
        0,
        "--set",
        "BuilderConfig::setNbComputeCapabilities=100",
        "--json",
        tmp_path / "f.json",
        check=2,
    )
    res = json.loads((tmp_path / "f.json").read_text())["results"]
    assert res[0]["failures"] == {"build-failed": 1} and res[0]["figures"]["build"] == {"n": 0}


def test_throughput_over_several_traces(cnn, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(3):
        shutil.copy(cnn, folder / f"t{i}.trtrace")
    p = bench(folder, "--runs", 1, "--warmup", 0, "--jobs", 2, "--json", tmp_path / "r.json", check=0)
    t = json.loads((tmp_path / "r.json").read_text())["throughput"]
    assert t["jobs"] == 2 and t["replays"] == 3 and len(t["per_trace"]) == 3
    assert t["traces_per_hour"] > 0 and t["weight_bytes_per_s"] > 0 and t["build_s_per_trace"] > 0
    assert "throughput: 3 replays" in p.stdout


def test_compare_flags_a_regression_against_a_faster_baseline(cnn, tmp_path):
    # 6 runs a side: the smallest Mann-Whitney p then survives Holm's adjustment over the 10 figures
    bench(cnn, "--runs", 6, "--warmup", 0, "--json", tmp_path / "now.json", check=0)
    base = json.loads((tmp_path / "now.json").read_text())
    for r in base["runs"]:  # a baseline 10x faster than anything this machine measures
        r["wall"] /= 10
        r["phases"] = {k: v / 10 for k, v in r["phases"].items()}
    (tmp_path / "base.json").write_text(json.dumps(base))
    p = bench(cnn, "--runs", 6, "--warmup", 0, "--compare", tmp_path / "base.json", check=4)
    assert "trtrace: bench: regression: cnn.trtrace [default] wall:" in p.stderr
    (tmp_path / "bad.json").write_text("{}")
    assert "not a trtrace bench JSON" in bench(cnn, "--runs", 1, "--compare", tmp_path / "bad.json", check=1).stderr


def test_bad_options_and_inputs(cnn, tmp_path):
    for args, msg in [
        (["--runs", "0"], "out of range"),
        (["--timeout", "nan"], "out of range"),
        (["--timeout", "1e30"], "out of range"),
    ]:
        p = bench(cnn, *args, check=64)  # a command line that does not parse, as every tool's
        assert msg in p.stderr and p.stderr.startswith("trtrace: bench: ") and p.stderr.count("\n") == 1
    assert "cannot open" in bench(tmp_path / "nope.trtrace", check=1).stderr
    assert "is the input" in bench(cnn, "--runs", 1, "--json", cnn, check=1).stderr


def test_python_api_returns_the_same_document(cnn):
    sys.path.insert(0, str(ROOT / "python"))
    from trtrace.bench import bench as api_bench

    doc = api_bench([str(cnn)], runs=1, warmup=0, player=str(PLAYER), libs=[str(trt_lib())])
    assert doc["schema"] == "trtrace-bench/1" and doc["results"][0]["ok_runs"] == 1
