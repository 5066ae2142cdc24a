#!/usr/bin/env python3
"""The smallest real TensorRT-RTX application, with nothing but `tensorrt_rtx` installed (no NumPy):
the app of README "Install with pip", run by tests/test_wheel.py in a fresh environment that holds
only the trtrace wheel and tensorrt-rtx-cu13. Builds y = relu(x * w + b) with weights from Python
arrays and writes the engine to app.engine (or argv[1])."""

import array
import sys

import tensorrt_rtx as trt


def weights(values):
    buf = array.array("f", values)
    return buf, trt.Weights(trt.float32, buf.buffer_info()[0], len(buf))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "app.engine"
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net = builder.create_network()
    x = net.add_input("x", trt.float32, (1, 64))
    wbuf, w = weights([((i * 37) % 101) / 101.0 - 0.5 for i in range(64)])
    bbuf, b = weights([0.01 * i for i in range(64)])
    scale = net.add_constant((1, 64), w)
    bias = net.add_constant((1, 64), b)
    y = net.add_elementwise(x, scale.get_output(0), trt.ElementWiseOperation.PROD)
    y = net.add_elementwise(y.get_output(0), bias.get_output(0), trt.ElementWiseOperation.SUM)
    y = net.add_activation(y.get_output(0), trt.ActivationType.RELU)
    net.mark_output(y.get_output(0))
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    if engine is None:
        print("build FAILED", file=sys.stderr)
        return 1
    with open(out, "wb") as f:
        f.write(engine)
    print(f"engine {out} ({engine.nbytes} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
