#!/usr/bin/env python3
"""A real TensorRT-RTX client that writes its engines through an IStreamWriter.

Apps that build large engines do not take them back whole: they hand the builder a writer
(Builder.build_serialized_network_to_stream) and the library writes the engine through it in
pieces. This one builds --networks small networks (a convolution, a constant, a matrix multiply)
that way; its writer appends each piece to --out (several networks: --out0, --out1, ..., as the
capture/replay documentation names them) and counts the calls. --fail makes the build fail on
purpose (a shape the builder rejects); --whole builds the same networks with
build_serialized_network instead (the engine returned whole), for comparison.
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt


class FileWriter(trt.IStreamWriter):
    """Appends every piece the library writes to one file; returns how many bytes it took."""

    def __init__(self, path):
        trt.IStreamWriter.__init__(self)
        self.file = open(path, "wb")
        self.calls = 0
        self.bytes = 0

    def write(self, data):  # the bindings (1.6, 1.7) pass the piece as bytes
        self.calls += 1
        self.file.write(data)
        self.bytes += len(data)
        return len(data)


def network(builder, rng, variant, fail):
    net = builder.create_network()
    x = net.add_input(f"x{variant}", trt.float32, (1, 3, 8, 8))
    k = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    conv = net.add_convolution_nd(x, 4, (3, 3), trt.Weights(k), trt.Weights(np.zeros(4, np.float32)))
    shuf = net.add_shuffle(conv.get_output(0))
    shuf.reshape_dims = (1, 4 * 6 * 6)
    w = net.add_constant(
        (4 * 6 * 6, 5 + variant), trt.Weights(rng.standard_normal((144, 5 + variant)).astype(np.float32))
    )
    mm = net.add_matrix_multiply(
        shuf.get_output(0), trt.MatrixOperation.NONE, w.get_output(0), trt.MatrixOperation.NONE
    )
    out = mm.get_output(0)
    if fail:  # (1, 5) + (1, 7) is not broadcastable: the builder rejects it
        bad = net.add_constant((1, 7), trt.Weights(np.ones((1, 7), np.float32)))
        out = net.add_elementwise(out, bad.get_output(0), trt.ElementWiseOperation.SUM).get_output(0)
    out.name = f"y{variant}"
    net.mark_output(out)
    return net


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--networks", type=int, default=1)
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("--whole", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    status = 0
    for i in range(args.networks):
        path = args.out + (str(i) if args.networks > 1 else "")
        net = network(builder, rng, i, args.fail)
        writer = FileWriter(path)
        if args.whole:
            engine = builder.build_serialized_network(net, builder.create_builder_config())
            ok = engine is not None
            if ok:
                writer.write(bytes(engine))
        else:
            ok = builder.build_serialized_network_to_stream(net, builder.create_builder_config(), writer)
        writer.file.close()
        print(f"network {i}: {'built' if ok else 'FAILED'}, {writer.bytes} bytes in {writer.calls} writes to {path}")
        status |= 0 if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
