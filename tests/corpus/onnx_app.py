#!/usr/bin/env python3
"""The corpus's application: parses one .onnx file with tensorrt_rtx.OnnxParser, builds it on the
CPU and writes the engine. The corpus runner (tests/corpus/run_corpus.py) runs it alone, under our
capture shim and under NVIDIA's, and compares what it wrote.

Deterministic handling of what can go wrong (the same input gives the same calls and exit code):
  - parse failure: the parser's errors go to stderr, and the network the parser left is still
    built, so the capture ends in a build whose outcome (often a failure) the player must
    reproduce. Exit 2 when that build fails, 0 with the engine written when it succeeds.
  - build failure (no engine): "build FAILED" on stderr, exit 2, no engine file.
  - inputs with dynamic dimensions (-1): one optimization profile with every -1 set to 1
    (min = opt = max), as a minimal real application would do.
Exit 0 means an engine was written to --out. The first stdout line says whether parsing succeeded.
"""

import argparse
import os
import sys

import tensorrt_rtx as trt


def add_profile(builder, network, config):
    """One optimization profile for inputs with dynamic dimensions (-1 -> 1); none when static."""
    profile = None
    for i in range(network.num_inputs):
        t = network.get_input(i)
        shape = tuple(t.shape)
        if any(d < 0 for d in shape):
            profile = profile or builder.create_optimization_profile()
            fixed = tuple(1 if d < 0 else d for d in shape)
            profile.set_shape(t.name, fixed, fixed, fixed)
    if profile is not None:
        config.add_optimization_profile(profile)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", help="the .onnx file")
    ap.add_argument("--out", required=True, help="the engine file to write")
    ap.add_argument(
        "--heap-shift",
        type=int,
        default=0,
        help="hold a malloc'd block of this many bytes during the build: another heap layout "
        "for the same build (the corpus runner's nondeterminism check; issue 12)",
    )
    args = ap.parse_args()
    shift = bytearray(args.heap_shift)  # > 512 bytes: from malloc's heap, not Python's arenas  # noqa: F841

    with open(args.model, "rb") as f:
        blob = f.read()
    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network()
    parser = trt.OnnxParser(network, logger)
    parsed = parser.parse(blob, os.path.dirname(os.path.abspath(args.model)))
    print(f"parse: {'ok' if parsed else 'FAILED'} ({network.num_layers} layers)")
    for i in range(parser.num_errors):
        print(f"parse error: {parser.get_error(i)}", file=sys.stderr)
    config = builder.create_builder_config()
    add_profile(builder, network, config)
    engine = builder.build_serialized_network(network, config)
    if engine is None:
        print("build FAILED", file=sys.stderr)
        return 2
    with open(args.out, "wb") as f:
        f.write(engine)
    print(f"engine: {args.out} ({engine.nbytes} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
