#!/usr/bin/env bash
# kbench baseline on a GPU machine, in one call (carry local/kernelbench.jsonl and local/debs;
# carry local/baseline-cache too to go on from an earlier call: what was timed there is kept):
#
#   OUT=dir LEVEL=1 PROBLEMS=1-10 MODES="default max-autotune" [JOBS=4] [MAX_SECONDS=2] \
#     [DEADLINE_S=540] bench/baseline/run.sh
#
# Results: $OUT/baseline.txt (the command's table and log), $OUT/timing/ (KernelBench's
# results/timing files), $OUT/baselines.tgz (the kept entries: unpack into local/baseline-cache
# to carry them to the next call).
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
mkdir -p "$DEST"
[ -x "$BUILD/kbench" ] || KBENCH_BUILD_TARGETS="kbench _kbench_worker" OUT=$BUILD/build-out \
  bash tests/gpu/run.sh build > "$DEST/build.txt" 2>&1 || { tail -30 "$DEST/build.txt"; exit 2; }
export KBENCH_CACHE=$ROOT/local/baseline-cache
mkdir -p "$KBENCH_CACHE"
trap 'tar czf "$DEST/baselines.tgz" -C "$KBENCH_CACHE" baselines 2>/dev/null' EXIT
modes=()
for m in ${MODES:-default}; do modes+=(--compile-mode "$m"); done
jobs=()
[ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
left=$(( ${DEADLINE_S:-100000} - $(date +%s) + T0 ))
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "cores $(nproc); level ${LEVEL:-1}, problems ${PROBLEMS:-all}, modes: eager ${MODES:-default}"
} | tee "$DEST/baseline.txt"
start=$(date +%s.%N)
problems=()
[ -n "${PROBLEMS:-}" ] && problems=(--problems "$PROBLEMS")
timeout -s INT "$(( left > 1 ? left : 1 ))" "$BUILD/kbench" baseline --dataset local/kernelbench.jsonl \
  --level "${LEVEL:-1}" "${problems[@]}" "${modes[@]}" "${jobs[@]}" --device cuda \
  --max-seconds "${MAX_SECONDS:-2}" -o "$DEST/timing" 2>&1 | tee -a "$DEST/baseline.txt"
echo "rc ${PIPESTATUS[0]}; $(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$start") s" | tee -a "$DEST/baseline.txt"
