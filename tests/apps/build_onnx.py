#!/usr/bin/env python3
"""A real TensorRT-RTX client that goes through the ONNX parser.

Generates a small ONNX model with the `onnx` package (Conv -> Relu -> MaxPool -> Flatten ->
Gemm -> Softmax, seeded fp32 initializers), parses it with tensorrt_rtx.OnnxParser, builds on the
CPU and writes the engine to --out. --model also keeps the generated .onnx file.
"""

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import tensorrt_rtx as trt
from app_common import save_engine


def make_model(seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    fc = (rng.standard_normal((4 * 8 * 8, 10)) * 0.05).astype(np.float32)
    fcb = rng.standard_normal(10).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["g"]),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "trtrace_onnx_app",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (b, "b"), (fc, "fc"), (fcb, "fcb"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--model", help="also write the generated ONNX model here")
    args = ap.parse_args()

    model = make_model(args.seed)
    blob = model.SerializeToString()
    if args.model:
        with open(args.model, "wb") as f:
            f.write(blob)

    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network()
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(blob):
        for i in range(parser.num_errors):
            print(parser.get_error(i), file=sys.stderr)
        return 1
    config = builder.create_builder_config()
    engine = builder.build_serialized_network(network, config)
    if save_engine(engine, args.out):
        return 1
    print(f"network 0: engine {args.out} ({engine.nbytes} bytes, {network.num_layers} layers from ONNX)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
