#!/usr/bin/env python3
"""A real `tensorrt_rtx` app whose weights are mmapped from a file, possibly larger than RAM
(issue 16, "bigger than RAM"): the network is a chain of matrix multiplies by [N, N] fp32
constants, each a view into the mapped file (nothing copied), constructed without an engine build.

--make: writes the weights file first, chunk by chunk (--gib GiB of distinct fp32 values, N(0, 0.02)
scaled per chunk so that no two chunks dedup), with progress (bytes, rate, ETA) on stderr.
Prints one JSON line on stdout: weight bytes, constants, seconds for the network construction.
"""

import argparse
import json
import os
import sys
import time

import numpy as np


def make_file(path, nbytes, chunk):
    """nbytes of distinct fp32 weights into `path`, one chunk at a time (memory: two chunks)."""
    rng = np.random.default_rng(7)
    base = rng.standard_normal(chunk // 4, dtype=np.float32) * np.float32(0.02)
    t0 = last = time.perf_counter()
    with open(path + ".part", "wb") as f:
        for i in range(nbytes // chunk):
            (base * np.float32(1 + (i + 1) * 1e-4)).tofile(f)  # distinct bytes in every chunk
            now = time.perf_counter()
            if now - last >= 5 or i + 1 == nbytes // chunk:
                done = (i + 1) * chunk
                rate = done / max(1e-9, now - t0)
                print(
                    f"mmap_weights: writing {path}: {done / 2**30:.1f} / {nbytes / 2**30:.1f} GiB, "
                    f"{rate / 1e6:.0f} MB/s, ETA {(nbytes - done) / rate:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
                last = now
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".part", path)


def construct(mm, n, count):
    """Builds the network of `count` [n, n] constants viewed in `mm`; returns the seconds it took."""
    import tensorrt_rtx as trt

    t0 = time.perf_counter()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    net = builder.create_network()
    x = net.add_input("x", trt.float32, (1, n))
    for i in range(count):
        view = mm[i * n * n : (i + 1) * n * n]
        c = net.add_constant((n, n), trt.Weights(trt.float32, view.ctypes.data, view.size))
        x = net.add_matrix_multiply(x, trt.MatrixOperation.NONE, c.get_output(0), trt.MatrixOperation.NONE).get_output(
            0
        )
    net.mark_output(x)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", required=True, help="the weights file")
    ap.add_argument("--gib", type=float, default=1.0, help="its size in GiB (with --make)")
    ap.add_argument("--n", type=int, default=4096, help="each constant is [N, N] fp32 (64 MiB for 4096)")
    ap.add_argument("--make", action="store_true", help="write the weights file first")
    a = ap.parse_args()
    chunk = a.n * a.n * 4
    if a.make:
        make_file(a.weights, int(a.gib * 2**30) // chunk * chunk, chunk)

    mm = np.memmap(a.weights, dtype=np.float32, mode="r")
    count = mm.size // (a.n * a.n)
    # The network (and every object of it) is gone when construct() returns, before the mapping:
    # the capture shim may read queued weights until the network is destroyed (a capture limitation
    # found by this benchmark: weights freed before their network are read after the free).
    network_s = construct(mm, a.n, count)
    print(json.dumps({"weight_bytes": count * chunk, "constants": count, "network_s": network_s}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
