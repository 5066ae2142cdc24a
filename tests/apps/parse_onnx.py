#!/usr/bin/env python3
"""A real TensorRT-RTX client of the ONNX parser's whole call surface: parses many ONNX models,
each into its own network of one builder, without building (parsing is what calls the library).

    parse_onnx.py --ops            one generated model per op in OPS (onnx.helper), including ops
                                   whose importers consult the plugin registry (NonZero, RoiAlign)
    parse_onnx.py --corpus DIR     every DIR/*/*/model.onnx and DIR/light/*.onnx (the onnx 1.17
                                   backend test data)

Prints one line per model (`<name>: parsed` or `<name>: not parsed`); a model the parser rejects
is an expected outcome, so the exit status is 0 unless something else went wrong.
"""

import argparse
import pathlib
import sys

import numpy as np
from onnx import TensorProto as T, helper, numpy_helper
import tensorrt_rtx as trt

F = T.FLOAT


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def c(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


# op -> (nodes, inputs, outputs, initializers, extra opsets)
OPS = {
    "NonZero": ([helper.make_node("NonZero", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, None], T.INT64)], [], []),
    "RoiAlign": (
        [helper.make_node("RoiAlign", ["x", "r", "i"], ["y"], output_height=2, output_width=2)],
        [vi("x", [1, 2, 8, 8]), vi("r", [3, 4])],
        [vi("y", [3, 2, 2, 2])],
        [c("i", np.zeros(3, np.int64))],
        [],
    ),
    "InstanceNormalization": (
        [helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])],
        [vi("x", [1, 3, 4, 4])],
        [vi("y", [1, 3, 4, 4])],
        [c("s", np.ones(3, np.float32)), c("b", np.zeros(3, np.float32))],
        [],
    ),
    "GridSample": (
        [helper.make_node("GridSample", ["x", "g"], ["y"])],
        [vi("x", [1, 3, 4, 4]), vi("g", [1, 4, 4, 2])],
        [vi("y", [1, 3, 4, 4])],
        [],
        [],
    ),
    "ScatterND": (
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
        [vi("x", [4, 3]), vi("u", [2, 3])],
        [vi("y", [4, 3])],
        [c("i", np.array([[0], [2]], np.int64))],
        [],
    ),
    "NonMaxSuppression": (
        [helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])],
        [vi("b", [1, 10, 4]), vi("s", [1, 1, 10])],
        [vi("y", [None, 3], T.INT64)],
        [],
        [],
    ),
    "Resize": (
        [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
        [vi("x", [1, 1, 4, 4])],
        [vi("y", [1, 1, 8, 8])],
        [c("s", np.array([1, 1, 2, 2], np.float32))],
        [],
    ),
    "CustomDomain": (
        [helper.make_node("MyPlugin", ["x"], ["y"], domain="my.domain")],
        [vi("x", [1, 3])],
        [vi("y", [1, 3])],
        [],
        [helper.make_opsetid("my.domain", 1)],
    ),
}


def op_models():
    for op, (nodes, ins, outs, inits, opsets) in OPS.items():
        graph = helper.make_graph(nodes, f"parse_{op}", ins, outs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)] + opsets)
        model.ir_version = 8
        yield op, model.SerializeToString()


def corpus_models(root):
    root = pathlib.Path(root)
    for path in sorted(root.glob("*/*/model.onnx")) + sorted(root.glob("light/*.onnx")):
        yield str(path.relative_to(root)), path.read_bytes()


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--ops", action="store_true")
    g.add_argument("--corpus")
    args = ap.parse_args()
    logger = trt.Logger(trt.Logger.INTERNAL_ERROR)
    builder = trt.Builder(logger)
    models = op_models() if args.ops else corpus_models(args.corpus)
    for name, blob in models:
        network = builder.create_network()
        parser = trt.OnnxParser(network, logger)
        print(f"{name}: {'parsed' if parser.parse(blob) else 'not parsed'}", flush=True)
        del parser, network
    return 0


if __name__ == "__main__":
    sys.exit(main())
