#!/usr/bin/env bash
# Prepares what compare.sh runs: KernelBench's own analysis script and a Python environment
# that imports it.
#
#   bench/analysis/setup.sh HARNESS [REV]
#
# HARNESS: a git repository of KernelBench (a clone or a bare mirror); REV: the commit to
# use (default the one tests/python/harness.py pins). Writes local/kernelbench-harness/ (the
# tree at REV, and its commit in COMMIT) and local/analysis-venv/ (git-ignored). The venv sees
# the system's packages: the kernelbench package's __init__ imports its utils module, which
# imports torch, numpy, python-dotenv, tqdm, openai and litellm; torch, numpy, python-dotenv
# and tqdm are taken from the system, the rest come from PyPI.
set -euo pipefail
cd "$(dirname "$0")/../.."
HARNESS=${1:?usage: bench/analysis/setup.sh HARNESS [REV]}
REV=${2:-423217d9fda91e0c2d67e4a43bf62f96f6d104f1}
rm -rf local/kernelbench-harness && mkdir -p local/kernelbench-harness
git -C "$HARNESS" archive "$REV" | tar x -C local/kernelbench-harness
git -C "$HARNESS" rev-parse "$REV^{commit}" > local/kernelbench-harness/COMMIT
echo "harness $(cat local/kernelbench-harness/COMMIT) in local/kernelbench-harness"
python3 -c "import torch, numpy, dotenv, tqdm" || {
  echo "the system Python lacks torch, numpy, python-dotenv or tqdm" >&2; exit 1; }
[ -x local/analysis-venv/bin/python ] || python3 -m venv --system-site-packages local/analysis-venv
local/analysis-venv/bin/pip install --quiet pydra-config tabulate openai litellm
local/analysis-venv/bin/pip freeze | grep -iE '^(pydra-config|tabulate|openai|litellm)=='
