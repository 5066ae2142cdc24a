#!/usr/bin/env python3
"""Builds a chain of matrix multiplies whose weights compress differently: random bytes (int32,
incompressible), random normal fp32 and the same rounded to 2 decimals (compressible). For
`trtrace rewrite --compress` tests: a capture at zstd level 1 that level 3 does not shrink.

    build_mixed_weights.py --out ENGINE [--incompressible]   (--incompressible: random bytes only)
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def weights(rng, kind, n):
    if kind == "bytes":
        return np.frombuffer(rng.bytes(n * n * 4), dtype=np.int32).reshape(n, n).copy()
    w = (rng.standard_normal((n, n)) * 0.05).astype(np.float32)
    return np.round(w, 2) if kind == "rounded" else w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--incompressible", action="store_true", help="every weight random bytes")
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    net = builder.create_network(0)
    rng = np.random.default_rng(1)
    n = 256
    x = net.add_input("x", trt.float32, (1, n))
    kinds = ["bytes"] * 4 if args.incompressible else ["bytes", "normal", "rounded", "normal", "rounded", "bytes"]
    for kind in kinds:
        c = net.add_constant((n, n), trt.Weights(weights(rng, kind, n))).get_output(0)
        if kind == "bytes":
            c = net.add_cast(c, trt.float32).get_output(0)
        x = net.add_matrix_multiply(x, trt.MatrixOperation.NONE, c, trt.MatrixOperation.NONE).get_output(0)
    net.mark_output(x)
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return save_engine(engine, args.out)


if __name__ == "__main__":
    sys.exit(main())
