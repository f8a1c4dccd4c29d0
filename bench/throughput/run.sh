#!/usr/bin/env bash
# Throughput side by side, on one GPU machine in one call: kbench eval and the reference
# harness's batch evaluation (scripts/eval_from_generations.py) over the same KernelBench level 1
# candidates, with equal trial counts (5 correctness trials; 100 timed trials after 3 warm-ups:
# kbench --mode kernelbench), each from an empty build cache. Needs what prepare.sh gathers.
#
#   OUT=dir bench/throughput/run.sh [CANDIDATES_DIR]
#
# HARNESS_LIMIT (seconds, default 3000) cuts the harness short; DEADLINE_S (seconds since this
# script started) cuts it where the whole call must end. A cut harness's rate is the candidates it
# finished over the time it ran; compare.py also projects its full run from the times it logged.
# CONTINUE=1 (a later call on the same, still warm machine) skips kbench and lets the harness go
# on where it stopped, as it does by itself (it skips candidates it has results for).
# Results: $OUT/throughput.tar.gz and $OUT/throughput.txt.
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
T0=$(date +%s%N)
mkdir -p "$DEST"
[ -d "$HARNESS/src/kernelbench" ] || { echo "no harness in $HARNESS: run bench/throughput/prepare.sh first"; exit 2; }
[ -d "$ROOT/local/wheels" ] || { echo "no local/wheels: run bench/throughput/prepare.sh first"; exit 2; }
[ -x "$BUILD/kbench" ] || OUT=$BUILD/build-out bash tests/gpu/run.sh build || exit 2
if [ "${CONTINUE:-0}" = 1 ]; then
  [ -f "$RES/times.txt" ] || { echo "CONTINUE=1 but no earlier run in $WORK (the machine went cold?)"; exit 2; }
else
  rm -rf "$WORK" && mkdir -p "$RES" "$WORK/runs/harness" "$WORK/site"
fi
trap 'tar czf "$DEST/throughput.tar.gz" -C "$RES" . ; cp "$RES/throughput.txt" "$DEST/" 2>/dev/null' EXIT
[ "${CONTINUE:-0}" = 1 ] || cp "$CANDS"/level_${LEVEL}_problem_*_sample_*_kernel.py "$WORK/runs/harness/"
N=$(ls "$WORK/runs/harness" | grep -c "_kernel.py$")
PROBLEMS=$(ls "$WORK/runs/harness" | grep "_kernel.py$" | sed -E 's/level_[0-9]+_problem_([0-9]+)_.*/\1/' | sort -n | paste -sd, -)
FIRST=${PROBLEMS%%,*}; LAST=${PROBLEMS##*,}
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
  echo "gpus $GPUS"; echo "harness $(cat "$HARNESS/COMMIT")"; echo "candidates $N, problems $PROBLEMS"; } | tee -a "$RES/machine.txt"

# The harness's imports, unpacked from the carried wheels (no network, no pip needed).
"$PYTHON" - "$ROOT/local/wheels" "$WORK/site" <<'PY'
import pathlib, sys, zipfile
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    zipfile.ZipFile(wheel).extractall(sys.argv[2])
PY

now() { date +%s%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
if [ "${CONTINUE:-0}" != 1 ]; then
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
fi

echo "== reference harness ($(date -u +%T))"
LIMIT=${HARNESS_LIMIT:-3000}
if [ -n "${DEADLINE_S:-}" ]; then
  left=$(awk -v a="$T0" -v b="$(now)" -v d="$DEADLINE_S" 'BEGIN { printf "%d", d - (b - a) / 1e9 - 20 }')
  [ "$left" -lt "$LIMIT" ] && LIMIT=$left
fi
echo "harness limit ${LIMIT} s"
n=$(grep -c '^harness_wall_s' "$RES/times.txt" 2>/dev/null); n=$((n + 1))  # segment number
start=$(now)
# In its own session, so that what is left of it (pool workers) goes when it is cut; a sampler
# notes when each line of its log appeared (segment, seconds since the segment began, lines).
setsid bash -c 'cd "$1" && shift && exec "$@"' _ "$HARNESS" env PYTHONPATH="$HARNESS/src:$WORK/site" \
  LITELLM_LOCAL_MODEL_COST_MAP=True timeout "$LIMIT" "$PYTHON" -u scripts/eval_from_generations.py \
  run_name=harness dataset_src=local level=$LEVEL "subset=($FIRST,$LAST)" \
  runs_dir="$WORK/runs" kernel_eval_build_dir="$WORK/harness-cache" \
  num_gpu_devices="$GPUS" timeout=300 build_cache=True num_cpu_workers="$(nproc)" \
  'gpu_arch=["Hopper"]' num_correct_trials=5 num_perf_trials=100 > "$RES/harness_$n.log" 2>&1 &
hpid=$!
( last=-1; while kill -0 $hpid 2>/dev/null; do
    c=$(tr "\r" "\n" < "$RES/harness_$n.log" 2>/dev/null | wc -l)
    [ "$c" != "$last" ] && echo "$n $(since "$start") $c" && last=$c
    sleep 1
  done ) >> "$RES/harness_lines.txt" &
wait $hpid
echo "harness_rc $?" >> "$RES/times.txt"
pkill -9 -s $hpid 2>/dev/null  # by session: timeout(1) moves into a group of its own
echo "harness_wall_s $(since "$start")" | tee -a "$RES/times.txt"
cp "$WORK/runs/harness/eval_results.json" "$RES/harness_eval_results.json" 2>/dev/null
wait
tr '\r' '\n' < "$RES/harness_$n.log" | grep -v "^ *$" | tail -n 5

"$PYTHON" "$ROOT/bench/throughput/compare.py" "$RES" | tee "$RES/throughput.txt"
