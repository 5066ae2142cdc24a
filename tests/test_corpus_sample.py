"""The corpus's stratified sample (tests/corpus/sample.txt: networks from every source folder,
chosen to cover scalars and empty dims, RNN/GRU/LSTM, LayerNorm, convolution nets, failed builds
and our own transformer exports) through both capture paths, and every tool (export, strip,
extract, diff, the Python API, reduce; tests/corpus/corpus_tools.py) on the handful of them that
tests/corpus/tools-sample.txt lists. Runs with each library version's Python (CTest corpus_sample
and corpus_sample_1.7). Fails on any defect outcome (run_corpus.ok_outcomes are not defects);
`make corpus` runs the whole corpus."""

import os
import pathlib
import sys

import pytest

from conftest import ASAN_RUNTIME

HERE = pathlib.Path(__file__).resolve().parent / "corpus"
sys.path.insert(0, str(HERE))
import corpus_tools  # noqa: E402  (tests/corpus/)
import exports  # noqa: E402
import run_corpus as rc  # noqa: E402
import steps  # noqa: E402


def sample_lines(name):
    return {l.split("#")[0].strip() for l in (HERE / name).read_text().splitlines()} - {""}


def test_tools_sample_is_part_of_the_sample():
    assert sample_lines("tools-sample.txt") <= sample_lines("sample.txt")


def test_export_md_list_needs_a_call_and_a_reason(tmp_path):
    md = tmp_path / "export.md"
    md.write_text(
        "| call | reason |\n|---|---|\n| `Builder::foo` | the bindings lack it |\n| `Builder::bar` |  |\n"
        "| Builder::baz | no backticks |\n"
    )
    assert corpus_tools.listed_cannot_express(md) == {"Builder::foo": "the bindings lack it"}
    assert corpus_tools.listed_cannot_express(tmp_path / "missing.md") == {}


def test_tables_per_tool_count_defects():
    def res(export):
        return {
            "source": "node",
            "name": "x",
            "model": "m",
            "ours": {"outcome": "replay-identical"},
            "export": {"outcome": export, "reason": "call #3 (A::b): cannot be written"},
        }

    results = [res("identical"), res("cannot-express"), res("cannot-express-listed")]
    meta = {"networks": 3, "jobs": 1, "seconds": 1.0, "commit": "c", "build": "b", "library": "l", "date": "d"}
    md = rc.markdown(results, ("ours", "export"), meta)
    assert "Defects: ours 0, export 1." in md and "## Tool `export`" in md and "## Path `ours`" in md
    assert "| **all** | 1 | 1 | 1 | 3 | 1 |" in md  # cannot-express-listed, identical, cannot-express; total; defects
    assert [rc.is_defect(r, "export") for r in results] == [False, True, False]


def test_sample_replays_on_both_paths_and_every_tool_holds(tmp_path):
    data = rc.data_dir()
    if not (data / "node").is_dir():
        pytest.skip(f"{data}: no onnx backend test data (tools/setup.sh could not fetch onnx==1.17.0)")
    nets = rc.discover(data, exports.write_all(tmp_path / "own-models"))
    sample, with_tools = rc.select(nets, HERE / "sample.txt"), rc.select(nets, HERE / "tools-sample.txt")
    if ASAN_RUNTIME:  # its engine's bytes depend on the heap layout (test_capture_replay.py), ASan's differs
        sample = [n for n in sample if n[1] != "bert_tiny"]
    paths = ("ours", "nvidia") if rc.nv.available() else ("ours",)
    lines = []
    results = rc.run(
        sample,
        tmp_path,
        os.cpu_count() or 2,
        paths,
        progress=lines.append,
        tools=corpus_tools.TOOLS,
        tools_on={(s, n) for s, n, _ in with_tools},
    )
    columns = paths + corpus_tools.TOOLS
    ran = {c for r in results for c in columns if c in r}
    assert ran == set(columns), f"never ran: {set(columns) - ran}"
    defects = [
        f"{r['source']}/{r['name']} [{c}] {r[c]['outcome']}: {r[c].get('reason', '')}\n    repro: {rc.repro(r, c, tmp_path)}"
        for r in results
        for c in columns
        if c in r and rc.is_defect(r, c)
    ]
    assert not defects, f"{len(defects)} defect outcomes in {len(sample)} networks:\n" + "\n".join(defects)


def test_a_failure_is_reproduced_when_the_recorded_build_error_is_among_the_output():
    """The library reports other errors around the build's (calls made while the network was defined,
    the no-GPU Cuda Runtime reports) and not always in the same order: the build error our capture
    recorded must appear, the rest does not count."""
    step = object.__new__(steps.Step)
    step.rc, step.out = 1, ""
    step.err = (
        "[E] ITensor::getDimensions: Error Code 4: API Usage Error (shape)\n"
        "[E] IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (no output)\n"
        "[E] [checkMacros.cpp::catchCudaError::247] Error Code 1: Cuda Runtime (cudaError 35)\n"
    )
    assert step.build_error() == "Error Code 4: API Usage Error (no output)"
    checks = object.__new__(corpus_tools.ToolChecks)
    for recorded, outcome in (
        ("Error Code 4: API Usage Error (shape)", "failure-reproduced"),
        ("Error Code 4: API Usage Error (no output)", "failure-reproduced"),
        ("Error Code 2: Internal Error (Assertion failed)", "failure-differs"),
    ):
        checks._failure = recorded
        assert checks.judge_failure(step, "build.py")["outcome"] == outcome, recorded
    step.err += "Traceback (most recent call last):\nTypeError: add_concatenation(): incompatible function arguments\n"
    checks._failure = "Error Code 4: API Usage Error (no output)"
    assert checks.judge_failure(step, "build.py")["outcome"] == "failure-differs"


def test_an_engine_that_differs_is_judged_by_running_the_step_again(tmp_path):
    """A derived step's engine that differs while the app's second builds and the player's rebuilds
    agree (they happened to): the step is run again, and if it ever gives the app's engine the
    library built one of its several engines ("differs"); if it never does, a defect. The engines
    here are files the test writes: the classifier's judgement is what is tested."""
    app = tmp_path / "app.engine"
    app.write_bytes(b"the app's engine")
    first = tmp_path / "first.engine"
    first.write_bytes(b"another engine")
    net = object.__new__(rc.Network)
    net._confirmed = ""
    checks = object.__new__(corpus_tools.ToolChecks)
    checks.net, checks.work, checks._replay_varies = net, tmp_path, ""
    step = object.__new__(steps.Step)
    step.rc = 0

    def rerun_giving(contents):
        made = []

        def rerun(i):
            made.append(i)
            again = tmp_path / f"again{i}.engine"
            again.write_bytes(contents[i])
            return again

        return rerun, made

    rerun, made = rerun_giving([b"another engine", b"the app's engine", b"x"])
    got = checks.judge_engine(first, "build.py", step, rerun)
    assert got["outcome"] == "differs" and "run again (2 of" in got["reason"], got
    assert made == [0, 1]
    rerun, made = rerun_giving([b"another engine"] * corpus_tools.RERUNS)
    assert checks.judge_engine(first, "build.py", step, rerun)["outcome"] == "engine-differs"
    assert made == list(range(corpus_tools.RERUNS))
    assert checks.judge_engine(first, "build.py", step)["outcome"] == "engine-differs"


def test_the_players_finding_of_nondeterminism_is_kept_for_later_judges(tmp_path, monkeypatch):
    """The app's second builds agree but the player's rebuild differs: that finding is the
    network's, so a later judge asking without a trace (a tool's check) sees it too. The engines
    are files the test writes; the players and apps are stand-ins: the bookkeeping is tested."""
    net = object.__new__(rc.Network)
    net._confirmed, net.work = None, tmp_path
    (tmp_path / "app.engine").write_bytes(b"the app's engine")
    play = tmp_path / "play.engine"
    play.write_bytes(b"the player's engine")
    monkeypatch.setattr(net, "app", lambda engine, env=None, heap_shift=0: engine.write_bytes(b"the app's engine"))
    monkeypatch.setattr(net, "player", lambda trace, engine, *extra, env=None: engine.write_bytes(b"other"))
    first = net.confirm_nondeterminism(tmp_path / "ours.trtrace", play)
    assert first and first.startswith("player run again"), first
    assert net.confirm_nondeterminism() == first
