#!/usr/bin/env python3
"""A real TensorRT-RTX client whose build fails because of one layer among many (trtrace reduce).

A chain of --layers named layers on a [4,16] input: activations, elementwise sums with themselves,
and every tenth layer a sum with a constant (weights); at --bad, one Shuffle layer whose reshape
changes the volume ([4,16] to [3,5]). The library accepts every call and rejects the network only
when it builds it, with "reshape changes volume". Exits 1 when the build fails (as it does), 0
with the engine in --out otherwise (--bad -1: no bad layer).
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=120)
    ap.add_argument("--bad", type=int, default=70)
    args = ap.parse_args()
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    net = builder.create_network()
    t = net.add_input("x", trt.float32, (4, 16))
    consts = []
    acts = [trt.ActivationType.RELU, trt.ActivationType.SIGMOID, trt.ActivationType.TANH]
    i = 0
    while i < args.layers:
        if i == args.bad:
            layer = net.add_shuffle(t)
            layer.reshape_dims = (3, 5)
            layer.name = "bad_reshape"
        elif i % 10 == 5 and i < args.bad and i + 1 < args.layers:
            consts.append(np.full((4, 16), 0.01 * i, dtype=np.float32))
            c = net.add_constant((4, 16), trt.Weights(consts[-1]))
            c.name = f"const_{i}"
            i += 1
            layer = net.add_elementwise(t, c.get_output(0), trt.ElementWiseOperation.SUM)
        elif i % 2:
            layer = net.add_elementwise(t, t, trt.ElementWiseOperation.SUM)
        else:
            layer = net.add_activation(t, acts[i % 3])
        if i != args.bad:
            layer.name = f"layer_{i}"
        t = layer.get_output(0)
        i += 1
    net.mark_output(t)
    print(f"{net.num_layers} layers", file=sys.stderr)
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return save_engine(engine, args.out)


if __name__ == "__main__":
    sys.exit(main())
