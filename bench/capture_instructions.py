#!/usr/bin/env python3
"""Instructions a capture costs, per thread, counted by valgrind's callgrind (BENCHMARKS.md).

On a 2-CPU VM whose speed swings between runs by more than a call-heavy capture costs, wall times
of two shims side by side (bench/capture_ab.py) cannot tell a change of a few percent from the
swing. Instruction counts can: they are the same run after run. This runs the model (the app
alone, then under each shim) once under callgrind with one profile per thread, and prints the
instructions of the application's thread, of the call log's thread, of the blob workers and of
every other thread, and the application's thread over the app alone. A count is not a time (cache
misses, page faults and the kernel are not in it); it is the part of the capture's cost that the
code decides.

    source build/env.sh && $TRTRACE_PYTHON bench/capture_instructions.py \\
        --shim old=OLD/libtensorrt_shim.so --shim new=build/lib/libtensorrt_shim.so \\
        -- --blocks 400 --hidden 32 --dtype fp32

Needs valgrind (Debian package). About a minute per mode for calls-20k.
"""

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / "bench" / "models" / "transformer.py"
ROLES = (("log", "CallLog::backgroundLoop"), ("blob workers", "BlobStore::workerLoop"))


def thread_role(profile):
    """The role of one thread's profile: the loop its instructions run under, else "other"."""
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--inclusive=yes", "--threshold=100", str(profile)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    total = summary(profile)
    for role, loop in ROLES:
        for line in out.splitlines():
            m = re.match(r"^\s*([\d,]+)\s", line)
            if m and loop in line and int(m.group(1).replace(",", "")) * 2 > total:
                return role
    return "other"


def summary(profile):
    for line in pathlib.Path(profile).read_text(errors="replace").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"{profile}: no summary line (did callgrind finish?)")


def measure(name, shim, extra_env, model_args, work):
    """Runs the model once under callgrind; returns {role: instructions} (role "app": its thread)."""
    out = work / name
    out.mkdir()
    env = dict(os.environ)
    if shim:
        env.update(LD_PRELOAD=shim, TRT_SHIM_OUTPUT_FILE=str(out / "t.trtrace"), **extra_env)
    cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}/cg.%p"]
    cmd += [sys.executable, str(MODEL), "--no-build", *model_args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{name}: the model under callgrind exited {p.returncode}: {p.stderr[-2000:]}")
    counts = {"app": 0, "log": 0, "blob workers": 0, "other": 0}
    for profile in sorted(out.glob("cg.*-*")):
        role = "app" if profile.name.endswith("-01") else thread_role(profile)
        counts[role] += summary(profile)
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shim", action="append", default=[], metavar="NAME=PATH", help="a shim to count (repeat)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME:K=V", help="a setting for one mode")
    ap.add_argument("model_args", nargs="*")
    a = ap.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        sys.exit("capture_instructions: valgrind is not installed (Debian package valgrind)")
    modes = [("alone", None)] + [tuple(s.split("=", 1)) for s in a.shim]
    envs = {}
    for e in a.env:
        name, kv = e.split(":", 1)
        k, v = kv.split("=", 1)
        envs.setdefault(name, {})[k] = v
    with tempfile.TemporaryDirectory(prefix="capture-instructions-") as tmp:
        rows = [(n, measure(n, s, envs.get(n, {}), a.model_args, pathlib.Path(tmp))) for n, s in modes]
    alone = rows[0][1]["app"]
    print(
        f"{'mode':10s} {'app thread':>14s} {'over alone':>12s} {'log thread':>12s} {'blob workers':>13s} {'other':>12s}"
    )
    for name, c in rows:
        over = f"+{(c['app'] - alone) / 1e6:.1f}M" if name != "alone" else ""
        print(
            f"{name:10s} {c['app'] / 1e6:13.1f}M {over:>12s} {c['log'] / 1e6:11.1f}M "
            f"{c['blob workers'] / 1e6:12.1f}M {c['other'] / 1e6:11.1f}M"
        )


if __name__ == "__main__":
    main()
