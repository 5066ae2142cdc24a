#!/usr/bin/env python3
"""Builds a chain of matrix multiplies, one fp32 weight of n x n per layer, each from its own seed:
--change K gives layer K other weights (the rest are the same bytes as without it), so two captures
share all weights but one. For the registry tests (blob-level dedup across traces).

    layered_weights.py --out ENGINE [--layers N] [--size n] [--change K]
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--size", type=int, default=256, help="n: each weight is n x n fp32")
    ap.add_argument("--change", type=int, default=-1, help="this layer's weights differ")
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    net = builder.create_network(0)
    n = args.size
    x = net.add_input("x", trt.float32, (1, n))
    for k in range(args.layers):
        rng = np.random.default_rng(1000 + k if k != args.change else 5000 + k)
        w = (rng.standard_normal((n, n)) * 0.05).astype(np.float32)
        c = net.add_constant((n, n), trt.Weights(w)).get_output(0)
        x = net.add_matrix_multiply(x, trt.MatrixOperation.NONE, c, trt.MatrixOperation.NONE).get_output(0)
    net.mark_output(x)
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return save_engine(engine, args.out)


if __name__ == "__main__":
    sys.exit(main())
