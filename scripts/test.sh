#!/usr/bin/env bash
# Builds kbench and runs its tests: unit tests, then the fixtures on device cpu. GPU fixtures run
# when a GPU is present and are skipped, with a message, when not.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
BUILD=${KBENCH_BUILD:-build}
ctest --test-dir "$BUILD" --output-on-failure -j1 "$@"
