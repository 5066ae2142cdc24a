#!/usr/bin/env python3
"""A real TensorRT-RTX client whose processes end or multiply in the ways a capture must survive.

Each mode builds small networks (one per build, each with its own builder: a builder made in one
process is never used in another) and ends as named; the capture tests count the builds in the
traces written (tests/test_capture_lifecycle.py). Modes:
  build               one build, a normal exit
  exec                one build, then os.execv/os.execve (--how) of a Python that does nothing
  exit                one build, then os._exit(0)
  workers             --n multiprocessing workers (--method fork|forkserver|spawn), one build each,
                      this process builds nothing; the workers end as multiprocessing ends them
  parent-after-child  fork before any library call; the child builds and exits normally, then the
                      parent builds
  subprocess          one build, subprocess.run of /bin/true (a vfork child that execs), a second
                      build, a normal exit
  driver              runs `build` --n times one after another, each a new process (same environment)
  fork-after-build    one build, then os.fork: the child sleeps --sleep seconds and leaves with
                      os._exit, the parent exits normally at once
"""

import argparse
import multiprocessing
import os
import subprocess
import sys
import time

import numpy as np
import tensorrt_rtx as trt


def build_one(variant):
    """Builds a small network (conv + relu, weights seeded by `variant`); True when it built."""
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    net = builder.create_network()
    x = net.add_input(f"in{variant}", trt.float32, (1, 2, 8, 8))
    k = np.random.default_rng(variant).standard_normal((4, 2, 3, 3)).astype(np.float32)
    conv = net.add_convolution_nd(x, 4, (3, 3), trt.Weights(k), trt.Weights(np.zeros(4, np.float32)))
    out = net.add_activation(conv.get_output(0), trt.ActivationType.RELU).get_output(0)
    out.name = f"out{variant}"
    net.mark_output(out)
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return engine is not None


def worker(variant):
    if not build_one(variant):
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "mode",
        choices=["build", "exec", "exit", "workers", "parent-after-child", "subprocess", "driver", "fork-after-build"],
    )
    ap.add_argument("--how", choices=["execv", "execve"], default="execv")
    ap.add_argument("--method", choices=["fork", "forkserver", "spawn"], default="fork")
    ap.add_argument("--n", type=int, default=2)
    ap.add_argument("--variant", type=int, default=0)
    ap.add_argument("--sleep", type=float, default=0)
    a = ap.parse_args()
    if a.mode == "workers":
        ctx = multiprocessing.get_context(a.method)
        procs = [ctx.Process(target=worker, args=(i,)) for i in range(a.n)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        return 0 if all(p.exitcode == 0 for p in procs) else 1
    if a.mode == "driver":
        for i in range(a.n):
            subprocess.run([sys.executable, __file__, "build", "--variant", str(i)], check=True)
        return 0
    if a.mode == "parent-after-child":
        pid = os.fork()
        if pid == 0:
            return 0 if build_one(1) else 1  # returns through main: a normal interpreter exit
        _, status = os.waitpid(pid, 0)
        return 0 if status == 0 and build_one(0) else 1
    if not build_one(a.variant):
        return 1
    sys.stdout.flush()
    if a.mode == "exec":
        argv = [sys.executable, "-c", "pass"]
        os.execv(sys.executable, argv) if a.how == "execv" else os.execve(sys.executable, argv, dict(os.environ))
    if a.mode == "exit":
        os._exit(0)
    if a.mode == "fork-after-build" and os.fork() == 0:
        time.sleep(a.sleep)
        os._exit(0)
    if a.mode == "subprocess":
        subprocess.run(["/bin/true"], check=True)
        return 0 if build_one(a.variant + 1) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
