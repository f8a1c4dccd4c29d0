#!/usr/bin/env bash
# Throughput side by side, on one GPU machine in one call: kbench eval and the reference
# harness's batch evaluation (scripts/eval_from_generations.py) over the same KernelBench level 1
# candidates, with equal trial counts (5 correctness trials; 100 timed trials after 3 warm-ups:
# kbench --mode kernelbench), each from an empty build cache. Needs what prepare.sh gathers.
#
#   OUT=dir bench/throughput/run.sh [CANDIDATES_DIR]
#
# HARNESS_LIMIT (seconds, default 3000) cuts the harness short; its rate is then the candidates
# it finished over the time it ran. Results: $OUT/throughput.tar.gz and $OUT/throughput.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
CANDS=$(realpath "${1:-$ROOT/bench/throughput/candidates}")
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
HARNESS=$ROOT/local/kernelbench-harness
WORK=$BUILD/throughput
RES=$WORK/results
LEVEL=1
GPUS=$(nvidia-smi -L | wc -l)  # both tools use every GPU: kbench by default, the harness told so
mkdir -p "$DEST"
[ -d "$HARNESS/src/kernelbench" ] || { echo "no harness in $HARNESS: run bench/throughput/prepare.sh first"; exit 2; }
[ -d "$ROOT/local/wheels" ] || { echo "no local/wheels: run bench/throughput/prepare.sh first"; exit 2; }
[ -x "$BUILD/kbench" ] || OUT=$BUILD/build-out bash tests/gpu/run.sh build || exit 2
rm -rf "$WORK" && mkdir -p "$RES" "$WORK/runs/harness" "$WORK/site"
trap 'tar czf "$DEST/throughput.tar.gz" -C "$RES" . ; cp "$RES/throughput.txt" "$DEST/" 2>/dev/null' EXIT
cp "$CANDS"/level_${LEVEL}_problem_*_sample_*_kernel.py "$WORK/runs/harness/"
N=$(ls "$WORK/runs/harness" | wc -l)
PROBLEMS=$(ls "$WORK/runs/harness" | sed -E 's/level_[0-9]+_problem_([0-9]+)_.*/\1/' | sort -n | paste -sd, -)
FIRST=${PROBLEMS%%,*}; LAST=${PROBLEMS##*,}
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  echo "gpus $GPUS"; echo "harness $(cat "$HARNESS/COMMIT")"; echo "candidates $N, problems $PROBLEMS"; } | tee "$RES/machine.txt"

# The harness's imports, unpacked from the carried wheels (no network, no pip needed).
"$PYTHON" - "$ROOT/local/wheels" "$WORK/site" <<'PY'
import pathlib, sys, zipfile
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    zipfile.ZipFile(wheel).extractall(sys.argv[2])
PY

now() { date +%s%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
echo "== kbench eval ($(date -u +%T))"
start=$(now)
"$BUILD/kbench" eval --dataset "$HARNESS/KernelBench" --level $LEVEL --problems "$PROBLEMS" \
  --candidates "$WORK/runs/harness" --mode kernelbench --trials 5 \
  --cache-dir "$WORK/kbench-cache" --runs-dir "$WORK/kbench-runs" --run throughput \
  > "$RES/kbench.txt" 2> "$RES/kbench.err"
echo "kbench_rc $?" >> "$RES/times.txt"
echo "kbench_wall_s $(since "$start")" | tee -a "$RES/times.txt"
cp "$WORK/kbench-runs/throughput/verdicts.jsonl" "$RES/kbench_verdicts.jsonl"
tail -n 12 "$RES/kbench.txt"

echo "== reference harness ($(date -u +%T))"
start=$(now)
( cd "$HARNESS" && PYTHONPATH="$HARNESS/src:$WORK/site" LITELLM_LOCAL_MODEL_COST_MAP=True \
  timeout "${HARNESS_LIMIT:-3000}" "$PYTHON" scripts/eval_from_generations.py \
  run_name=harness dataset_src=local level=$LEVEL "subset=($FIRST,$LAST)" \
  runs_dir="$WORK/runs" kernel_eval_build_dir="$WORK/harness-cache" \
  num_gpu_devices="$GPUS" timeout=300 build_cache=True num_cpu_workers="$(nproc)" \
  'gpu_arch=["Hopper"]' num_correct_trials=5 num_perf_trials=100 ) \
  > "$RES/harness.log" 2>&1
echo "harness_rc $?" >> "$RES/times.txt"
echo "harness_wall_s $(since "$start")" | tee -a "$RES/times.txt"
cp "$WORK/runs/harness/eval_results.json" "$RES/harness_eval_results.json" 2>/dev/null
tail -n 5 "$RES/harness.log"

"$PYTHON" "$ROOT/bench/throughput/compare.py" "$RES" | tee "$RES/throughput.txt"
