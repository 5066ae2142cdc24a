#!/usr/bin/env python3
"""Synthetic transformer-like TensorRT-RTX app (issue #8): a real `tensorrt_rtx` client whose
weights go from a few MB to many GB, for capture/replay benchmarks.

Network: input [S, H] -> N blocks of
    attention-like:  q,k,v = x@Wq, x@Wk, x@Wv (H x H); softmax(q@k^T) @ v @ Wo; residual add
    norm:            x * gamma + beta (per-channel, H)
    MLP:             relu(x@W1 (H x F)) @ W2 (F x H); residual add
Weights are constants of --dtype (fp32, fp16, or bf16 given as uint16 bit patterns through
trt.Weights(trt.bfloat16, ptr, count)); non-fp32 constants are cast to fp32 before use, so the
network is valid in every dtype. Weights per block: 4*H*H + 2*H*F + 2*H elements.

--repeat K: block b uses the weight CONTENT of block b % ceil(N/K), held in its own buffer (a copy:
a different pointer), so content dedup has work (NVIDIA's shim dedups by pointer only).
--no-build: construct the network (every weight handed to the library) but skip the engine build.
All weight buffers are kept alive until the build (TensorRT reads them then).

Prints one JSON line on stdout: weight bytes (logical/unique), layers, seconds for generation,
network construction and the build.
"""

import argparse
import json
import math
import sys
import time

import numpy as np
import tensorrt_rtx as trt

DTYPES = {"fp32": (trt.float32, 4), "fp16": (trt.float16, 2), "bf16": (trt.bfloat16, 2)}


def make_tensor(rng, shape, dtype, scale=0.02):
    """Seeded N(0, scale) weights in `dtype`; bf16 is the top half of the fp32 bit pattern."""
    n = int(np.prod(shape))
    a = rng.standard_normal(n, dtype=np.float32)
    a *= scale
    if dtype == "fp32":
        return a.reshape(shape)
    if dtype == "fp16":
        return a.astype(np.float16).reshape(shape)
    return (a.view(np.uint32) >> 16).astype(np.uint16).reshape(shape)  # bf16, truncated


def weights(arr, dtype):
    if dtype == "bf16":
        return trt.Weights(trt.bfloat16, arr.ctypes.data, arr.size)
    return trt.Weights(arr)


def block_weights(rng, hidden, ffn, dtype):
    return {
        "wq": make_tensor(rng, (hidden, hidden), dtype),
        "wk": make_tensor(rng, (hidden, hidden), dtype),
        "wv": make_tensor(rng, (hidden, hidden), dtype),
        "wo": make_tensor(rng, (hidden, hidden), dtype),
        "w1": make_tensor(rng, (hidden, ffn), dtype),
        "w2": make_tensor(rng, (ffn, hidden), dtype),
        "gamma": make_tensor(rng, (1, hidden), dtype, 1.0),
        "beta": make_tensor(rng, (1, hidden), dtype),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--ffn-mult", type=int, default=4)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    ap.add_argument("--repeat", type=int, default=1, help="each distinct block's weights appear K times (copies)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-build", action="store_true", help="skip the engine build")
    ap.add_argument("--out", default="", help="engine file (nothing written when empty or --no-build)")
    args = ap.parse_args()

    H, F, S = args.hidden, args.hidden * args.ffn_mult, args.seq
    trt_dtype, esize = DTYPES[args.dtype]
    n_unique = max(1, math.ceil(args.blocks / max(1, args.repeat)))
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    unique = [block_weights(rng, H, F, args.dtype) for _ in range(n_unique)]
    # Blocks beyond the unique ones hold copies (same bytes, another buffer).
    blocks = [
        unique[b] if b < n_unique else {k: v.copy() for k, v in unique[b % n_unique].items()}
        for b in range(args.blocks)
    ]
    t_gen = time.perf_counter() - t0

    t1 = time.perf_counter()
    c1 = time.thread_time()
    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    net = builder.create_network()
    x = net.add_input("x", trt.float32, (S, H))
    keep = []  # every trt.Weights and array stays alive until the build

    def const(arr, name):
        w = weights(arr, args.dtype)
        keep.append((arr, w))
        c = net.add_constant(arr.shape, w)
        c.name = name
        t = c.get_output(0)
        if trt_dtype != trt.float32:
            t = net.add_cast(t, trt.float32).get_output(0)
        return t

    def mm(a, b, tb=False):
        return net.add_matrix_multiply(
            a, trt.MatrixOperation.NONE, b, trt.MatrixOperation.TRANSPOSE if tb else trt.MatrixOperation.NONE
        ).get_output(0)

    def ew(a, b, op):
        return net.add_elementwise(a, b, op).get_output(0)

    E = trt.ElementWiseOperation
    for b, w in enumerate(blocks):
        q, k, v = (mm(x, const(w[n], f"b{b}.{n}")) for n in ("wq", "wk", "wv"))
        sm = net.add_softmax(mm(q, k, tb=True))
        sm.axes = 1 << 1
        att = mm(mm(sm.get_output(0), v), const(w["wo"], f"b{b}.wo"))
        x = ew(x, att, E.SUM)
        x = ew(ew(x, const(w["gamma"], f"b{b}.gamma"), E.PROD), const(w["beta"], f"b{b}.beta"), E.SUM)
        h = net.add_activation(mm(x, const(w["w1"], f"b{b}.w1")), trt.ActivationType.RELU).get_output(0)
        x = ew(x, mm(h, const(w["w2"], f"b{b}.w2")), E.SUM)
    x.name = "y"
    net.mark_output(x)
    t_net = time.perf_counter() - t1
    c_net = time.thread_time() - c1  # this thread's CPU time: what a busy sibling CPU slows

    t2 = time.perf_counter()
    engine_size = 0
    if not args.no_build:
        config = builder.create_builder_config()
        engine = builder.build_serialized_network(net, config)
        if engine is None:
            print("transformer.py: engine build FAILED", file=sys.stderr)
            return 1
        engine_size = engine.nbytes
        if args.out:
            with open(args.out, "wb") as f:
                f.write(engine)
    t_build = time.perf_counter() - t2

    per_block = (4 * H * H + 2 * H * F + 2 * H) * esize
    print(
        json.dumps(
            {
                "blocks": args.blocks,
                "hidden": H,
                "ffn": F,
                "dtype": args.dtype,
                "repeat": args.repeat,
                "layers": net.num_layers,
                "weight_bytes": per_block * args.blocks,
                "unique_weight_bytes": per_block * n_unique,
                "weight_tensors": 8 * args.blocks,
                "gen_s": round(t_gen, 6),
                "network_s": round(t_net, 6),
                "network_cpu_s": round(c_net, 6),
                "build_s": round(t_build, 6),
                "engine_bytes": engine_size,
            }
        )
    )
    # TensorRT reads weights until the build; the capture shim until the network is destroyed:
    # the network goes first, then the weights.
    net = builder = None
    keep.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
