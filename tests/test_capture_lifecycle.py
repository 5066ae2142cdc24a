"""Capture never loses a process's build (issue 23, classes 5 and 6): however a process ends (exec,
os._exit in multiprocessing workers) and however processes follow one another under one output name
(a driver running build scripts in turn, a parent building after its child exited), every build the
app made is in a trace written, and no trace is overwritten or emptied: a reader mapping a trace
while a later capture of the same name runs keeps its bytes. Each test counts the builds in the
traces written (trtrace info) against the builds the app made (tests/apps/capture_lifecycle.py).
"""

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import APPS, ROOT, SHIM, TRTRACE, no_fork_under_asan, play, run_app, trtrace

APP = "capture_lifecycle.py"


def run(tmp, *args, name="x.trtrace", env=None):
    e = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(tmp / name)}
    e.update(env or {})
    return run_app(APP, *args, env=e, cwd=tmp)


def traces(tmp, name="x.trtrace"):
    """The traces written under `name`: the name itself, <name>.<pid> and <name>.<pid>.<n>."""
    pat = re.compile(re.escape(name) + r"(\.\d+){0,2}")
    return sorted(p for p in tmp.iterdir() if pat.fullmatch(p.name))


def info(trace):
    proc = trtrace("info", "--json", trace, check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else {"closed": False, "builds_ok": 0}


def builds(tmp, name="x.trtrace"):
    """Builds in each trace written, by file name; every one of them closed."""
    found = {p.name: info(p) for p in traces(tmp, name)}
    assert all(s["closed"] for s in found.values()), found
    return {n: s["builds_ok"] for n, s in found.items()}


@pytest.mark.parametrize("how", ["execv", "execve"])
def test_a_process_that_execs_after_building_keeps_its_build(tmp, how):
    """The trace is closed before the exec replaces the process (the new image writes no trace of
    its own: it makes no library call)."""
    run(tmp, "exec", "--how", how)
    assert builds(tmp) == {"x.trtrace": 1}


def test_a_process_that_leaves_with_os_exit_keeps_its_build(tmp):
    run(tmp, "exit")
    assert builds(tmp) == {"x.trtrace": 1}


@no_fork_under_asan
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_multiprocessing_workers_each_keep_their_build(tmp, method):
    """Two workers, one build each; fork and forkserver workers end with os._exit. The parent makes
    no build; each worker's trace holds its own."""
    run(tmp, "workers", "--method", method, "--n", 2)
    got = builds(tmp)
    assert sum(got.values()) == 2 and sorted(got.values())[-1] == 1, got


def test_build_scripts_run_one_after_another_each_keep_their_trace(tmp):
    """A driver runs three build scripts in turn with one TRT_SHIM_OUTPUT_FILE: the first keeps the
    name, each later one writes <name>.<pid> and says so in one line; the shim's closing line of
    each names the trace it wrote."""
    proc = run(tmp, "driver", "--n", 3)
    got = builds(tmp)
    assert sorted(got.values()) == [1, 1, 1] and "x.trtrace" in got, got
    for name in got:
        assert f"-> {tmp / name}\n" in proc.stderr, proc.stderr
    for name in got.keys() - {"x.trtrace"}:
        assert f"trtrace: {tmp / 'x.trtrace'} exists (kept); this process writes {tmp / name}\n" in proc.stderr
        assert name == f"x.trtrace.{info(tmp / name)['pid']}"


@no_fork_under_asan
def test_a_parent_building_after_its_child_exited_keeps_the_childs_trace(tmp):
    run(tmp, "parent-after-child")
    got = builds(tmp)
    assert sorted(got.values()) == [1, 1], got


@no_fork_under_asan
def test_a_subprocess_between_builds_does_not_end_the_parents_trace(tmp):
    """subprocess.run starts /bin/true from a vfork child that shares the parent's memory and calls
    execve: the exec hook must leave the parent's capture alone."""
    run(tmp, "subprocess")
    assert builds(tmp) == {"x.trtrace": 2}


def test_a_pid_name_already_taken_gets_a_numbered_one(tmp):
    """<name> and every <name>.<pid> the next process could take exist: it writes <name>.<pid>.<n>.
    The pid is not known before the process starts, so the test takes all the names a driver's
    children could get: a wrapper shell takes the name, and its child (the app) inherits nothing."""
    (tmp / "x.trtrace").write_bytes(b"kept")
    script = f'touch "{tmp}/x.trtrace.$$"; exec "{sys.executable}" "{APPS / APP}" build'
    env = dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(tmp / "x.trtrace"))
    proc = subprocess.run(["/bin/sh", "-c", script], env=env, cwd=tmp, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp / "x.trtrace").read_bytes() == b"kept"
    numbered = [p for p in traces(tmp) if p.name.count(".") == 3]
    assert len(numbered) == 1 and numbered[0].name.endswith(".2"), [p.name for p in traces(tmp)]
    assert info(numbered[0])["builds_ok"] == 1


def test_json_outputs_of_an_earlier_run_are_kept(tmp):
    """TRT_SHIM_OUTPUT_JSON_FILE twice: the second run writes cap.<pid>.json + .bin (and its trace
    cap.trtrace.<pid>); the first run's JSON+BIN still replays."""
    env = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_JSON_FILE": str(tmp / "cap.json")}
    run_app(APP, "build", "--variant", 0, env=env, cwd=tmp)
    first = {n: (tmp / n).read_bytes() for n in ("cap.json", "cap.bin", "cap.trtrace")}
    proc = run_app(APP, "build", "--variant", 1, env=env, cwd=tmp)
    assert {n: (tmp / n).read_bytes() for n in first} == first
    second = info(next(p for p in traces(tmp, "cap.trtrace") if p.name != "cap.trtrace"))
    assert second["builds_ok"] == 1
    assert (tmp / f"cap.{second['pid']}.json").exists() and (tmp / f"cap.{second['pid']}.bin").exists()
    assert f"cap.{second['pid']}.json" in proc.stderr
    play(tmp / "cap.json", tmp / "first.engine")


HOLDER = r"""
import hashlib, mmap, sys
sys.path.insert(0, sys.argv[2])
import trtrace
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
t = trtrace.open(sys.argv[1])
before = (hashlib.sha256(m).hexdigest(), len(t.builds))
print("ready", flush=True)
sys.stdin.readline()
print(before == (hashlib.sha256(m).hexdigest(), len(t.builds)), flush=True)
"""


def test_recapturing_under_a_name_being_read_leaves_the_reader_alone(tmp):
    """A reader maps x.trtrace (mmap and the Python API's views) while another capture of the same
    name runs: the reader sees the same bytes after it (no SIGBUS), the file is unchanged, and the
    new capture is in a trace of its own."""
    run(tmp, "build")
    original = (tmp / "x.trtrace").read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp / "x.trtrace"), str(ROOT / "python")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PATH=f"{TRTRACE.parent}:{os.environ['PATH']}"),
    )
    assert holder.stdout.readline() == "ready\n"
    run(tmp, "build", "--variant", 1)
    out, _ = holder.communicate("go\n")
    assert holder.returncode == 0 and out == "True\n", (holder.returncode, out)
    assert hashlib.sha256((tmp / "x.trtrace").read_bytes()).digest() == hashlib.sha256(original).digest()
    assert sorted(builds(tmp).values()) == [1, 1]


def test_trtrace_capture_names_every_trace_written(tmp):
    """trtrace capture of a driver running three build scripts, with OUT existing already: OUT is
    kept, and the summary has one line per trace the run wrote, each with its builds."""
    (tmp / "c.trtrace").write_bytes(b"an earlier capture")
    proc = subprocess.run(
        [
            str(TRTRACE),
            "capture",
            "-o",
            str(tmp / "c.trtrace"),
            "--",
            sys.executable,
            str(APPS / APP),
            "driver",
            "--n",
            "3",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp / "c.trtrace").read_bytes() == b"an earlier capture"
    written = [p for p in traces(tmp, "c.trtrace") if p.name != "c.trtrace"]
    assert len(written) == 3
    for p in written:
        assert info(p)["builds_ok"] == 1
        assert re.search(rf"^trtrace: capture: {re.escape(str(p))}: .*1 build", proc.stderr, re.M), proc.stderr
