#!/usr/bin/env python3
"""A real TensorRT-RTX client: builds a small but non-trivial CNN + MLP network on the CPU.

Layers: convolution, activation, pooling, shuffle, constant, matrix multiply, elementwise,
softmax. Weights are seeded random fp32 and fp16. Writes the serialized engine(s) to --out
(several networks: --out<index>, as the capture/replay documentation names them).

Options for the capture tests: --networks N builds N networks with interleaved construction,
--threads N builds the networks on N threads, --fail makes the build fail on purpose,
--nonfinite adds layers whose weights and parameters hold NaN and +-inf (no effect on the result).
"""

import argparse
import os
import signal
import sys
import threading

import numpy as np
import tensorrt_rtx as trt


def populate(net, rng, variant, fail=False, nonfinite=False):
    """Adds the layers of network `variant` to `net` and returns the output tensor."""
    c_in, hw = 3, 16 + 4 * variant
    x = net.add_input(f"input{variant}", trt.float32, (1, c_in, hw, hw))
    k = rng.standard_normal((8, c_in, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    conv = net.add_convolution_nd(x, 8, (3, 3), trt.Weights(k), trt.Weights(b))
    conv.padding_nd = (1, 1)
    conv.name = f"conv{variant}"
    act = net.add_activation(conv.get_output(0), trt.ActivationType.RELU)
    pool = net.add_pooling_nd(act.get_output(0), trt.PoolingType.MAX, (2, 2))
    pool.stride_nd = (2, 2)
    flat_len = 8 * (hw // 2) * (hw // 2)
    shuf = net.add_shuffle(pool.get_output(0))
    shuf.reshape_dims = (1, flat_len)
    # fp16 weights through a constant + cast, fp32 through a plain constant.
    w16 = (rng.standard_normal((flat_len, 10)) * 0.05).astype(np.float16)
    wc = net.add_constant((flat_len, 10), trt.Weights(w16))
    wcast = net.add_cast(wc.get_output(0), trt.float32)
    mm = net.add_matrix_multiply(
        shuf.get_output(0), trt.MatrixOperation.NONE, wcast.get_output(0), trt.MatrixOperation.NONE
    )
    bias = net.add_constant((1, 10), trt.Weights(rng.standard_normal((1, 10)).astype(np.float32)))
    add = net.add_elementwise(mm.get_output(0), bias.get_output(0), trt.ElementWiseOperation.SUM)
    if fail:
        # A shape mismatch the builder rejects: (1,10) + (1,7) is not broadcastable.
        bad = net.add_constant((1, 7), trt.Weights(np.ones((1, 7), np.float32)))
        add = net.add_elementwise(add.get_output(0), bad.get_output(0), trt.ElementWiseOperation.SUM)
    if nonfinite:
        add = add_nonfinite(net, add.get_output(0))
    sm = net.add_softmax(add.get_output(0))
    sm.axes = 1 << 1
    out = sm.get_output(0)
    out.name = f"probs{variant}"
    net.mark_output(out)
    return out


def add_nonfinite(net, x):
    """Identity layers on x holding non-finite weights: min(x, +inf) (fp32 inline constant),
    max(x, -inf) (fp16 constant, cast), and an unused NaN constant."""
    inf = net.add_constant((1, 1), trt.Weights(np.array([[np.inf]], np.float32)))
    x = net.add_elementwise(x, inf.get_output(0), trt.ElementWiseOperation.MIN).get_output(0)
    ninf = net.add_cast(
        net.add_constant((1, 1), trt.Weights(np.array([[-np.inf]], np.float16))).get_output(0), trt.float32
    )
    net.add_constant((2,), trt.Weights(np.array([np.nan, 1.0], np.float32)))
    return net.add_elementwise(x, ninf.get_output(0), trt.ElementWiseOperation.MAX)


def build(builder, net):
    config = builder.create_builder_config()
    engine = builder.build_serialized_network(net, config)
    return None if engine is None else bytes(engine)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--networks", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="build each network on its own thread")
    ap.add_argument("--fail", action="store_true")
    ap.add_argument("--nonfinite", action="store_true")
    ap.add_argument(
        "--kill-after-builds",
        type=int,
        default=-1,
        help="SIGKILL this process after that many builds (0: before the first build)",
    )
    ap.add_argument(
        "--fork",
        action="store_true",
        help="fork after creating the builder; the child builds network 1, the parent network 0",
    )
    args = ap.parse_args()

    def maybe_die(builds_done):
        if builds_done == args.kill_after_builds:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    logger = trt.Logger(trt.Logger.WARNING)
    results = {}
    if args.fork:
        builder = trt.Builder(logger)
        pid = os.fork()
        i = 1 if pid == 0 else 0
        net = builder.create_network()
        populate(net, np.random.default_rng(args.seed + i), i)
        engine = build(builder, net)
        with open(f"{args.out}{i}", "wb") as f:
            f.write(engine)
        if pid == 0:
            return 0 if engine else 1  # a normal exit: the child's capture closes its own file
        _, status = os.waitpid(pid, 0)
        print(f"network 0: engine {args.out}0; child exit {status}")
        return 0 if engine and status == 0 else 1
    if args.threads:

        def worker(i):
            builder = trt.Builder(logger)
            net = builder.create_network()
            populate(net, np.random.default_rng(args.seed + i), i, args.fail, args.nonfinite)
            results[i] = build(builder, net)

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(args.networks)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        builder = trt.Builder(logger)
        nets = [builder.create_network() for _ in range(args.networks)]
        # Interleave: populate all networks before building any of them.
        for i, net in enumerate(nets):
            populate(net, np.random.default_rng(args.seed + i), i, args.fail, args.nonfinite)
        maybe_die(0)
        for i, net in enumerate(nets):
            results[i] = build(builder, net)
            maybe_die(i + 1)

    ok = True
    for i in range(args.networks):
        path = args.out if args.networks == 1 else f"{args.out}{i}"
        if results.get(i) is None:
            print(f"network {i}: build FAILED", file=sys.stderr)
            ok = False
            continue
        with open(path, "wb") as f:
            f.write(results[i])
        print(f"network {i}: engine {path} ({len(results[i])} bytes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
