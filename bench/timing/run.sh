#!/usr/bin/env bash
# Identity candidates (true speedup 1) timed in separate runs, alternating rounds (--rounds)
# against the baseline timed apart (the default), on a GPU machine in one call (carry local/debs and
# local/kernelbench.jsonl):
#
#   RUNS=5 MODES="rounds apart" OUT=dir bench/timing/run.sh [L/P ...]
#
# TIMING_ARGS (default --max-seconds 3) are added to every eval.
# Each of RUNS repetitions runs kbench eval once each way (rounds first, then apart), every
# candidate in a fresh sandbox; bench/timing/table.py tabulates. Results: $OUT/timing.txt and
# $OUT/timing.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
WORK=$BUILD/timing-bench
rm -rf "$WORK" && mkdir -p "$WORK/runs" "$DEST"
trap 'tar czf "$DEST/timing.tar.gz" -C "$WORK" runs timing.txt 2>/dev/null; cp "$WORK/timing.txt" "$DEST/" 2>/dev/null' EXIT
[ -x "$BUILD/kbench" ] || KBENCH_BUILD_TARGETS="kbench _kbench_worker" OUT=$BUILD/build-out bash tests/gpu/run.sh build > "$WORK/build.txt" 2>&1 || { tail -30 "$WORK/build.txt"; exit 2; }
"$PYTHON" bench/timing/identity.py local/kernelbench.jsonl "$WORK/identity.jsonl" "$@"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
} > "$WORK/timing.txt"
for k in $(seq 1 "${RUNS:-5}"); do
  for mode in ${MODES:-rounds apart}; do
    extra=(--no-rounds)
    [ "$mode" = rounds ] && extra=(--rounds)
    # shellcheck disable=SC2206
    extra+=(${TIMING_ARGS:---max-seconds 3})
    start=$(date +%s)
    "$BUILD/kbench" eval --dataset local/kernelbench.jsonl --candidates "$WORK/identity.jsonl" \
      --runs-dir "$WORK/runs" --run "$mode-$k" --policy permissive --level 1 --level 2 --level 3 \
      --cache-dir "$WORK/cache" -q "${extra[@]}" > "$WORK/$mode-$k.out" 2> "$WORK/$mode-$k.err"
    echo "$mode-$k: rc $?, $(( $(date +%s) - start )) s" >> "$WORK/timing.txt"
  done
done
"$PYTHON" bench/timing/table.py "$WORK/runs" >> "$WORK/timing.txt"
cat "$WORK/timing.txt"
