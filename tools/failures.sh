#!/usr/bin/env bash
# After a failed ctest run: the failures' own one-line summaries (pytest's "FAILED ..." lines, the
# first assertion lines, GoogleTest's "[  FAILED  ]"), last, so that a log's tail names the cause.
# Usage: tools/failures.sh BUILD_DIR. Prints nothing when the run left no log.
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
echo "---- what failed (from $log) ----"
grep -aE '^(FAILED |ERROR |E   |\[  FAILED  \]|.*: Failure$)' "$log" | cut -c1-400 | head -n 60
