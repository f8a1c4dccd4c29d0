#!/usr/bin/env bash
# One device call of the side-by-side memory table: kbench's remaining level 1 problems, then the
# harness (4 children at once within the device's memory, NVML per-process peaks). Resumes.
set -u
export KBENCH_PYTHON=/opt/torch/.venv/bin/python3
T0=$(date +%s)
P=$PWD/build-gpu/mem-out; mkdir -p "$P"
[ -f "$P/harness-side.jsonl" ] || cp bench/2026-12-06-h100/memory-digest/harness-big.jsonl "$P/harness-side.jsonl"
if [ "${KB:-1}" = 1 ]; then
  OUT=$P TAG=l1rest PROBLEMS="1/1-18 1/46-75 1/77-100" DEADLINE_S=${KB_S:-470} bash bench/memory/run.sh kbench 2>&1 | tail -4
fi
left=$(( ${BUDGET:-585} - ($(date +%s) - T0) ))
echo "harness: $left s left"
if [ "$left" -gt 60 ]; then
  OUT=$P TAG=side PROBLEMS="1/1-100 2/1-10 3/1-10" JOBS=${JOBS:-4} TIMEOUT=170 CORRECT_TRIALS=1 PERF_TRIALS=2 \
    DEADLINE_S=$(( left - 45 )) timeout -s KILL $(( left - 5 )) bash bench/memory/run.sh harness 2>&1 | tail -3
fi
grep -c . "$P"/*.jsonl
cp -r "$P/." "$OUT/"
