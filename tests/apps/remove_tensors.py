#!/usr/bin/env python3
"""A real TensorRT-RTX client that removes tensors (INetworkDefinition::removeTensor):

- 64 times, an input is added and removed unused, so the library may hand the next tensor the
  address of the one it destroyed;
- once, it asks to remove a layer's output that a layer still uses: the library refuses (an API
  usage error in its log) and the tensor lives on; the app goes on using it as the network's output.

Writes the serialized engine to --out.
"""

import argparse
import sys

import tensorrt_rtx as trt
from app_common import save_engine


def populate(net):
    """Chains 64 activations, adding and removing an unused input before each, then keeps the
    tensor whose removal the library refuses as the network's output."""
    x = net.add_input("x", trt.float32, (1, 8))
    for i in range(64):
        net.remove_tensor(net.add_input(f"unused{i}", trt.float32, (1, 8)))
        kind = trt.ActivationType.RELU if i % 2 else trt.ActivationType.SIGMOID
        x = net.add_activation(x, kind).get_output(0)
    kept = net.add_unary(x, trt.UnaryOperation.ABS).get_output(0)
    net.remove_tensor(kept)  # refused: the unary layer still produces it
    kept.name = "kept"
    net.mark_output(kept)
    assert net.num_inputs == 1 and net.num_outputs == 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    out = parser.parse_args().out
    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    populate(network)
    sys.exit(save_engine(builder.build_serialized_network(network, builder.create_builder_config()), out))
