"""Capture off the application's clock (issue 27; docs/design.md, "Finishing off the application's
clock"): weights still queued when the application waits for them (a build, a network's deletion,
its exit) are written by a forked finisher while the application goes on or exits.

Every test sets TRTRACE_FINISHER_MB=0 (any queued weight goes to a finisher: the small real
networks here queue well under the default 256 MiB) and most make the finisher sleep before it
writes (TRTRACE_FAULT_FINISHER_STALL_MS, a test hook: the race between the application's exit and
the finisher, made certain), so that what a tool does while a finisher runs is what is tested.
A finisher is a fork, so these run in the normal build only (conftest.no_fork_under_asan; the
ASan build of the shim finishes synchronously).
"""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import APPS, PLAYER, SHIM, TRTRACE, assert_same_engines, no_fork_under_asan, trt_lib

pytestmark = no_fork_under_asan

APP = APPS / "capture_lifecycle.py"
STALL = "2000"  # ms: long enough that the application has surely exited before the finisher writes


def env_for(trace, **extra):
    e = dict(os.environ)
    e.update({"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(trace), "TRTRACE_FINISHER_MB": "0"})
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run_app(tmp, *args, trace=None, **extra):
    """The app under the shim, directly (not through trtrace capture, which waits); returns it done."""
    trace = trace or tmp / "x.trtrace"
    proc = subprocess.run(
        [sys.executable, str(APP), *args], capture_output=True, text=True, env=env_for(trace, **extra), cwd=tmp
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def finisher_pids(stderr):
    return [int(p) for p in re.findall(r"being finished by pid (\d+)", stderr)]


def tool(*args, **kw):
    return subprocess.run([str(TRTRACE), *map(str, args)], capture_output=True, text=True, timeout=120, **kw)


def marker(trace):
    return trace.with_name(trace.name + ".finishing")


def replay(trace, engine):
    """tensorrt_player on `trace` writing `engine` (it waits for a finisher); returns it done."""
    played = subprocess.run(
        [str(PLAYER), "-j", str(trace), "-o", str(engine), "--lib", str(trt_lib())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert played.returncode == 0, played.stderr
    return played


def test_the_app_exits_before_its_finisher_and_the_player_waits(tmp):
    """The app leaves while its finisher still writes; the summary line names the finisher; a tool
    given --no-wait refuses with its documented code; the player, run at once, waits (one line) and
    rebuilds the app's engine from the complete trace."""
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "build", TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    assert finisher_pids(app.stderr), app.stderr
    assert marker(trace).exists()
    busy = tool("verify", "--no-wait", trace)
    assert busy.returncode == 6 and "still being finished by pid" in busy.stderr, busy.stderr
    player = subprocess.run(
        [str(PLAYER), "--no-wait", "-j", str(trace), "--lib", str(trt_lib())], capture_output=True, text=True
    )
    assert player.returncode == 7, player.stderr
    played = replay(trace, tmp / "replayed.engine")
    assert "waiting for it" in played.stderr
    assert not marker(trace).exists()
    assert tool("verify", "--no-wait", trace).returncode == 0
    assert "identical to capture" in played.stdout + played.stderr


def test_trtrace_capture_waits_for_the_finisher_unless_told_not_to(tmp):
    e = env_for(tmp / "unused", TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    del e["LD_PRELOAD"], e["TRT_SHIM_OUTPUT_FILE"]

    def capture(trace, *options):
        cap = subprocess.run(
            [str(TRTRACE), "capture", *options, "-o", str(trace), "--", sys.executable, str(APP), "build"],
            capture_output=True,
            text=True,
            env=e,
            cwd=tmp,
            timeout=300,
        )
        assert cap.returncode == 0, cap.stderr
        return cap

    cap = capture(tmp / "x.trtrace")
    assert not marker(tmp / "x.trtrace").exists(), cap.stderr
    assert tool("verify", "--no-wait", tmp / "x.trtrace").returncode == 0, cap.stderr
    assert "1 builds (1 ok)" in cap.stderr
    cap = capture(tmp / "y.trtrace", "--no-wait")
    assert "still being finished by pid" in cap.stderr
    assert tool("verify", tmp / "y.trtrace").returncode == 0  # waits


def kill_finishers(trace, stderr):
    pids = set(finisher_pids(stderr))
    pids |= {int(p) for p in re.findall(r"finisher pid (\d+)", marker(trace).read_text())}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _alive(pid):
    try:
        os.kill(pid, 0)
        return not open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_killed_finisher_leaves_a_clean_prefix_and_says_so(tmp):
    """A finisher killed before it wrote: the trace is never marked complete, reads as a clean
    prefix (verify: truncated, exit 3), and every tool run says why, once, from the marker."""
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "build", TRTRACE_FAULT_FINISHER_STALL_MS="60000")
    kill_finishers(trace, app.stderr)
    v = tool("verify", trace)
    assert v.returncode == 3, v.stdout + v.stderr
    assert "ended without completing it" in v.stderr
    i = tool("info", trace)
    assert i.returncode == 0 and "not closed" in i.stdout, i.stderr
    assert marker(trace).exists()  # the log stays for the next tool run


def test_a_finisher_that_cannot_write_logs_why(tmp):
    """The finisher's write fails (a full disk, injected: TRTRACE_FAULT_FINISHER_FAIL): the trace
    stays a clean prefix and the failure is the line every tool reports."""
    trace = tmp / "x.trtrace"
    run_app(tmp, "build", TRTRACE_FAULT_FINISHER_FAIL=1)
    v = tool("verify", trace)
    assert v.returncode == 3, v.stdout + v.stderr
    assert "its finisher failed" in v.stderr and "No space left on device" in v.stderr, v.stderr


def test_flush_settings_stay_synchronous(tmp):
    """TRT_SHIM_FLUSH_ON_BUILD keeps its crash-safety meaning: no finisher, the trace complete when
    the application has exited."""
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "build", TRT_SHIM_FLUSH_ON_BUILD=1, TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    assert not finisher_pids(app.stderr) and not marker(trace).exists(), app.stderr
    assert tool("verify", "--no-wait", trace).returncode == 0


def test_finisher_off_is_synchronous(tmp):
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "build", TRTRACE_FINISHER=0, TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    assert not finisher_pids(app.stderr) and not marker(trace).exists(), app.stderr
    assert tool("verify", "--no-wait", trace).returncode == 0


@pytest.mark.parametrize("how", ["execv", "execve"])
def test_an_exec_hands_the_trace_to_a_finisher(tmp, how):
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "exec", "--how", how, TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    assert finisher_pids(app.stderr), app.stderr
    v = tool("verify", trace)
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_fork_after_a_handoff_does_not_hold_the_trace(tmp):
    """The application forks once a finisher runs, and its child lives on: tools wait for the
    finisher only (the child closed the parent's finisher descriptors), and the child writes no trace."""
    trace = tmp / "x.trtrace"
    app = run_app(tmp, "fork-after-build", "--sleep", "60", TRTRACE_FAULT_FINISHER_STALL_MS="500")
    assert finisher_pids(app.stderr), app.stderr
    v = tool("verify", trace)  # a hang here would be the child holding the marker (timeout: 120 s)
    assert v.returncode == 0, v.stdout + v.stderr
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("x.trtrace")) == ["x.trtrace"]
    subprocess.run(["pkill", "-f", f"{APP} fork-after-build"], check=False)


def test_the_replayed_engine_is_the_apps(tmp):
    """Nothing is lost on the way: the app's own engine and the player's, from a finished trace."""
    trace = tmp / "x.trtrace"
    e = env_for(trace, TRTRACE_FAULT_FINISHER_STALL_MS="300")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import capture_lifecycle as c, pathlib; "
        "import tensorrt_rtx as trt, numpy as np\n"
        "logger = trt.Logger(trt.Logger.WARNING); b = trt.Builder(logger); n = b.create_network()\n"
        "x = n.add_input('in', trt.float32, (1, 2, 8, 8))\n"
        "k = np.random.default_rng(3).standard_normal((4, 2, 3, 3)).astype(np.float32)\n"
        "y = n.add_convolution_nd(x, 4, (3, 3), trt.Weights(k), trt.Weights(np.zeros(4, np.float32)))\n"
        "n.mark_output(y.get_output(0))\n"
        "pathlib.Path(sys.argv[2]).write_bytes(b.build_serialized_network(n, b.create_builder_config()))\n"
    )
    app_engine = tmp / "app.engine"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(APPS), str(app_engine)], capture_output=True, text=True, env=e, cwd=tmp
    )
    assert proc.returncode == 0, proc.stderr
    assert finisher_pids(proc.stderr), proc.stderr
    replay(trace, tmp / "replayed.engine")
    assert_same_engines([tmp / "replayed.engine"], [app_engine])


# A small real network built, then `after` (Python) run before the app exits.
BUILD_THEN = (
    "import os, sys, time, numpy as np, tensorrt_rtx as trt\n"
    "b = trt.Builder(trt.Logger(trt.Logger.WARNING)); n = b.create_network()\n"
    "x = n.add_input('in', trt.float32, (1, 2, 8, 8))\n"
    "k = np.random.default_rng(3).standard_normal((4, 2, 3, 3)).astype(np.float32)\n"
    "y = n.add_convolution_nd(x, 4, (3, 3), trt.Weights(k), trt.Weights(np.zeros(4, np.float32)))\n"
    "n.mark_output(y.get_output(0)); b.build_serialized_network(n, b.create_builder_config())\n"
)


def build_then(tmp, after, *args, **extra):
    proc = subprocess.run(
        [sys.executable, "-c", BUILD_THEN + after, *map(str, args)],
        capture_output=True,
        text=True,
        env=env_for("x.trtrace", **extra),
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_marker_lies_beside_the_trace_when_the_app_changed_folder(tmp):
    """A relative TRT_SHIM_OUTPUT_FILE, and an app that changes its working folder before it exits:
    the marker goes beside the trace (found from its descriptor), where tools look for it."""
    (tmp / "elsewhere").mkdir()
    proc = build_then(tmp, "os.chdir(sys.argv[1])\n", tmp / "elsewhere", TRTRACE_FAULT_FINISHER_STALL_MS=STALL)
    assert finisher_pids(proc.stderr), proc.stderr
    assert marker(tmp / "x.trtrace").exists() and not list((tmp / "elsewhere").iterdir())
    assert tool("verify", "--no-wait", tmp / "x.trtrace").returncode == 6
    v = tool("verify", tmp / "x.trtrace")
    assert v.returncode == 0 and "its finisher" not in v.stderr, v.stderr
    assert not marker(tmp / "x.trtrace").exists()


def test_a_finisher_done_before_the_app_exits_leaves_no_marker(tmp):
    """The finisher of a build's weights ends while the app goes on; the app then closes its trace
    itself and removes the marker: no tool waits for, or reports, a finisher afterwards."""
    proc = build_then(tmp, "time.sleep(3)\n")
    assert "being finished by pid" not in proc.stderr, proc.stderr  # closed by the app itself
    v = tool("verify", "--no-wait", tmp / "x.trtrace")
    assert v.returncode == 0 and "its finisher" not in v.stderr, v.stderr
    assert not marker(tmp / "x.trtrace").exists()
