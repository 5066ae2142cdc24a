"""A small network that uses what the running TensorRT-RTX version has: on 1.7 and newer
add_squeeze without axes (NetworkDefinition.addSqueezeV2, 50-rtx-1.7.api); on 1.6 add_squeeze
with an axes tensor. Writes the engine to argv[1]."""

import sys

import numpy as np
import tensorrt_rtx as trt

logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
x = network.add_input("x", trt.float32, (2, 1, 4, 1))
if tuple(int(v) for v in trt.__version__.split(".")[:2]) >= (1, 7):
    squeezed = network.add_squeeze(x)
else:
    axes = network.add_constant((2,), np.array([1, 3], dtype=np.int64)).get_output(0)
    squeezed = network.add_squeeze(x, axes)
network.mark_output(network.add_activation(squeezed.get_output(0), trt.ActivationType.RELU).get_output(0))
engine = builder.build_serialized_network(network, builder.create_builder_config())
assert engine is not None, "build failed"
with open(sys.argv[1], "wb") as f:
    f.write(engine)
