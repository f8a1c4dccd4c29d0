#!/usr/bin/env bash
# One command from a fresh machine: install dependencies, build, and run the main job, a check of
# the example candidate on the best device present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD=${KBENCH_BUILD:-build}
if "$BUILD/kbench" check --help >/dev/null && [ -e /proc/driver/nvidia/gpus ] && \
   [ -n "$(ls -A /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
  exec "$BUILD/kbench" check examples/relu/reference.py examples/relu/cuda.py --device cuda
else
  exec "$BUILD/kbench" check examples/relu/reference.py examples/relu/cpu.py --device cpu
fi
