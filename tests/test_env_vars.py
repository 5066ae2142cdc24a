"""Each documented TRT_SHIM_* variable (shared/reference/capture-replay-trt-rtx.txt) has its effect."""

import json
import os
import signal
import subprocess
import sys

from conftest import capture, play, run_app, trtrace, no_fork_under_asan, info


def test_output_file_names_the_trace(tmp):
    capture("build_cnn.py", tmp / "named.trtrace", "--out", tmp / "e")
    assert (tmp / "named.trtrace").stat().st_size > 0
    trtrace("verify", tmp / "named.trtrace")


def test_default_output_is_capture_trtrace_in_the_working_directory(tmp):
    from conftest import SHIM

    proc = run_app("build_cnn.py", "--out", tmp / "e", env={"LD_PRELOAD": str(SHIM), "PWD": str(tmp)}, cwd=tmp)
    assert (tmp / "capture.trtrace").exists(), proc.stderr


def test_dump_api_prints_enter_and_exit_lines(tmp):
    proc = capture("build_cnn.py", tmp / "t.trtrace", "--out", tmp / "e", env={"TRT_SHIM_DUMP_API": "1"})
    lines = proc.stderr.splitlines()
    i = lines.index("trtrace: enter NetworkDefinition::addInput")
    assert lines[i + 1] == "trtrace: exit  NetworkDefinition::addInput"
    assert "trtrace: enter Builder::buildSerializedNetwork" in lines
    quiet = capture("build_cnn.py", tmp / "q.trtrace", "--out", tmp / "e2")
    assert "trtrace: enter" not in quiet.stderr


def test_print_welcome(tmp):
    proc = capture("build_cnn.py", tmp / "t.trtrace", "--out", tmp / "e", env={"TRT_SHIM_PRINT_WELCOME": "true"})
    assert "Welcome to TensorRT Shim" in proc.stderr
    assert "Welcome" not in capture("build_cnn.py", tmp / "u.trtrace", "--out", tmp / "e2").stderr


def test_inline_threshold(tmp):
    # Default 8: the 8-element conv bias is inline; 0: nothing inline; huge: everything inline.
    capture("build_cnn.py", tmp / "d.trtrace", "--out", tmp / "e")
    capture(
        "build_cnn.py", tmp / "z.trtrace", "--out", tmp / "e", env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "0"}
    )
    capture(
        "build_cnn.py",
        tmp / "h.trtrace",
        "--out",
        tmp / "e",
        env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "100000"},
    )
    d, z, h = (info(tmp / f"{x}.trtrace")["weights"] for x in "dzh")
    assert d["inline_bytes"] == 8 * 4 and z["inline_bytes"] == 0
    assert z["unique_blobs"] == d["unique_blobs"] + 1
    assert h["unique_blobs"] == 0 and h["inline_bytes"] == d["logical_bytes"] + d["inline_bytes"]
    for x in "zh":  # every variant still replays to the app's engine
        assert "identical to capture" in play(tmp / f"{x}.trtrace", tmp / f"{x}.engine", "--check").stdout


def test_mark_as_random_threshold(tmp):
    capture(
        "build_cnn.py",
        tmp / "r.trtrace",
        "--out",
        tmp / "e",
        env={"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN": "200"},
    )
    w = info(tmp / "r.trtrace")["weights"]
    # Stored: the 10-element bias only; the 216-element kernel and the fp16 matrix are random.
    assert w["unique_blobs"] == 1 and w["logical_bytes"] == 40


def test_bad_values_warn_and_keep_defaults(tmp):
    env = {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "abc", "TRT_SHIM_DUMP_API": "maybe"}
    proc = capture("build_cnn.py", tmp / "b.trtrace", "--out", tmp / "e", env=env)
    assert "TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN='abc' is not an integer" in proc.stderr
    assert "TRT_SHIM_DUMP_API='maybe' is not a boolean" in proc.stderr
    assert info(tmp / "b.trtrace")["weights"]["inline_bytes"] == 8 * 4  # default 8 kept


def test_unwritable_output_disables_capture_but_not_the_app(tmp):
    proc = capture("build_cnn.py", tmp / "no" / "such" / "dir" / "x.trtrace", "--out", tmp / "e")
    assert "capture disabled" in proc.stderr
    assert (tmp / "e").stat().st_size > 0


def test_nvinfer_lib_name_wrong_path_is_one_clear_error(tmp):
    proc = capture(
        "build_cnn.py",
        tmp / "x.trtrace",
        "--out",
        tmp / "e",
        env={"TRT_SHIM_NVINFER_LIB_NAME": str(tmp / "missing.so")},
        check=False,
    )
    assert proc.returncode != 0 and proc.returncode > 0  # the app fails, it does not crash
    assert "cannot load the real TensorRT-RTX library" in proc.stderr


def killed_capture(tmp, name, env, kill_after_builds, networks=2):
    proc = capture(
        "build_cnn.py",
        tmp / f"{name}.trtrace",
        "--out",
        tmp / name,
        "--networks",
        networks,
        "--kill-after-builds",
        kill_after_builds,
        env=env,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return tmp / f"{name}.trtrace"


def test_without_flush_flags_a_killed_app_leaves_at_most_a_clean_prefix(tmp):
    # Nothing is promised without the flags: a build's end hands the open segment to the log's
    # thread (Writer::flushBehind), which may or may not have written it when the kill comes. What
    # reached the file is a readable prefix, not closed, that ends before the build never made.
    trace = killed_capture(tmp, "none", {}, 1)
    if trace.exists():
        summary = info(trace, check=False)
        assert summary.get("calls", 0) == 0 or summary["closed"] is False
        assert summary.get("builds", 0) <= 1


def test_flush_after_every_call_keeps_every_call_of_a_killed_app(tmp):
    trace = killed_capture(tmp, "every", {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL": "1"}, 0)
    summary = info(trace)
    assert summary["closed"] is False
    assert summary["apis"]["NetworkDefinition::markOutput"] == 2  # both networks fully recorded
    assert "Builder::buildSerializedNetwork" not in summary["apis"]
    assert trtrace("verify", trace, check=False).returncode != 0  # truncated: not closed


def test_flush_on_build_keeps_each_finished_build(tmp):
    trace = killed_capture(tmp, "onbuild", {"TRT_SHIM_FLUSH_ON_BUILD": "1"}, 1)
    summary = info(trace)
    assert summary["builds"] == 1 and summary["builds_ok"] == 1
    # The flushed prefix replays: network 1's engine equals the one the app builds.
    run_app("build_cnn.py", "--out", tmp / "ref", "--networks", 2)
    proc = play(trace, tmp / "replayed", "--network", 0)
    assert (tmp / "replayed").read_bytes() == (tmp / "ref0").read_bytes(), proc.stderr


@no_fork_under_asan
def test_forked_child_writes_its_own_file(tmp):
    proc = capture("build_cnn.py", tmp / "p.trtrace", "--out", tmp / "f", "--fork")
    children = [p for p in tmp.iterdir() if p.name.startswith("p.trtrace.")]
    assert len(children) == 1, proc.stderr
    trtrace("verify", tmp / "p.trtrace")
    trtrace("verify", children[0])
    parent, child = info(tmp / "p.trtrace"), info(children[0])
    assert parent["builds"] == 1 and child["builds"] == 1
    assert "entry::createInferBuilder_INTERNAL" in parent["apis"]


def test_output_json_file_alone_yields_the_documented_json_bin_pair(tmp):
    """Existing scripts set only TRT_SHIM_OUTPUT_JSON_FILE: they get NVIDIA's JSON+BIN layout."""
    from conftest import SHIM

    env = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_JSON_FILE": str(tmp / "cap.json")}
    run_app("build_cnn.py", "--out", tmp / "e", env=env)
    doc = json.loads((tmp / "cap.json").read_text())
    assert sorted(doc) == ["api_calls", "output_bin", "trt_version"]
    assert doc["output_bin"] == "cap.bin" and doc["trt_version"] == 10601
    calls = doc["api_calls"]
    assert calls[0]["function"] == "createInferBuilder_INTERNAL"
    assert [c["api_index"] for c in calls] == list(range(len(calls)))
    conv = next(c for c in calls if c["function"] == "addConvolutionNd")
    assert conv["kernelWeights"]["count"] == 216 and "offset" in conv["kernelWeights"]
    assert conv["biasWeights"]["inline"] and len(conv["biasWeights"]["inline"]) == 8
    # The BIN holds every non-inline weight once: 216 + 10 fp32 values and 8*8*8*10 fp16 values.
    assert (tmp / "cap.bin").stat().st_size == 216 * 4 + 10 * 4 + 512 * 10 * 2


def json_export_counts(stderr):
    """The numbers of the shim's test-hook line (TRTRACE_TEST_JSON_COUNTS, capture/json_export.h)."""
    line = next(l for l in stderr.splitlines() if l.startswith("trtrace: test: JSON+BIN export: "))
    words = line.split(": ", 3)[3].split(", ")
    return {w.split(" ", 1)[1]: int(w.split(" ", 1)[0]) for w in words}


def test_json_export_encodes_each_call_once_and_writes_linearly(tmp):
    """TRT_SHIM_FLUSH_AFTER_EVERY_CALL with TRT_SHIM_OUTPUT_JSON_FILE: the JSON+BIN is brought up to date
    after every call without converting the trace again (issue 15). The shim's test hook
    (TRTRACE_TEST_JSON_COUNTS: counts, not timings) shows each call encoded once (records encoded +
    calls skipped == the trace's calls, not their square) and the JSON updated in place: bytes written =
    its size + one closing part per later flush, not its whole text at every flush; the BIN appended.
    The files equal `trtrace convert` of the trace, byte for byte."""
    env = {
        "TRT_SHIM_OUTPUT_JSON_FILE": str(tmp / "cap.json"),
        "TRT_SHIM_FLUSH_AFTER_EVERY_CALL": "1",
        "TRTRACE_TEST_JSON_COUNTS": "1",
    }
    proc = capture("build_cnn.py", tmp / "t.trtrace", "--out", tmp / "e", "--networks", 2, env=env)
    n = json_export_counts(proc.stderr)
    text = (tmp / "cap.json").read_text()
    records = len(json.loads(text)["api_calls"])
    calls = info(tmp / "t.trtrace")["calls"]
    assert n["records encoded"] == records and n["records encoded"] + n["calls skipped"] == calls
    assert n["flushes"] == calls + 1  # after each call, and at exit
    closing = len(text.encode()) - text.rindex("\n    ],\n")
    assert n["JSON bytes written"] == len(text.encode()) + (n["flushes"] - 1) * closing
    assert n["BIN bytes written"] == (tmp / "cap.bin").stat().st_size
    (tmp / "c").mkdir()
    trtrace("convert", tmp / "t.trtrace", tmp / "c" / "cap.json")  # the same names: "output_bin" too
    assert (tmp / "cap.json").read_bytes() == (tmp / "c" / "cap.json").read_bytes()
    assert (tmp / "cap.bin").read_bytes() == (tmp / "c" / "cap.bin").read_bytes()


def test_json_at_each_flush_point_equals_convert_of_the_trace(tmp):
    """The JSON+BIN the shim leaves at a flush point (the app killed right after it) is `trtrace
    convert` of the trace at that point, byte for byte: after the first build (TRT_SHIM_FLUSH_ON_BUILD,
    the JSON then updated in place), and after call 7 (TRT_SHIM_FLUSH_AFTER_EVERY_CALL)."""
    for name, env in (
        ("build", {"TRT_SHIM_FLUSH_ON_BUILD": "1"}),
        ("every", {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL": "1", "TRTRACE_FAULT_KILL_AT_CALL": "7"}),
    ):
        env = dict(env, TRT_SHIM_OUTPUT_JSON_FILE=str(tmp / f"{name}.json"))
        trace = killed_capture(tmp, name, env, 2, networks=3)
        # The killed trace's prefix, closed (`trtrace convert` takes only a closed trace).
        trtrace("rewrite", "--raw", "--salvage", trace, tmp / f"{name}.closed.trtrace")
        (tmp / "c").mkdir(exist_ok=True)
        trtrace("convert", tmp / f"{name}.closed.trtrace", tmp / "c" / f"{name}.json")
        assert (tmp / f"{name}.json").read_bytes() == (tmp / "c" / f"{name}.json").read_bytes(), name
        assert (tmp / f"{name}.bin").read_bytes() == (tmp / "c" / f"{name}.bin").read_bytes(), name
    assert len(json.loads((tmp / "every.json").read_text())["api_calls"]) <= 7


BIG_WEIGHTS_APP = """
import numpy as np, tensorrt_rtx as trt
builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
for k in range(2):
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (1, 600000))
    c = net.add_constant((1, 600000), trt.Weights(np.arange(600000, dtype=np.float32) + k))
    net.mark_output(net.add_elementwise(x, c.get_output(0), trt.ElementWiseOperation.SUM).get_output(0))
    assert builder.build_serialized_network(net, builder.create_builder_config())
"""


def test_json_export_spools_weights_past_memory_between_flushes(tmp):
    """2.4 MB of weights a network, flushed at each build: the export's spool goes past what it keeps
    in memory (1 MiB) into its temporary file, twice (capture/json_export.h); the JSON and BIN equal
    `trtrace convert` of the trace, and no temporary file is left."""
    from conftest import SHIM

    env = dict(
        os.environ,
        LD_PRELOAD=str(SHIM),
        TRT_SHIM_OUTPUT_FILE=str(tmp / "t.trtrace"),
        TMPDIR=str(tmp),
        TRT_SHIM_OUTPUT_JSON_FILE=str(tmp / "big.json"),
        TRT_SHIM_FLUSH_ON_BUILD="1",
        TRTRACE_TEST_JSON_COUNTS="1",
    )
    proc = subprocess.run([sys.executable, "-c", BIG_WEIGHTS_APP], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json_export_counts(proc.stderr)["BIN bytes written"] == 2 * 600000 * 4
    (tmp / "c").mkdir()
    trtrace("convert", tmp / "t.trtrace", tmp / "c" / "big.json")
    assert (tmp / "big.json").read_bytes() == (tmp / "c" / "big.json").read_bytes()
    assert (tmp / "big.bin").read_bytes() == (tmp / "c" / "big.bin").read_bytes()
    assert sorted(p.name for p in tmp.iterdir()) == ["big.bin", "big.json", "c", "t.trtrace"]


def test_json_mode_flush_on_build_survives_a_kill(tmp):
    from conftest import SHIM

    env = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_JSON_FILE": str(tmp / "k.json"), "TRT_SHIM_FLUSH_ON_BUILD": "1"}
    proc = run_app("build_cnn.py", "--out", tmp / "e", "--networks", 2, "--kill-after-builds", 1, env=env, check=False)
    assert proc.returncode == -signal.SIGKILL
    calls = json.loads((tmp / "k.json").read_text())["api_calls"]
    assert sum(c["function"] == "buildSerializedNetwork" for c in calls) == 1
