"""The corpus runner's child processes and how a failed one is named (run_corpus.py, corpus_tools.py)."""

import errno
import os
import pathlib
import re
import signal
import subprocess
import time

LAUNCH_TRIES = 5
REASON_CHARS = 600  # a reason quotes this much of a tool's message (a player's can run to pages)  # attempts to start a program that cannot be executed for a moment (Step.start)
# The library's own words for a failed build, as its logger prints them in the app, the player and an
# exported build.py alike ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (...)").
BUILD_ERROR = re.compile(r"Error Code \d+: [^\n]*")
# The library's reports that this machine has no usable GPU (it builds on the CPU): they follow other
# errors in every process alike, so they say nothing about how a build failed.
NOISE = re.compile(r"Error Code \d+: Cuda Runtime")


class Step:
    """One child process: rc (negative: killed by that signal; None: timed out), output, seconds."""

    def __init__(self, cmd, env=None, timeout=300):
        t0 = time.monotonic()
        full = dict(os.environ)
        full.update(env or {})
        p = self.start(cmd, full)
        try:
            self.out, self.err = p.communicate(timeout=timeout)
            self.rc = p.returncode
        except subprocess.TimeoutExpired:
            Step.end(p)
            self.rc, self.out, self.err = None, "", f"timed out after {timeout} s"
        self.seconds = time.monotonic() - t0
        self.cmd = cmd

    @staticmethod
    def end(p, grace=30):
        """A step past its time: SIGTERM to its group first, so that a tool that runs children in
        groups of their own (trtrace reduce's candidate players) ends them and removes its temporary
        files; SIGKILL after `grace` seconds."""
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()

    @staticmethod
    def start(cmd, env, tries=LAUNCH_TRIES):
        """The child, in its own process group, so a timeout also ends what it started (`end`). A
        program being relinked in a shared build tree cannot be executed for a moment (EACCES,
        ETXTBSY, ENOENT, ENOEXEC): that is tried again, a few seconds apart, before it counts."""
        for attempt in range(tries):
            try:
                return subprocess.Popen(
                    [str(c) for c in cmd],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    errors="replace",
                    env=env,
                    start_new_session=True,
                )
            except OSError as e:
                if attempt + 1 == tries or e.errno not in (errno.EACCES, errno.ETXTBSY, errno.ENOENT, errno.ENOEXEC):
                    raise
                time.sleep(3)

    def first_error(self):
        lines = [l.strip() for l in self.err.splitlines() if l.strip()]
        for prefix in ("tensorrt_player:", "trtrace:", "Traceback", "parse error:"):
            for l in lines:
                if l.startswith(prefix):
                    return lines[-1] if prefix == "Traceback" else l
        return lines[0] if lines else f"exit {self.rc}, nothing on stderr"

    def crashed(self):
        return self.rc is None or self.rc < 0

    def build_error(self):
        """The library's last error message (the failed build's own: errors of calls made while the
        network was defined come before it), else None."""
        found = [m for m in BUILD_ERROR.findall(self.err) or BUILD_ERROR.findall(self.out) if not NOISE.search(m)]
        return found[-1].strip() if found else None


def read(path):
    try:
        return pathlib.Path(path).read_bytes()
    except OSError:
        return None


def defect(name, step, what=""):
    """A defect outcome from a failed step (timeout and crash are named as such)."""
    if step.rc is None:
        return {"outcome": "timeout", "reason": f"{what or name}: {step.first_error()}"}
    if step.rc < 0:
        return {"outcome": "crash", "reason": f"{what or name}: killed by signal {-step.rc}; {step.first_error()}"}
    return {"outcome": name, "reason": f"exit {step.rc}: {step.first_error()[:REASON_CHARS]}"}
