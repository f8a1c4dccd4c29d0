#!/usr/bin/env bash
# Peak device memory, kbench beside the reference harness, on a GPU machine; one call does one
# STEP, and the next call on the same warm machine goes on from there (carry local/debs,
# local/kernelbench.jsonl and local/kernelbench-harness):
#
#   OUT=dir [CAP=40] [PROBLEMS="1/1-100 2/1-10 3/1-10"] [DEADLINE_S=540] [TAG=a] bench/memory/run.sh kbench
#   OUT=dir [CAP=40] [PROBLEMS=...] [JOBS=1] [CORRECT_TRIALS=5] [PERF_TRIALS=10] bench/memory/run.sh harness
#
# kbench: builds kbench if it is not built, then kbench eval of identity candidates (each
# problem's own code as ModelNew, --policy permissive) with --max-seconds 1, under
# --device-memory CAP where CAP is set; each verdict's `memory` goes to $OUT/kbench*.jsonl.
# harness: bench/memory/harness_peak.py over the same problems (JOBS at once), under the same cap.
# TAG names the files of one selection (kbench-TAG.jsonl), CAP adds -CAPg.
# Both resume: a second call skips what the first did. bench/memory/table.py joins them.
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
WORK=$BUILD/memory-bench
PROBLEMS=${PROBLEMS:-1/1-100 2/1-10 3/1-10}
SUFFIX=${CAP:+-${CAP}g}${TAG:+-$TAG}
mkdir -p "$WORK" "$DEST"
left() { echo $(( ${DEADLINE_S:-540} - $(date +%s) + T0 )); }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$DEST/machine.txt" 2>&1
case "${1:-kbench}" in
kbench)
  [ -x "$BUILD/kbench" ] || KBENCH_BUILD_TARGETS="kbench _kbench_worker" OUT=$BUILD/build-out \
    bash tests/gpu/run.sh build > "$DEST/build.txt" 2>&1 || { tail -30 "$DEST/build.txt"; exit 2; }
  "$PYTHON" - "$WORK/identity.jsonl" $PROBLEMS <<'PY'
import json, sys
out, wanted = sys.argv[1], set()
for item in sys.argv[2:]:
    level, ids = item.split("/")
    a, _, b = ids.partition("-")
    wanted |= {(int(level), i) for i in range(int(a), int(b or a) + 1)}
with open(out, "w") as f:
    for line in open("local/kernelbench.jsonl"):
        p = json.loads(line)
        if (p["level"], p["problem_id"]) in wanted:
            code = p["code"].rstrip() + "\n\n\nclass ModelNew(Model):\n    pass\n"
            f.write(json.dumps({"level": p["level"], "problem_id": p["problem_id"],
                                "sample_id": 0, "code": code}) + "\n")
PY
  cap=()
  [ -n "${CAP:-}" ] && cap=(--device-memory "$CAP")
  start=$(date +%s)
  timeout -s INT "$(left)" "$BUILD/kbench" eval --dataset local/kernelbench.jsonl \
    --candidates "$WORK/identity.jsonl" --runs-dir "$WORK/runs" --run "memory$SUFFIX" \
    --policy permissive --max-seconds 1 --level 1 --level 2 --level 3 "${cap[@]}" \
    --cache-dir "$WORK/cache" > "$DEST/kbench$SUFFIX.out" 2> "$DEST/kbench$SUFFIX.err"
  echo "kbench$SUFFIX: rc $?, $(( $(date +%s) - start )) s" | tee -a "$DEST/times.txt"
  cp "$WORK/runs/memory$SUFFIX/verdicts.jsonl" "$DEST/kbench$SUFFIX.jsonl" 2>/dev/null
  tail -5 "$DEST/kbench$SUFFIX.err"
  ;;
harness)
  cap=()
  [ -n "${CAP:-}" ] && cap=(--device-memory "$CAP" --cap-minus-context)
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$PYTHON" bench/memory/harness_peak.py --problems $PROBLEMS --out "$DEST/harness$SUFFIX.jsonl" \
    --jobs "${JOBS:-1}" --timeout "${TIMEOUT:-120}" --deadline-s "$(left)" "${cap[@]}" --log-dir "$WORK/logs" \
    --num-correct-trials "${CORRECT_TRIALS:-5}" --num-perf-trials "${PERF_TRIALS:-10}" \
    2> "$DEST/harness$SUFFIX.err"
  echo "harness$SUFFIX: rc $?, $(( $(date +%s) - start )) s" | tee -a "$DEST/times.txt"
  tail -3 "$DEST/harness$SUFFIX.err"
  ;;
esac
