#!/usr/bin/env bash
# After a failed ctest run: the failures' own lines, last, so that a log's tail names the cause: the
# first assertion lines (pytest's "E ", GoogleTest's "Failure"), then each failed test's one-line
# summary (pytest's "FAILED ...", GoogleTest's "[  FAILED  ]"). Usage: tools/failures.sh BUILD_DIR.
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
echo "---- what failed (from $log) ----"
grep -aE '^(E   |.*: Failure$)' "$log" | cut -c1-300 | head -n 30
grep -aE '^(FAILED |ERROR |\[  FAILED  \])' "$log" | cut -c1-400 | head -n 30
