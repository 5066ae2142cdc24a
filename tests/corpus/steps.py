"""The corpus runner's child processes and how a failed one is named (run_corpus.py, corpus_tools.py)."""
import os
import pathlib
import re
import subprocess
import time

# The library's own words for a failed build, as its logger prints them in the app, the player and an
# exported build.py alike ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (...)").
BUILD_ERROR = re.compile(r"Error Code \d+: [^\n]*")


class Step:
    """One child process: rc (negative: killed by that signal; None: timed out), output, seconds."""

    def __init__(self, cmd, env=None, timeout=300):
        t0 = time.monotonic()
        full = dict(os.environ)
        full.update(env or {})
        try:
            p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace",
                               env=full, timeout=timeout)
            self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            self.rc, self.out, self.err = None, "", f"timed out after {timeout} s"
        self.seconds = time.monotonic() - t0
        self.cmd = cmd

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
        found = BUILD_ERROR.findall(self.err) or BUILD_ERROR.findall(self.out)
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
    return {"outcome": name, "reason": f"exit {step.rc}: {step.first_error()}"}
