#!/usr/bin/env python3
"""A real TensorRT-RTX client whose weights hold values JSON has no number for (issue 24): constant
layers of [-inf, inf, nan, 1.0] in fp32 and in fp16 (few enough elements to be inlined in NVIDIA's
JSON), each added to an input and marked as an output, so the engine carries them. Writes the
engine to --out. --inf-parameter adds a LINSPACE fill whose start (alpha) is +inf: a scalar argument, which NVIDIA's
JSON can only write as null."""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine

VALUES = [-np.inf, np.inf, np.nan, 1.0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--inf-parameter", action="store_true")
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (1, 4))
    c32 = net.add_constant((1, 4), trt.Weights(np.array([VALUES], np.float32)))
    c16 = net.add_cast(net.add_constant((1, 4), trt.Weights(np.array([VALUES], np.float16))).get_output(0), trt.float32)
    for i, c in enumerate((c32, c16)):
        y = net.add_elementwise(x, c.get_output(0), trt.ElementWiseOperation.SUM).get_output(0)
        y.name = f"y{i}"
        net.mark_output(y)
    if args.inf_parameter:
        fill = net.add_fill((1, 4), trt.FillOperation.LINSPACE, trt.float32)
        fill.alpha, fill.beta = float("inf"), 1.0
        net.mark_output(fill.get_output(0))
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return save_engine(engine, args.out, "engine")


if __name__ == "__main__":
    sys.exit(main())
