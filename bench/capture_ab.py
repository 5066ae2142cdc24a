#!/usr/bin/env python3
"""Two capture shims side by side on one model (BENCHMARKS.md, the call-heavy models): the app alone,
then under each shim, interleaved run by run so that the VM's drift touches all alike.

    source build/env.sh
    $TRTRACE_PYTHON bench/capture_ab.py --shim new=build/lib/libtensorrt_shim.so \\
        --shim old=../old/build/lib/libtensorrt_shim.so --runs 15 -- --blocks 400 --hidden 32 --dtype fp32

Prints, per mode, the medians of wall - gen_s (the model's own weight generation, the same work in
every mode), its ratio to the app alone, the network construction thread's CPU time
(`network_cpu_s`), the time outside the network's construction (wall - gen_s - `network_s`: the
process's start and exit, the trace's close), and the time the app's thread spent off the CPU while
it constructed the network (`network_s` - `network_cpu_s`: waits on a lock, preemption).
`--env NAME:K=V` sets K=V for one mode's runs only (the same shim twice, with and without a
setting). Arguments after `--` go to bench/models/transformer.py (`--no-build` is added).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "transformer.py")


def run(python, model_args, shim, trace, extra):
    env = dict(os.environ)
    if shim:
        env.update({"LD_PRELOAD": shim, "TRT_SHIM_OUTPUT_FILE": trace})
    env.update(extra)  # a mode's own settings win, the output file too
    t0 = time.perf_counter()
    p = subprocess.run([python, MODEL, *model_args, "--no-build"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"capture_ab: the model exited {p.returncode}: {p.stderr.strip()[-500:]}")
    app = json.loads([line for line in p.stdout.splitlines() if line.startswith("{")][-1])
    # This run's finisher and dirty pages are not the next run's cost (bench/e2e.py does the same).
    while os.path.exists(trace + ".finishing"):
        time.sleep(0.005)
    os.sync()
    for name in os.listdir(os.path.dirname(trace)):
        os.unlink(os.path.join(os.path.dirname(trace), name))
    return (
        wall - app["gen_s"],
        app["network_cpu_s"],
        wall - app["gen_s"] - app["network_s"],
        app["network_s"] - app["network_cpu_s"],
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shim", action="append", default=[], metavar="NAME=PATH", help="a shim to compare (repeat)")
    ap.add_argument(
        "--env", action="append", default=[], metavar="NAME:K=V", help="a setting for one mode's runs (repeat)"
    )
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("model_args", nargs="*")
    a = ap.parse_args()
    modes = [("alone", "")] + [tuple(s.split("=", 1)) for s in a.shim]
    extra = {m: {} for m, _ in modes}
    for e in a.env:
        mode, kv = e.split(":", 1)
        if mode not in extra or "=" not in kv:
            sys.exit(f"capture_ab: --env {e}: want NAME:K=V with NAME one of {', '.join(extra)}")
        extra[mode].update([kv.split("=", 1)])
    own, cpu, rest, off = ({m: [] for m, _ in modes} for _ in range(4))
    with tempfile.TemporaryDirectory() as work:
        for _ in range(a.runs):
            for name, shim in modes:
                o, c, r, w = run(
                    sys.executable,
                    a.model_args,
                    os.path.abspath(shim) if shim else "",
                    f"{work}/t.trtrace",
                    extra[name],
                )
                own[name].append(o)
                cpu[name].append(c)
                rest[name].append(r)
                off[name].append(w)
    alone = statistics.median(own["alone"])
    for name, _ in modes:
        m = statistics.median(own[name])
        print(
            f"{name:8s} wall - gen_s {m * 1e3:7.1f} ms  {m / alone:.3f}x alone  "
            f"network_cpu_s {statistics.median(cpu[name]) * 1e3:6.1f} ms  "
            f"outside the network's construction {statistics.median(rest[name]) * 1e3:6.1f} ms  "
            f"off-CPU while constructing {statistics.median(off[name]) * 1e3:5.2f} ms"
        )


if __name__ == "__main__":
    main()
