#!/bin/sh
# Usage: sh scripts/bun_test.sh ARGS... (bun test's own)
# bun test prints a failure's error where the test ran, often hundreds of lines above
# its summary, and the summary names the failed tests only: the tail of a CI log then
# says what failed but not why. This runs bun test with a JUnit report written beside
# its usual output and, when something failed, prints each failure's message again
# after the summary (scripts/test_failures.mjs).
dir=$(cd "$(dirname "$0")" && pwd)
report=$(mktemp "${TMPDIR:-/tmp}/tubeway-bun-report.XXXXXX") || exit 1
sh "$dir/run.sh" bun test --reporter=junit --reporter-outfile="$report" "$@"
rc=$?
if [ "$rc" -ne 0 ]; then sh "$dir/run.sh" bun "$dir/test_failures.mjs" "$report"; fi
rm -f "$report"
exit "$rc"
