#!/usr/bin/env bash
# The main job: a real application builds TensorRT-RTX engines under the capture shim; the player
# rebuilds them from the trace alone; print the summary and whether each engine is identical.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
. "$root/build/env.sh"
out=$build/demo
rm -rf "$out" && mkdir -p "$out"
shim=$build/lib/libtensorrt_shim.so
echo "== 1. capture: a real TensorRT-RTX $(python3 -c 'import tensorrt_rtx as t; print(t.__version__)') app (2 networks, CPU-only AOT build) under LD_PRELOAD=libtensorrt_shim.so"
TRT_SHIM_OUTPUT_FILE=$out/demo.trtrace LD_PRELOAD=$shim python3 "$root/tests/apps/build_cnn.py" --out "$out/app.engine" --networks 2
echo
echo "== 2. the trace"
trtrace info "$out/demo.trtrace" | sed -n '1,12p'
trtrace verify "$out/demo.trtrace"
echo
echo "== 3. replay: tensorrt_player -j demo.trtrace -o replay.engine (no application involved)"
tensorrt_player -j "$out/demo.trtrace" -o "$out/replay.engine" --lib "$TRTRACE_TRT_LIB" --check --stats -q
echo
echo "== 4. summary"
for i in 0 1; do
  if cmp -s "$out/app.engine$i" "$out/replay.engine$i"; then same="byte-identical"; else same="DIFFERENT"; fi
  printf 'network %d: app engine %s (%d bytes) vs replayed engine: %s\n' "$i" "app.engine$i" \
    "$(stat -c %s "$out/app.engine$i")" "$same"
done
