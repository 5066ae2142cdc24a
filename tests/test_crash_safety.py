"""Crash safety of the capture (issue #9, deliverable 2), on the real TensorRT-RTX library.

The application is killed with SIGKILL at exact call numbers drawn from a seeded RNG, by the
shim's test fault injector TRTRACE_FAULT_KILL_AT_CALL=N (capture/faults.cpp: SIGKILL when call N
starts being recorded). For each kill point and each flush policy:
  * `trtrace verify` exits 3 (truncated) and says the calls it holds are a clean prefix;
  * the trace holds exactly the calls the policy promises: FLUSH_AFTER_EVERY_CALL every call
    before N, FLUSH_ON_BUILD every call up to the last build before N, neither none at all --
    compared line by line with `trtrace dump` of a complete capture of the same app. Beyond the
    promise, the call log's thread may also have written every call up to a build or a network's
    deletion before N (the app does not wait for it: docs/design.md, "Capture cost"), and nothing
    else;
  * tensorrt_player replays that prefix (exit 0, every call dispatched) and writes an engine only
    for a build in the prefix, byte-identical to the app's.
abort() and an unhandled C++ exception (std::terminate) flush every call through the shim's
signal handler, without any flush flag.
"""

import json
import os
import random
import re
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import PLAYER, SHIM, cpp_app, drop_in_dir, run_app, trt_lib, trtrace

SEED = int(os.environ.get("TRTRACE_KILL_SEED", "20240909"))
POLICIES = {
    "none": {},
    "every_call": {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL": "1"},
    "on_build": {"TRT_SHIM_FLUSH_ON_BUILD": "1"},
}
CPP_POINTS_PER_POLICY = 36  # the native app: 38 calls (2 networks, a builder each)
PY_POINTS_PER_POLICY = 4  # the Python app: same checks through the Python bindings
BUILD = "Builder::buildSerializedNetwork"


def calls_of(trace):
    """`trtrace dump` lines without the thread id (the only field that differs between runs).
    A killed capture may end inside a block (a blob worker was writing): dump prints the complete
    prefix and exits 3 (truncated); anything else is a failure."""
    proc = trtrace("dump", trace, check=False)
    assert proc.returncode in (0, 3), f"dump exit {proc.returncode}: {proc.stderr}"
    out = proc.stdout
    return [re.sub(r" t=\d+ ", " ", line) for line in out.splitlines()]


def expected_count(policy, reference, n):
    """How many calls a capture killed when call n starts must hold under `policy`."""
    if policy == "every_call":
        return n
    if policy == "on_build":
        builds = [i for i, line in enumerate(reference[:n]) if BUILD in line]
        return builds[-1] + 1 if builds else 0
    return 0


def behind_points(reference):
    """The call counts at which the call log's thread writes the open segment without the app
    waiting: after each build and each network's deletion."""
    return {i + 1 for i, line in enumerate(reference) if BUILD in line or "NetworkDefinition::~(" in line}


def check_killed(workdir, policy, n, reference, app_engines, run):
    """Kills the app at call n, then checks the trace, verify and the player. Returns a summary."""
    d = workdir / f"{policy}_{n}"
    d.mkdir()
    trace = d / "k.trtrace"
    proc = run(trace, d, dict(POLICIES[policy], TRTRACE_FAULT_KILL_AT_CALL=str(n)))
    assert proc.returncode == -signal.SIGKILL, f"{policy} kill at {n}: exit {proc.returncode}\n{proc.stderr}"
    want = expected_count(policy, reference, n)

    v = trtrace("verify", trace, check=False)
    assert v.returncode == 3, f"{policy} kill at {n}: verify exit {v.returncode}\n{v.stdout}{v.stderr}"
    held = re.search(r", (\d+) calls,", v.stdout)
    assert "TRUNCATED" in v.stdout and held, v.stdout
    got = int(held.group(1))
    assert got == want or (want < got <= n and got in behind_points(reference)), f"{policy} kill at {n}: {v.stdout}"
    want = got
    assert "TRUNCATED (a clean prefix)" in v.stdout and "corrupt" not in v.stderr, v.stderr

    assert calls_of(trace) == reference[:want], f"{policy} kill at {n}: the trace is not the first {want} calls"

    out = d / "replay.engine"
    p = PLAYER_RUN(trace, out)
    if want == 0:  # nothing to replay is an error (docs/errors.md, no_calls): one line, no engine
        assert p.returncode == 1, f"{policy} kill at {n}: player exit {p.returncode}\n{p.stdout}{p.stderr}"
        assert p.stderr.count("\n") == 1 and "(nothing to replay)" in p.stderr, p.stderr
        assert not [f for f in d.iterdir() if f.name.startswith("replay.engine")]
        return want, 0
    builds = sum(BUILD in line for line in reference[:want])
    # A prefix without a build replays, and -o gets nothing: said in one more line, exit 6.
    assert p.returncode == (0 if builds else 6), (
        f"{policy} kill at {n}: player exit {p.returncode}\n{p.stdout}{p.stderr}"
    )
    assert p.stderr.count("\n") <= 2 and "warning:" in p.stderr, p.stderr  # one line says it is a prefix
    assert ("nothing written to" in p.stderr) == (builds == 0), p.stderr
    summary = json.loads(p.stdout)
    assert summary["calls"] == want
    written = sorted(f.name for f in d.iterdir() if f.name.startswith("replay.engine"))
    assert len(summary["networks"]) == builds
    if builds == 0:
        assert written == []
    else:
        names = ["replay.engine"] if builds == 1 else [f"replay.engine{i}" for i in range(builds)]
        assert written == names
        for name, ref in zip(names, app_engines):
            assert (d / name).read_bytes() == ref.read_bytes(), f"{policy} kill at {n}: {name} differs"
    return want, builds


def PLAYER_RUN(trace, out):
    import subprocess

    return subprocess.run(
        [str(PLAYER), "-j", str(trace), "-o", str(out), "--lib", str(trt_lib()), "--json", "-q"],
        capture_output=True,
        text=True,
    )


def kill_points(rng, count, k):
    return sorted(rng.sample(range(count), min(k, count)))


def run_cases(cases):
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda c: check_killed(*c), cases))


def test_sigkill_at_random_calls_native_app(tmp):
    lib, env = drop_in_dir(tmp)
    ref = cpp_app(tmp / "ref.engine", "--networks", 2, env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "ref.trtrace")))
    assert ref.returncode == 0, ref.stderr
    reference = calls_of(tmp / "ref.trtrace")
    assert len(reference) == 38 and sum(BUILD in x for x in reference) == 2
    engines = [tmp / "ref.engine0", tmp / "ref.engine1"]

    def run(trace, d, extra):
        return cpp_app(d / "app.engine", "--networks", 2, env=dict(env, TRT_SHIM_OUTPUT_FILE=str(trace), **extra))

    rng = random.Random(SEED)
    cases = [
        (tmp, policy, n, reference, engines, run)
        for policy in POLICIES
        for n in kill_points(rng, len(reference), CPP_POINTS_PER_POLICY)
    ]
    results = run_cases(cases)
    assert len(results) >= 100
    # The draw reaches the interesting places: no build, one build, both builds flushed.
    assert {b for (_, b) in results} == {0, 1, 2}


def test_sigkill_at_random_calls_python_app(tmp):
    ref_trace = tmp / "ref.trtrace"
    run_app(
        "build_cnn.py",
        "--out",
        tmp / "ref",
        "--networks",
        2,
        env={"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(ref_trace)},
    )
    reference = calls_of(ref_trace)
    engines = [tmp / "ref0", tmp / "ref1"]

    def run(trace, d, extra):
        env = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(trace), **extra}
        return run_app("build_cnn.py", "--out", d / "app", "--networks", 2, env=env, check=False)

    rng = random.Random(SEED + 1)
    cases = [
        (tmp, policy, n, reference, engines, run)
        for policy in POLICIES
        for n in kill_points(rng, len(reference), PY_POINTS_PER_POLICY)
    ]
    run_cases(cases)


@pytest.mark.parametrize("how", ["abort", "throw"])
@pytest.mark.parametrize("policy", ["none", "on_build"])
def test_abort_and_unhandled_exception_still_flush(tmp, how, policy):
    lib, env = drop_in_dir(tmp)
    ref = cpp_app(tmp / "ref.engine", "--networks", 2, env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "ref.trtrace")))
    assert ref.returncode == 0, ref.stderr
    reference = calls_of(tmp / "ref.trtrace")
    # --<how>-at 1: dies once network 0 is built, with network 1 populated (before its config).
    trace = tmp / "d.trtrace"
    proc = cpp_app(
        tmp / "app.engine",
        "--networks",
        2,
        f"--{how}-at",
        1,
        env=dict(env, TRT_SHIM_OUTPUT_FILE=str(trace), **POLICIES[policy]),
    )
    assert proc.returncode == -signal.SIGABRT, proc.stderr
    if how == "throw":
        assert "exception thrown on purpose" in proc.stderr  # std::terminate's own message
    configs = [i for i, line in enumerate(reference) if "Builder::createBuilderConfig" in line]
    want = configs[1]  # every call before network 1's config
    v = trtrace("verify", trace, check=False)
    assert v.returncode == 3 and f", {want} calls," in v.stdout, v.stdout + v.stderr
    assert calls_of(trace) == reference[:want]
    p = PLAYER_RUN(trace, tmp / "replay.engine")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["calls"] == want
    assert (tmp / "replay.engine").read_bytes() == (tmp / "ref.engine0").read_bytes()


def test_fault_injector_is_inert_when_unset_or_past_the_end(tmp):
    lib, env = drop_in_dir(tmp)
    proc = cpp_app(
        tmp / "a.engine",
        env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "a.trtrace"), TRTRACE_FAULT_KILL_AT_CALL="100000"),
    )
    assert proc.returncode == 0, proc.stderr
    assert trtrace("verify", tmp / "a.trtrace").returncode == 0
