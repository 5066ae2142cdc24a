"""A network of the calls whose Python spelling differs most from C++ (issue 24): arrays whose count
the bindings do not take (add_concatenation(inputs), add_einsum(inputs, equation), scales),
Permutation structs as properties (first_transpose / second_transpose, from a tuple and from
trt.Permutation), and tuples. Writes the engine to --out."""

import argparse

import numpy as np
import tensorrt_rtx as trt

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
args = ap.parse_args()

logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
a = network.add_input("a", trt.float32, (1, 2, 3))
b = network.add_input("b", trt.float32, (1, 2, 3))
c = network.add_constant((1, 2, 3), np.arange(6, dtype=np.float32).reshape(1, 2, 3))
cat = network.add_concatenation([a, b, c.get_output(0)])
cat.axis = 1
shuffle = network.add_shuffle(cat.get_output(0))
shuffle.first_transpose = (0, 2, 1)
shuffle.second_transpose = trt.Permutation([1, 0, 2])
resize = network.add_resize(shuffle.get_output(0))
resize.scales = [1.0, 2.0, 1.0]
network.mark_output(resize.get_output(0))
einsum = network.add_einsum([a, b], "bij,bij->bij")
network.mark_output(einsum.get_output(0))
engine = builder.build_serialized_network(network, builder.create_builder_config())
assert engine is not None, "build failed"
with open(args.out, "wb") as f:
    f.write(engine)
