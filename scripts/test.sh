#!/usr/bin/env bash
# Builds kbench and runs its tests: unit tests, then the fixtures on device cpu. GPU fixtures run
# when a GPU is present and are skipped, with a message, when not.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD=${KBENCH_BUILD:-build}
status=0
ctest --test-dir "$BUILD" --output-on-failure -j1 "$@" || status=$?
if [ "$status" -ne 0 ]; then
    # ctest's output is long: what failed, once more at its end.
    log="$BUILD/Testing/Temporary/LastTest.log"
    echo "== failed test cases and their first lines (all of it: $log) =="
    if [ -f "$log" ]; then
        grep -a -A8 -E ': Failure$|^\[  FAILED  \]' "$log" | cut -c1-400 | head -120 || true
    fi
fi
exit "$status"
