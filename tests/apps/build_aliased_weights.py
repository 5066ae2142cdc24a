#!/usr/bin/env python3
"""A real TensorRT-RTX client whose weights alias by content but not by pointer.

The library tells weights apart by their host pointer (setWeightsName refuses one pointer named
with two counts or types). This app hands it distinct buffers with identical bytes under different
types and counts -- 4,096 zero bytes as a float32 bias and as int64 ids, as exported GRU/LSTM and
transformer models do -- and the same buffer twice, then builds. Replay must reproduce the pointer
identity, not the content identity. Writes the engine to --out.
"""

import argparse
import sys

import numpy as np
import tensorrt_rtx as trt
from app_common import save_engine


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    net = builder.create_network()
    net.name = "aliased_weights"
    x = net.add_input("x", trt.float32, (1024,))
    bias = np.zeros(1024, dtype=np.float32)  # 4,096 zero bytes ...
    ids = np.zeros(512, dtype=np.int64)  # ... the same 4,096 bytes, another buffer, type and count
    half = np.zeros(2048, dtype=np.float16)  # ... and once more as fp16
    consts = []
    for arr, shape, name in ((bias, (1024,), "bias"), (ids, (512,), "ids"), (half, (2048,), "half")):
        w = trt.Weights(arr)
        consts.append(net.add_constant(shape, w))
        if not net.set_weights_name(w, name):
            print(f"setWeightsName({name}) refused", file=sys.stderr)
            return 1
    again = net.add_constant((1024,), trt.Weights(bias))  # the same pointer again: same weights
    s = net.add_elementwise(x, consts[0].get_output(0), trt.ElementWiseOperation.SUM)
    s = net.add_elementwise(s.get_output(0), again.get_output(0), trt.ElementWiseOperation.SUM)
    net.mark_output(s.get_output(0))
    for c in consts[1:]:
        net.mark_output(net.add_cast(c.get_output(0), trt.float32).get_output(0))
    engine = builder.build_serialized_network(net, builder.create_builder_config())
    return save_engine(engine, args.out, "network 0: engine")


if __name__ == "__main__":
    sys.exit(main())
