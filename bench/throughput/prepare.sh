#!/usr/bin/env bash
# Gathers, on a machine with network access, what bench/throughput/run.sh needs on a GPU
# machine that has none: the reference harness's source and the Python wheels it imports.
#
#   bench/throughput/prepare.sh [HARNESS]
#
# HARNESS: a git repository of github.com/ScalingIntelligence/KernelBench (a clone or a bare
# mirror); default: clone it. Writes local/kernelbench-harness/ and local/wheels/ (git-ignored;
# name `local` in the device call's carry). PYTHON_VERSION (default 3.12) is the GPU machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
HARNESS=${1:-}
PYV=${PYTHON_VERSION:-3.12}
mkdir -p local
if [ -z "$HARNESS" ]; then
  HARNESS=local/kernelbench-harness.git
  [ -d "$HARNESS" ] || git clone --bare --depth 1 https://github.com/ScalingIntelligence/KernelBench "$HARNESS"
fi
rm -rf local/kernelbench-harness && mkdir -p local/kernelbench-harness
git -C "$HARNESS" archive HEAD src scripts KernelBench pyproject.toml LICENSE | tar x -C local/kernelbench-harness
git -C "$HARNESS" rev-parse HEAD > local/kernelbench-harness/COMMIT
echo "harness $(cat local/kernelbench-harness/COMMIT) in local/kernelbench-harness"
# What scripts/eval_from_generations.py imports, beyond torch and numpy (present on the GPU
# machine). litellm is pinned to the oldest release the harness accepts: newer ones are 40 MB.
rm -rf local/wheels && mkdir -p local/wheels
python3 -m pip download --quiet --dest local/wheels --only-binary=:all: \
  --python-version "$PYV" --implementation cp --abi "cp${PYV/./}" \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux_2_28_x86_64 --platform any \
  pydra-config modal openai "litellm==1.80.10" python-dotenv tqdm requests pydantic tabulate \
  packaging
echo "$(ls local/wheels | wc -l) wheels, $(du -sh local/wheels | cut -f1) in local/wheels"
