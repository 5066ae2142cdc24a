#!/usr/bin/env bash
# make bench: every benchmark of issue #8, then the tables in BENCHMARKS.md.
#
#   bash bench/run.sh BUILD_DIR            # full run (<= ~30 min on the 2-core VM), rewrites BENCHMARKS.md
#   bash bench/run.sh BUILD_DIR --smoke    # seconds; checks that everything runs and yields numbers
#
# Steps: micro_bench (Google Benchmark: memcpy, XXH3, byte grouping, zstd, call encode/decode),
# bench/e2e.py (capture: app alone / + our shim / + NVIDIA's shim; replay; conversion), then
# bench/report.py renders the sections between the <!-- bench:... --> markers of BENCHMARKS.md.
# Outputs go to $TRTRACE_BENCH_DIR (default BUILD_DIR/bench-out); big files are deleted as soon
# as they are measured. Then (full run only) bench/huge.py: weights bigger than RAM, captured and
# replayed (writes about 2 x RAM to the disk; TRTRACE_BENCH_HUGE=0 leaves it out), and
# bench/replay_bench.py: trtrace bench on real captures, and its own cost per run, and
# bench/registry_bench.py: push/pull against a local docker-registry (dedup, throughput).
# Environment: TRTRACE_BENCH_REPS (default 3), TRTRACE_BENCH_ONLY (model names), TRTRACE_BENCH_HUGE.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: run.sh BUILD_DIR [--smoke]}" && pwd)
smoke=0
[ "${2:-}" = "--smoke" ] && smoke=1
# shellcheck disable=SC1091
source "$build/env.sh"
out=${TRTRACE_BENCH_DIR:-$build/bench-out}
[ $smoke = 1 ] && out=$out/smoke
mkdir -p "$out"
log() { printf '[bench] %s\n' "$*" >&2; }

[ -x /usr/bin/time ] || { log "/usr/bin/time is missing (Debian package 'time'; tools/setup.sh installs it)"; exit 1; }
for b in micro_bench tensorrt_player trtrace; do
  [ -x "$build/bin/$b" ] || { log "missing $build/bin/$b (build first: cmake --build $build)"; exit 1; }
done
[ -f "$build/lib/libtensorrt_shim.so" ] || { log "missing $build/lib/libtensorrt_shim.so"; exit 1; }

start=$(date +%s)
log "micro-benchmarks -> $out/micro.json"
if [ $smoke = 1 ]; then
  "$build/bin/micro_bench" --benchmark_min_time=0.01 --benchmark_format=json \
      --benchmark_filter='Memcpy|XXH3|ByteGroup/4|ByteUngroup/4|ZstdCompress/1$|ZstdDecompress/1$|EncodeCalls|DecodeCalls' \
      > "$out/micro.json"
else
  "$build/bin/micro_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=false \
      --benchmark_format=json > "$out/micro.json"
fi

log "end-to-end capture/replay -> $out/e2e.json"
e2e_args=(--build "$build" --out "$out/e2e.json" --work "$out/work" --reps "${TRTRACE_BENCH_REPS:-3}")
[ $smoke = 1 ] && e2e_args+=(--smoke)
[ -n "${TRTRACE_BENCH_ONLY:-}" ] && e2e_args+=(--only "$TRTRACE_BENCH_ONLY")
"$TRTRACE_PYTHON" "$root/bench/e2e.py" "${e2e_args[@]}"
rm -rf "$out/work"

cmd="make bench"
[ $smoke = 1 ] && cmd="bash bench/run.sh BUILD --smoke"
if [ $smoke = 1 ]; then
  # The smoke run checks the report renders (to a scratch copy) and asserts nothing about timing.
  cp "$root/BENCHMARKS.md" "$out/BENCHMARKS.md"
  "$TRTRACE_PYTHON" "$root/bench/report.py" --micro "$out/micro.json" --e2e "$out/e2e.json" \
      --md "$out/BENCHMARKS.md" --command "$cmd" --check
  "$TRTRACE_PYTHON" "$root/bench/registry_bench.py" --build "$build" --work "$out/registry" --md "$out/BENCHMARKS.md" \
      --command "$cmd" --smoke > /dev/null
  rm -rf "$out/registry"
  log "smoke OK in $(( $(date +%s) - start )) s (report: $out/BENCHMARKS.md)"
else
  "$TRTRACE_PYTHON" "$root/bench/report.py" --micro "$out/micro.json" --e2e "$out/e2e.json" \
      --md "$root/BENCHMARKS.md" --command "$cmd"
  log "replay benchmarking (bench/replay_bench.py: trtrace bench, issue 25) -> BENCHMARKS.md"
  "$TRTRACE_PYTHON" "$root/bench/replay_bench.py" --build "$build" --work "$out/replay" --md "$root/BENCHMARKS.md" > /dev/null
  rm -rf "$out/replay"
  log "traces in an OCI registry (bench/registry_bench.py: dedup, push/pull throughput) -> BENCHMARKS.md"
  "$TRTRACE_PYTHON" "$root/bench/registry_bench.py" --build "$build" --work "$out/registry" --md "$root/BENCHMARKS.md" \
      --command "$cmd" > /dev/null
  rm -rf "$out/registry"
  if [ "${TRTRACE_BENCH_HUGE:-1}" != 0 ]; then
    log "bigger than RAM (bench/huge.py) -> BENCHMARKS.md"
    "$TRTRACE_PYTHON" "$root/bench/huge.py" --build "$build" --work "$out/huge" --md "$root/BENCHMARKS.md" > /dev/null
    rm -rf "$out/huge"
  fi
  log "done in $(( $(date +%s) - start )) s; BENCHMARKS.md updated"
fi
