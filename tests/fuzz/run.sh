#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz_replay: the player's replay against the real library; fuzz_export:
# trtrace export's build.py of mutated traces) of a TRTRACE_FUZZ=ON tree for SECONDS each (all targets at once,
# JOBS processes per target), seeded from fuzz_seedgen + corpus/ + regressions/. New corpus
# entries are kept in <tree>/fuzz-corpus/<target>, crash inputs in <tree>/fuzz-artifacts/.
# Prints the executions per target and in total; exits 1 if any target found a crash.
#   tests/fuzz/run.sh build-fuzz 600 1
set -uo pipefail
tree=${1:?usage: run.sh FUZZ_TREE SECONDS [JOBS]}
secs=${2:-60}
jobs=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$tree" && pwd)
targets=(trace_reader blob_decoder json_reader replay export capi registry)
# fuzz_replay loads the real library: the project's (tools/setup.sh writes build/env.sh).
if [ -z "${TRTRACE_TRT_LIB:-}" ] && [ -f "$here/../../build/env.sh" ]; then . "$here/../../build/env.sh"; fi
"$tree/bin/fuzz_seedgen" "$tree/fuzz-seeds" >/dev/null || exit 1
# The library's own leaks are not findings (fuzz_replay runs it): tests/lsan.supp, as make sanitize.
export LSAN_OPTIONS="suppressions=$here/../lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
mkdir -p "$tree/fuzz-artifacts" "$tree/fuzz-logs"
pids=()
for t in "${targets[@]}"; do
  for ((j = 0; j < jobs; ++j)); do
    mkdir -p "$tree/fuzz-corpus/$t" "$tree/fuzz-seeds/$t"  # a target seedgen writes no seeds for (replay) still runs
    ( cd "$tree/fuzz-logs" && exec "$tree/bin/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 \
        -max_len=65536 -print_final_stats=1 -seed=$((1000 + j)) \
        -artifact_prefix="$tree/fuzz-artifacts/$t-" \
        "$tree/fuzz-corpus/$t" "$tree/fuzz-seeds/$t" "$here/corpus/$t" "$here/regressions/$t" \
        >"$tree/fuzz-logs/$t.$j.log" 2>&1 ) &
    pids+=($!)
  done
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
total=0
for t in "${targets[@]}"; do
  n=0
  for ((j = 0; j < jobs; ++j)); do
    x=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$tree/fuzz-logs/$t.$j.log" | awk '{print $2}')
    if [ -z "$x" ]; then
      echo "fuzz: $t (job $j) stopped early: see $tree/fuzz-logs/$t.$j.log" >&2
      grep -m1 -E 'ERROR|WARNING: .*Sanitizer|==[0-9]+==' "$tree/fuzz-logs/$t.$j.log" >&2
      rc=1
      x=0
    fi
    n=$((n + x))
  done
  printf 'fuzz: %-13s %12d executions in %ss x %d\n' "$t" "$n" "$secs" "$jobs"
  total=$((total + n))
done
printf 'fuzz: total         %12d executions%s\n' "$total" "$([ $rc = 0 ] && echo ', no crash' || echo ', CRASH (inputs in '"$tree"'/fuzz-artifacts)')"
exit $rc
