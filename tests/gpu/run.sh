#!/usr/bin/env bash
# The whole GPU test set in one go, for a machine with an NVIDIA GPU: builds kbench, runs the
# unit tests, the CUDA fixtures (verdicts recorded), and the KernelBench level 1 problem 19
# speed check, and the built-in suite. Writes what it measured to $OUT (default bench/out) as
# results.tar.gz (the device tool brings back few files) and summary.txt.
#
#   tests/gpu/run.sh [STEP ...]     steps: build unit fixtures relu19 suite (default: all, in order)
#
# KBENCH_JSONL (default local/kernelbench.jsonl) is a copy of the KernelBench problem set.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
OUT=$BUILD/results
rm -rf "$OUT" && mkdir -p "$OUT" "$DEST"
# Everything measured travels in one archive, also when a step fails.
trap 'tar czf "$DEST/results.tar.gz" -C "$OUT" . ; grep -hE "wall_s|PASSED|FAILED|status" "$OUT"/*.txt "$OUT"/*.log > "$DEST/summary.txt" 2>/dev/null' EXIT
JSONL=${KBENCH_JSONL:-$ROOT/local/kernelbench.jsonl}
STEPS=${*:-build unit fixtures relu19 suite}
want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
export KBENCH_CACHE=${KBENCH_CACHE:-$BUILD/cache}
status=0
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
# Native stack frames in worker logs (module(+offset)) get function and line appended.
symbolize() {
  "$PYTHON" - "$1" <<'PY'
import re, subprocess, sys
path = sys.argv[1]
out = []
for line in open(path, errors="replace"):
    out.append(line)
    m = re.match(r"(/\S+\.so[.\d]*)\((?:[^)+]*)\+(0x[0-9a-f]+)\)", line.strip())
    if m and "_kbench_worker" in m.group(1):
        r = subprocess.run(["addr2line", "-Cfipe", m.group(1), m.group(2)], capture_output=True, text=True)
        out.append("    -> " + r.stdout.strip() + "\n")
open(path, "w").writelines(out)
PY
}

step "machine"
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  "$PYTHON" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nvcc --version | tail -1
  nproc
} 2>&1 | tee "$OUT/machine.txt"

step "build"
want build || [ -x "$BUILD/kbench" ] || { echo "no build in $BUILD"; exit 1; }
# A machine without SQLite's headers (and nothing installable) gets them from a carried
# libsqlite3-dev .deb in local/debs, linked against the system's runtime library.
SQLITE_ARGS=()
if want build && ! [ -f /usr/include/sqlite3.h ]; then
  deb=$(ls "$ROOT"/local/debs/libsqlite3-dev_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "no sqlite3.h here and no local/debs/libsqlite3-dev_*.deb to take it from"; exit 1; }
  mkdir -p "$BUILD/deps" && dpkg-deb -x "$deb" "$BUILD/deps"
  lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 2>/dev/null || ls "$BUILD"/deps/usr/lib/x86_64-linux-gnu/libsqlite3.a)
  SQLITE_ARGS=(-DSQLite3_INCLUDE_DIR="$BUILD/deps/usr/include" -DSQLite3_LIBRARY="$lib")
  echo "SQLite headers from $deb, library $lib"
fi
want build && { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PYTHON" "${SQLITE_ARGS[@]}" \
  > "$OUT/build.log" 2>&1 && cmake --build "$BUILD" -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }; }

want unit && step "unit tests" && { "$BUILD/tests/unit/kbench_unit_tests" --gtest_brief=1 2>&1 | tail -5 || status=1; }

if want fixtures; then
step "CUDA fixtures"
rm -f "$OUT"/fixtures_cuda.jsonl* "$OUT/fixtures_cuda.log"
export TMPDIR=$BUILD/tmp && rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
KBENCH_FIXTURE_RECORD="$OUT/fixtures_cuda.jsonl" \
KBENCH_FIXTURE_ARGS="${KBENCH_FIXTURE_ARGS:---max-seconds 3 --keep-scratch}" \
  timeout "${KBENCH_FIXTURE_TIMEOUT:-1800}" "$BUILD/tests/kbench_fixture_tests" --gtest_filter='Cuda/*' \
  2>&1 | tee -a "$OUT/fixtures_cuda.log" | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which|reason" \
  ; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
for log in "$TMPDIR"/kbench-check-*/logs/*.log; do
  [ -s "$log" ] && { echo "== $log"; tail -c 20000 "$log"; }
done > "$OUT/worker_logs.txt" 2>&1
symbolize "$OUT/worker_logs.txt"
fi

if want relu19; then
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
  start=$(date +%s%N)
  "$BUILD/kbench" check "$REF" "$CAND" --json > "$OUT/relu19.json" 2> "$OUT/relu19.err" || status=1
  end=$(date +%s%N)
  echo "wall_s $("$PYTHON" -c "print(round(($end - $start) / 1e9, 2))")" | tee "$OUT/relu19_wall.txt"
  "$BUILD/kbench" check "$REF" "$CAND" --mode kernelbench --json > "$OUT/relu19_kernelbench.json" 2>> "$OUT/relu19.err" || status=1
  tail -n 5 "$OUT/relu19_first.err" "$OUT/relu19.err"
  cat "$OUT/relu19_first.json" "$OUT/relu19.json" "$OUT/relu19_kernelbench.json"
else
  echo "no $JSONL: skipping the level 1 problem 19 check"
  status=1
fi
fi
if want suite; then
step "built-in suite (CUDA, then Triton candidates)"
for backend in cuda triton; do
  start=$(date +%s%N)
  "$BUILD/kbench" eval --candidates "builtin:$backend" --runs-dir "$BUILD/runs" --run "suite-$backend" \
    > "$OUT/suite_$backend.txt" 2> "$OUT/suite_$backend.err" || status=1
  end=$(date +%s%N)
  echo "suite $backend wall_s $("$PYTHON" -c "print(round(($end - $start) / 1e9, 1))")" | tee -a "$OUT/suite_wall.txt"
  cat "$OUT/suite_$backend.txt"
  cp "$BUILD/runs/suite-$backend/verdicts.jsonl" "$OUT/suite_${backend}_verdicts.jsonl" 2>/dev/null
done
fi
exit $status
