#!/usr/bin/env python3
"""A build that fails on a layer whose name is hostile (a quote, a newline, an ESC sequence, non-ASCII):
the library's error names the layer, so the player's --json report carries the name inside a string."""

import argparse

import tensorrt_rtx as trt

NAME = 'bad"layer\n\x1b[31m\u00e9'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    net = builder.create_network(0)
    a = net.add_input("a", trt.float32, (2, 3))
    b = net.add_input("b", trt.float32, (4, 5))
    layer = net.add_elementwise(a, b, trt.ElementWiseOperation.SUM)  # shapes that cannot broadcast
    layer.name = NAME
    net.mark_output(layer.get_output(0))
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    if engine is None:
        return 2
    with open(args.out, "wb") as f:
        f.write(engine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
