#!/usr/bin/env python3
"""A real TensorRT-RTX client that removes tensors (INetworkDefinition::removeTensor):

- 64 times, an input is added and removed unused, so the library may hand the next tensor the
  address of the one it destroyed;
- once, it asks to remove a layer's output that a layer still uses: the library refuses (an API
  usage error in its log) and the tensor lives on; the app goes on using it as the network's output.

Writes the serialized engine to --out.
"""

import argparse

import tensorrt_rtx as trt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (1, 8))
    for i in range(64):
        net.remove_tensor(net.add_input(f"unused{i}", trt.float32, (1, 8)))
        x = net.add_activation(x, trt.ActivationType.RELU if i % 2 else trt.ActivationType.SIGMOID).get_output(0)
    kept = net.add_unary(x, trt.UnaryOperation.ABS).get_output(0)
    net.remove_tensor(kept)  # refused: the unary layer still produces it
    kept.name = "kept"
    net.mark_output(kept)
    assert net.num_inputs == 1 and net.num_outputs == 1
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    assert engine is not None, "the build failed"
    with open(args.out, "wb") as f:
        f.write(engine)


if __name__ == "__main__":
    main()
