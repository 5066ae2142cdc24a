#!/usr/bin/env python3
"""A real TensorRT-RTX client that changes its weights after add*() and before the build.

TensorRT reads weights when it builds, not when they are passed: an app may fill or change a NumPy
array in place between add_constant / add_convolution_nd and build_serialized_network, and the
engine holds what the array held at the build. This one adds a constant (4,096 float32 values, a
blob), a tiny constant (4 values, stored inline in a trace), a convolution (kernel and bias) and a
constant whose bytes it changes twice, building between the changes (--rebuild). Each array is
changed in place after its add*() call. Writes the engines to --out (several: --out0, --out1, ...).
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def network(builder, arrays):
    net = builder.create_network()
    x = net.add_input("x", trt.float32, (1, 2, 8, 8))
    conv = net.add_convolution_nd(x, 4, (3, 3), trt.Weights(arrays["kernel"]), trt.Weights(arrays["bias"]))
    big = net.add_constant((1, 4, 32, 32), trt.Weights(arrays["big"]))
    tiny = net.add_constant((1, 4, 1, 1), trt.Weights(arrays["tiny"]))
    pool = net.add_resize(big.get_output(0))
    pool.shape = (1, 4, 6, 6)
    s = net.add_elementwise(conv.get_output(0), pool.get_output(0), trt.ElementWiseOperation.SUM)
    s = net.add_elementwise(s.get_output(0), tiny.get_output(0), trt.ElementWiseOperation.SUM)
    net.mark_output(s.get_output(0))
    return net


def build(builder, net, path):
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    if save_engine(engine, path, "engine"):
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rebuild", action="store_true", help="change the weights again and build once more")
    args = ap.parse_args()
    rng = np.random.default_rng(5)
    arrays = {  # what add*() is given: placeholders the app fills in afterwards
        "kernel": np.zeros(4 * 2 * 3 * 3, dtype=np.float32),
        "bias": np.zeros(4, dtype=np.float32),
        "big": np.zeros(4 * 32 * 32, dtype=np.float32),
        "tiny": np.zeros(4, dtype=np.float32),
    }
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net = network(builder, arrays)
    for a in arrays.values():  # in place: the pointers the network holds see the new values
        a[:] = rng.standard_normal(a.size).astype(np.float32)
    build(builder, net, args.out + ("0" if args.rebuild else ""))
    if args.rebuild:
        arrays["big"] *= -2.0
        arrays["tiny"] += 1.0
        build(builder, net, args.out + "1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
