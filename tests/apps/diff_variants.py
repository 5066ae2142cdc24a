#!/usr/bin/env python3
"""Variants of one small network, for `trtrace diff` (tests/test_diff_align.py): each option changes
the build in one known way, so two captures differ by exactly that.

The network: input -> convolution (seeded weights) -> a chain of --chain ReLU/Sigmoid activations,
each named -> softmax -> output.
  --extra-layers N  N more activations, each on the convolution's output and named, used by nothing
                    (layers inserted in the middle of the network; the rest unchanged)
  --drop K          leaves out chain layer K (the next one takes the one before as input)
  --kernel-seed S   the convolution's kernel from seed S (one weights argument changed)
  --names-last      names the chain layers after all of them are made (the same network, its
                    calls in another order)
  --config-first    creates the builder config before the network (calls of no network moved)
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def add_chain(net, x, args):
    layers = []
    for i in range(args.chain):
        if i == args.drop:
            continue
        act = net.add_activation(x, trt.ActivationType.RELU if i % 2 == 0 else trt.ActivationType.SIGMOID)
        if not args.names_last:
            act.name = f"chain{i}"
        layers.append((i, act))
        x = act.get_output(0)
    if args.names_last:
        for i, act in layers:
            act.name = f"chain{i}"
    return x


def populate(net, args):
    x = net.add_input("x", trt.float32, (1, 3, 8, 8))
    kernel = np.random.default_rng(args.kernel_seed).standard_normal((4, 3, 3, 3)).astype(np.float32)
    bias = np.arange(4, dtype=np.float32)
    conv = net.add_convolution_nd(x, 4, (3, 3), trt.Weights(kernel), trt.Weights(bias))
    conv.name = "conv"
    c = conv.get_output(0)
    y = add_chain(net, c, args)
    for i in range(args.extra_layers):
        extra = net.add_activation(c, trt.ActivationType.TANH)
        extra.name = f"extra{i}"
    sm = net.add_softmax(y)
    sm.axes = 1 << 1
    net.mark_output(sm.get_output(0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--chain", type=int, default=6)
    ap.add_argument("--extra-layers", type=int, default=0)
    ap.add_argument("--drop", type=int, default=-1)
    ap.add_argument("--kernel-seed", type=int, default=1)
    ap.add_argument("--names-last", action="store_true")
    ap.add_argument("--config-first", action="store_true")
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    config = builder.create_builder_config() if args.config_first else None
    net = builder.create_network(0)
    populate(net, args)
    config = config or builder.create_builder_config()
    engine = builder.build_serialized_network(net, config)
    return save_engine(engine, args.out)


if __name__ == "__main__":
    sys.exit(main())
