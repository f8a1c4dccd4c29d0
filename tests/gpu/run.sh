#!/usr/bin/env bash
# The whole GPU test set in one go, for a machine with an NVIDIA GPU: builds kbench, runs the
# unit tests, the CUDA fixtures (verdicts recorded), and the KernelBench level 1 problem 19
# speed check. Writes what it measured to $OUT (default bench/out).
#
#   tests/gpu/run.sh [KERNELBENCH_JSONL]
#
# KERNELBENCH_JSONL defaults to local/kernelbench.jsonl (a copy of the KernelBench problem set).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/bench/out}
JSONL=${1:-$ROOT/local/kernelbench.jsonl}
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
export KBENCH_CACHE=${KBENCH_CACHE:-$BUILD/cache}
mkdir -p "$OUT"
status=0
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }

step "machine"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  "$PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nvcc --version | tail -1
  nproc
} 2>&1 | tee "$OUT/machine.txt"

step "build"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$PYTHON" \
  > "$OUT/build.log" 2>&1 && cmake --build "$BUILD" -j"$(nproc)" >> "$OUT/build.log" 2>&1
if [ $? -ne 0 ]; then tail -50 "$OUT/build.log"; exit 1; fi

step "unit tests"
"$BUILD/tests/unit/kbench_unit_tests" --gtest_brief=1 2>&1 | tail -5 || status=1

step "CUDA fixtures"
KBENCH_FIXTURE_RECORD="$OUT/fixtures_cuda.jsonl" \
  "$BUILD/tests/kbench_fixture_tests" --gtest_filter='Cuda/*' 2>&1 | tee "$OUT/fixtures_cuda.log" \
  | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) " ; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1

step "level 1 problem 19 (ReLU)"
if [ -f "$JSONL" ]; then
  mkdir -p "$BUILD/problems/level1"
  "$PYTHON" - "$JSONL" "$BUILD/problems/level1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    if p["level"] == 1 and p["problem_id"] == 19:
        open(f"{sys.argv[2]}/{p['name']}.py", "w").write(p["code"])
PY
  REF="$BUILD/problems/level1/19_ReLU.py"
  CAND="$ROOT/bench/candidates/level1_19_relu_cuda.py"
  # First run builds the candidate's extension; the second is the one timed.
  "$BUILD/kbench" check "$REF" "$CAND" --json > "$OUT/relu19_first.json" 2> "$OUT/relu19_first.err" || status=1
  start=$(date +%s.%N)
  "$BUILD/kbench" check "$REF" "$CAND" --json > "$OUT/relu19.json" 2> "$OUT/relu19.err" || status=1
  end=$(date +%s.%N)
  echo "wall_s $(echo "$end - $start" | bc)" | tee "$OUT/relu19_wall.txt"
  "$BUILD/kbench" check "$REF" "$CAND" --mode kernelbench --json > "$OUT/relu19_kernelbench.json" 2>> "$OUT/relu19.err" || status=1
  cat "$OUT/relu19.json"
else
  echo "no $JSONL: skipping the level 1 problem 19 check"
  status=1
fi
exit $status
