#!/usr/bin/env bash
# Configures and builds kbench into build/ (or $KBENCH_BUILD) against the Python on PATH
# (or $KBENCH_PYTHON) and its PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=$(command -v "${KBENCH_PYTHON:-python3}")
BUILD=${KBENCH_BUILD:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PYTHON" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
