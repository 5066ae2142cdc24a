#!/usr/bin/env bash
# The main job: a real application builds TensorRT-RTX engines; print what it built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
. "$root/build/env.sh"
out=$root/$build/demo
rm -rf "$out" && mkdir -p "$out"
echo "== TensorRT-RTX $(python3 -c 'import tensorrt_rtx as t; print(t.__version__)') (CPU-only AOT build)"
python3 "$root/tests/apps/build_cnn.py" --out "$out/cnn.engine" --networks 2
python3 "$root/tests/apps/build_onnx.py" --out "$out/onnx.engine"
ls -l "$out"
