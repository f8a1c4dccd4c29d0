#!/usr/bin/env bash
# One command from a fresh machine: install dependencies, build, and run the main job: the
# built-in suite's candidates evaluated on the best device present, and their score.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec "${KBENCH_BUILD:-build}/kbench" eval "$@"
