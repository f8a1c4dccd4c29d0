#!/usr/bin/env bash
# Prompt sizes and their cost for one sample of every KernelBench problem of levels 1-3,
# CUDA template, gpt-4.1 prices (kbench generate --dry-run sends nothing).
set -euo pipefail
KBENCH=${KBENCH:-build/kbench}
DATA=${DATA:-../shared/kernelbench/kernelbench.jsonl}
for level in 1 2 3; do
  "$KBENCH" generate --dry-run --provider openai --model gpt-4.1 --dataset "$DATA" --level "$level" --backend cuda
done
