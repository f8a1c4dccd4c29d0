#!/usr/bin/env bash
# The whole GPU test set in one go, for a machine with an NVIDIA GPU: builds kbench, runs the
# unit tests, the CUDA fixtures (the adversarial ones among them, verdicts recorded), the
# KernelBench level 1 problem 19 check, and the built-in suite. With a copy of an earlier kbench
# in local/old (bench/cost/prepare.sh makes one), problem 19 and the suite's Triton candidates
# also run with it, alternating with this one, for the cost side by side. Writes what it measured
# to $OUT (default bench/out) as results.tar.gz (the device tool brings back few files) and
# summary.txt.
#
#   tests/gpu/run.sh [STEP ...]   steps: build unit fixtures relu19 wrong19 suite interrupt refine audit ipc layers bandwidth
#                                 health agreement (default: all, in order)
#
# KBENCH_BUILD_TARGETS (default: all) limits the build to the named CMake targets.
# KBENCH_JSONL (default local/kernelbench.jsonl) is a copy of (part of) the KernelBench problem set.
# KBENCH_FIXTURE_FILTER picks CUDA fixtures (default Cuda/*). audit: the TF32 audit of level 1
# convolutions (KBENCH_FULL_JSONL, default local/kernelbench_full.jsonl). bandwidth: the device's
# copy bandwidth (bench/floor/bandwidth.py). health: kbench dataset audit over the levels in
# KBENCH_HEALTH_LEVELS (default 1 2 3) of KBENCH_FULL_JSONL, each level at most
# KBENCH_HEALTH_SECONDS. agreement: kbench eval
# over the public candidates bench/agreement/prepare.py put in local/agreement (resumable: a
# second call goes on where a first one stopped), for at most KBENCH_AGREEMENT_SECONDS;
# KBENCH_AGREEMENT_SET=NAME takes candidates_NAME.jsonl and selected_NAME.jsonl instead.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
OLD_SRC=$ROOT/local/old
OLD=$BUILD-old
OUT=$BUILD/results
rm -rf "$OUT" && mkdir -p "$OUT" "$DEST"
# Everything measured travels in one archive, also when a step fails.
trap 'tar czf "$DEST/results.tar.gz" -C "$OUT" . ; grep -hE "wall_s|PASSED|FAILED|status|layer" "$OUT"/*.txt "$OUT"/*.log > "$DEST/summary.txt" 2>/dev/null' EXIT
JSONL=${KBENCH_JSONL:-$ROOT/local/kernelbench.jsonl}
STEPS=${*:-build unit fixtures relu19 suite interrupt refine audit ipc layers bandwidth health agreement}
want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
export KBENCH_CACHE=${KBENCH_CACHE:-$BUILD/cache}
status=0
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
now() { date +%s%N; }
seconds_since() { "$PYTHON" -c "print(round(($(now) - $1) / 1e9, 2))"; }
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
  nproc; uname -r; id
} 2>&1 | tee "$OUT/machine.txt"

# A machine without SQLite's headers (and nothing installable) gets them from a carried
# libsqlite3-dev .deb in local/debs, linked against the system's runtime library.
SQLITE_ARGS=()
if ! [ -f /usr/include/sqlite3.h ]; then
  deb=$(ls "$ROOT"/local/debs/libsqlite3-dev_*.deb 2>/dev/null | head -1)
  if [ -n "$deb" ]; then
    mkdir -p "$BUILD/deps" && dpkg-deb -x "$deb" "$BUILD/deps"
    lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 2>/dev/null || ls "$BUILD"/deps/usr/lib/x86_64-linux-gnu/libsqlite3.a)
    SQLITE_ARGS=(-DSQLite3_INCLUDE_DIR="$BUILD/deps/usr/include" -DSQLite3_LIBRARY="$lib")
  fi
fi
# libcurl's headers likewise (kbench generate and refine), against the system's libcurl.so.4.
CURL_ARGS=()
if ! ls /usr/include/curl/curl.h /usr/include/*/curl/curl.h >/dev/null 2>&1; then
  deb=$(ls "$ROOT"/local/debs/libcurl4-openssl-dev_*.deb 2>/dev/null | head -1)
  lib=$(ls /usr/lib/x86_64-linux-gnu/libcurl.so.4 2>/dev/null | head -1)
  if [ -n "$deb" ] && [ -n "$lib" ]; then
    mkdir -p "$BUILD/deps" && dpkg-deb -x "$deb" "$BUILD/deps"
    CURL_ARGS=(-DCURL_INCLUDE_DIR="$BUILD/deps/usr/include/x86_64-linux-gnu" -DCURL_LIBRARY="$lib")
  else
    echo "no libcurl headers (local/debs) or no libcurl.so.4: kbench builds without generate/refine"
  fi
fi
configure_and_build() {  # SOURCE BINARY_DIR LOG
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$PYTHON" \
    "${SQLITE_ARGS[@]}" "${CURL_ARGS[@]}" > "$3" 2>&1 &&
    cmake --build "$2" -j"$(nproc)" ${KBENCH_BUILD_TARGETS:+--target $KBENCH_BUILD_TARGETS} >> "$3" 2>&1
}

step "build"
if want build; then
  [ "${#SQLITE_ARGS[@]}" -eq 0 ] && ! [ -f /usr/include/sqlite3.h ] && { echo "no sqlite3.h and no local/debs/libsqlite3-dev_*.deb"; exit 1; }
  [ -d "$OLD_SRC" ] && { configure_and_build "$OLD_SRC" "$OLD" "$OUT/build_old.log" & }
  start=$(now)
  configure_and_build . "$BUILD" "$OUT/build.log" || { tail -50 "$OUT/build.log"; exit 1; }
  echo "build wall_s $(seconds_since "$start")"
  wait
  [ -d "$OLD_SRC" ] && { [ -x "$OLD/kbench" ] || { echo "the earlier kbench did not build"; tail -20 "$OUT/build_old.log"; }; }
fi
# Every step but build, ipc and bandwidth runs kbench.
needs_kbench() { for s in $STEPS; do case $s in build | ipc | layers | bandwidth) ;; *) return 0 ;; esac; done; return 1; }
! needs_kbench || [ -x "$BUILD/kbench" ] || { echo "no build in $BUILD"; exit 1; }

want unit && step "unit tests" && { "$BUILD/tests/unit/kbench_unit_tests" --gtest_brief=1 2>&1 | tail -5 | tee "$OUT/unit.txt" || status=1; }

if want fixtures; then
step "CUDA fixtures (the adversarial suite among them)"
rm -f "$OUT"/fixtures_cuda.jsonl* "$OUT/fixtures_cuda.log"
export TMPDIR=$BUILD/tmp && rm -rf "$TMPDIR" && mkdir -p "$TMPDIR" && chmod 1777 "$TMPDIR"
start=$(now)
KBENCH_FIXTURE_RECORD="$OUT/fixtures_cuda.jsonl" \
KBENCH_FIXTURE_ARGS="${KBENCH_FIXTURE_ARGS:---max-seconds 2 --keep-scratch}" \
  timeout "${KBENCH_FIXTURE_TIMEOUT:-1800}" "$BUILD/tests/kbench_fixture_tests" \
  --gtest_filter="${KBENCH_FIXTURE_FILTER:-Cuda/*}" \
  2>&1 | tee -a "$OUT/fixtures_cuda.log" | grep -E "^\[ *(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which|reason" \
  ; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "fixtures wall_s $(seconds_since "$start")"
grep -h "sandbox layer" "$OUT/fixtures_cuda.jsonl.progress" 2>/dev/null | sort -u | tee "$OUT/layers.txt"
for log in "$TMPDIR"/kbench-check-*/logs/*.log; do
  [ -s "$log" ] && { echo "== $log"; tail -c 20000 "$log"; }
done > "$OUT/worker_logs.txt" 2>&1
symbolize "$OUT/worker_logs.txt"
unset TMPDIR
fi

# Runs `kbench check` of problem 19 with BINARY into OUT/NAME.json, its wall time into OUT/times.txt.
relu19() {  # NAME BINARY [ARGS...]
  local name=$1 binary=$2; shift 2
  local start; start=$(now)
  "$binary" check "$REF" "$CAND" --json "$@" > "$OUT/$name.json" 2> "$OUT/$name.err" || status=1
  echo "$name wall_s $(seconds_since "$start")" | tee -a "$OUT/times.txt"
}

if want relu19 || want wrong19; then
step "level 1 problem 19 (ReLU), this kbench beside the earlier one"
if ! [ -f "$JSONL" ]; then
  echo "no $JSONL: skipping the level 1 problem 19 check"
  status=1
fi
fi
if [ -f "$JSONL" ] && { want relu19 || want wrong19; }; then
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
fi
if [ -f "$JSONL" ] && want relu19; then
  # The first runs build the candidate's extension, each kbench into a cache of its own.
  relu19 relu19_first "$BUILD/kbench" &
  [ -x "$OLD/kbench" ] && KBENCH_CACHE=$OLD/cache relu19 relu19_old_first "$OLD/kbench" &
  wait
  for round in 1 2; do
    relu19 "relu19_$round" "$BUILD/kbench"
    [ -x "$OLD/kbench" ] && KBENCH_CACHE=$OLD/cache relu19 "relu19_old_$round" "$OLD/kbench"
  done
  relu19 relu19_kernelbench "$BUILD/kbench" --mode kernelbench
  cat "$OUT"/relu19_*.json
fi
if [ -f "$JSONL" ] && { want relu19 || want wrong19; }; then
  # A wrong ReLU (a quarter of the positive values 1% off): the verdict and what it cost, the
  # arbitration at float64 included.
  sed 's/v.x = fmaxf(v.x, 0.f);/v.x = fmaxf(v.x, 0.f) * 1.01f;/; s/kbench_bench_relu_vec4/kbench_bench_relu_wrong/' \
    "$CAND" > "$BUILD/problems/relu19_wrong.py"
  CAND="$BUILD/problems/relu19_wrong.py" relu19 relu19_wrong "$BUILD/kbench"
  "$PYTHON" -c 'import json,sys; v=json.load(open(sys.argv[1])); print("relu19_wrong", v.get("status"), json.dumps(v.get("arbitration")), v.get("reason", "")[:300])' "$OUT/relu19_wrong.json" | tee -a "$OUT/times.txt"
fi

suite() {  # NAME BINARY CACHE BACKEND
  local start; start=$(now)
  KBENCH_CACHE=$3 "$2" eval --candidates "builtin:$4" --runs-dir "$BUILD/runs-$1" --run "suite-$4" --force \
    > "$OUT/suite_$1.txt" 2> "$OUT/suite_$1.err" || status=1
  echo "suite $1 wall_s $(seconds_since "$start")" | tee -a "$OUT/times.txt"
  cp "$BUILD/runs-$1/suite-$4/verdicts.jsonl" "$OUT/suite_$1_verdicts.jsonl" 2>/dev/null
  tail -4 "$OUT/suite_$1.txt"
}

if want suite; then
step "built-in suite: Triton candidates, this kbench beside the earlier one; then CUDA candidates"
for round in 1 2; do
  suite "triton_$round" "$BUILD/kbench" "$BUILD/cache" triton
  [ -x "$OLD/kbench" ] && suite "triton_old_$round" "$OLD/kbench" "$OLD/cache" triton
done
want suite_cuda && suite cuda "$BUILD/kbench" "$BUILD/cache" cuda
fi

FULL=${KBENCH_FULL_JSONL:-$ROOT/local/kernelbench_full.jsonl}
if want interrupt; then
step "interruption on the GPU: the built-in CUDA suite, SIGINT during an evaluation, then resumed"
run_dir=$BUILD/runs-interrupt/int
rm -rf "$BUILD/runs-interrupt"
"$BUILD/kbench" eval --candidates builtin:cuda --runs-dir "$BUILD/runs-interrupt" --run int \
  > "$OUT/interrupt_1.txt" 2> "$OUT/interrupt_1.err" &
pid=$!
for _ in $(seq 1 600); do
  n=$("$PYTHON" -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('select count(*) from attempts where count>0').fetchone()[0])
except Exception: print(0)" "$run_dir/kbench.db" 2>/dev/null)
  [ "${n:-0}" -gt 0 ] && break
  sleep 0.2
done
sleep 2
kill -INT $pid
wait $pid
echo "interrupt rc $? (want 130)" | tee -a "$OUT/times.txt"
sleep 1
echo "workers left: $(pgrep -f '[k]bench_worker' | wc -l)" | tee -a "$OUT/times.txt"
"$PYTHON" -c "import sqlite3,sys
d=sqlite3.connect(sys.argv[1]); print('verdicts', d.execute('select count(*) from verdicts').fetchone()[0], 'attempts left', d.execute('select coalesce(sum(count),0) from attempts').fetchone()[0])" "$run_dir/kbench.db" | tee -a "$OUT/times.txt"
tail -5 "$OUT/interrupt_1.err"
"$BUILD/kbench" eval --candidates builtin:cuda --runs-dir "$BUILD/runs-interrupt" --run int \
  > "$OUT/interrupt_2.txt" 2> "$OUT/interrupt_2.err"
echo "resumed rc $? (want 0)" | tee -a "$OUT/times.txt"
head -12 "$OUT/interrupt_2.txt"
fi

if want refine; then
step "refine on the GPU: a scripted model (no code first, then the suite's CUDA candidate, ${KBENCH_MODEL_DELAY:-3} s an answer) over the suite's level 1"
rm -rf "$BUILD/runs-refine"
mkdir -p "$BUILD/runs-refine"
"$PYTHON" bench/llm/refine_script.py cuda "${KBENCH_MODEL_DELAY:-3}" > "$BUILD/runs-refine/script.json"
"$PYTHON" tests/llm/fake_llm_server.py --script "$BUILD/runs-refine/script.json" \
  --log "$OUT/refine_requests.jsonl" > "$BUILD/runs-refine/port.txt" &
server=$!
sleep 1
port=$(awk '{print $2}' "$BUILD/runs-refine/port.txt")
export NO_PROXY=127.0.0.1
start=$(now)
"$BUILD/kbench" refine --provider vllm --model scripted --base-url "http://127.0.0.1:$port/v1" \
  --level 1 --turns 3 --concurrency 3 --device cuda \
  --runs-dir "$BUILD/runs-refine" --run refine > "$OUT/refine.txt" 2> "$OUT/refine.err"
echo "refine rc $? (want 0) wall_s $(seconds_since "$start")" | tee -a "$OUT/times.txt"
cp "$BUILD/runs-refine/refine/refine.json" "$OUT/" 2>/dev/null
# When each answer came and each evaluation ran: the overlap of model and GPU.
"$PYTHON" - "$BUILD/runs-refine/refine/kbench.db" <<'PY' | tee -a "$OUT/times.txt"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
calls = [json.loads(r[0]) for r in db.execute("select record from model_calls")]
model_s = sum(c["seconds"] for c in calls)
evals = [json.loads(r[0]) for r in db.execute("select verdict from verdicts")]
eval_s = sum(sum(v.get("phases_s", {}).values()) for v in evals)
print(f"model answers {len(calls)} taking {model_s:.1f} s in all; evaluations {len(evals)} "
      f"taking {eval_s:.1f} s in all")
PY
cat "$OUT/refine.txt"
tail -20 "$OUT/refine.err"
# What a correct candidate's feedback says on a GPU (the kernel table among it).
"$PYTHON" -c "import json,sys
for line in open(sys.argv[1]):
    m = json.loads(line)['body']['messages']
    if len(m) == 5:
        print(m[-1]['content']); break" "$OUT/refine_requests.jsonl" | tee "$OUT/refine_feedback.txt"
kill $server 2>/dev/null
fi

if want audit; then
step "audit: level 1 convolutions' references against float64, TF32 as PyTorch leaves it and off"
if [ -f "$FULL" ]; then
  for tf32 in default off; do
    timeout 300 "$BUILD/kbench" dataset audit --dataset "$FULL" --level 1 \
      --problems "${KBENCH_AUDIT_PROBLEMS:-58,67,75,81}" --trials 1 --tf32 $tf32 --json \
      > "$OUT/audit_tf32_$tf32.jsonl" 2> "$OUT/audit_tf32_$tf32.err" || status=1
    cat "$OUT/audit_tf32_$tf32.jsonl"
  done
else
  echo "no $FULL: skipping the audit"
fi
fi

if want ipc; then
step "ipc: CUDA IPC from a process in an IPC namespace of its own"
"$PYTHON" "$ROOT/tests/gpu/cuda_ipc_namespace.py" 2>&1 | tee "$OUT/ipc.txt"
fi

if want layers; then
step "layers: the machine's cgroups, and which Landlock rule keeps CUDA from starting"
{
  echo "own cgroup: $(cat /proc/self/cgroup | tr '\n' ' ')"
  for f in cgroup.controllers cgroup.subtree_control cgroup.type; do
    echo "/sys/fs/cgroup/$f: $(cat /sys/fs/cgroup/$f 2>&1)"
  done
  own=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
  for f in cgroup.controllers cgroup.subtree_control cgroup.procs; do
    echo "$own/$f: $(cat "$own/$f" 2>&1 | tr '\n' ' ' | cut -c1-300)"
  done
  "$PYTHON" "$ROOT/tests/gpu/landlock_cuda.py"
} 2>&1 | tee "$OUT/layers_probe.txt"
fi

if want bandwidth; then
step "bandwidth: a 4 GiB device copy"
"$PYTHON" "$ROOT/bench/floor/bandwidth.py" 2>&1 | tee "$OUT/bandwidth.json"
fi

if want health; then
step "health: kbench dataset audit (constant, all-zero-passing, nondeterministic references)"
if [ -f "$FULL" ]; then
  for level in ${KBENCH_HEALTH_LEVELS:-1 2 3}; do
    start=$(now)
    timeout -s INT -k 15 "${KBENCH_HEALTH_SECONDS:-400}" "$BUILD/kbench" dataset audit \
      --dataset "$FULL" --level "$level" --seeds 5 --trials 1 --json \
      > "$OUT/health_l$level.jsonl" 2> "$OUT/health_l$level.err"
    echo "health level $level rc $? wall_s $(seconds_since "$start") rows $(wc -l < "$OUT/health_l$level.jsonl")" | tee -a "$OUT/times.txt"
    grep -h '"flags": *\[ *"' "$OUT/health_l$level.jsonl" | "$PYTHON" -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(r["level"], r["problem_id"], r["name"], r["health"]["flags"])'
  done
else
  echo "no $FULL: skipping the health audit"
fi
fi

if want agreement; then
step "agreement: public model-written candidates with official verdicts (kbench eval --no-timing)"
SET=${KBENCH_AGREEMENT_SET:+_$KBENCH_AGREEMENT_SET}
CANDS=$ROOT/local/agreement/candidates$SET.jsonl
if [ -f "$CANDS" ] && [ -f "$FULL" ]; then
  start=$(now)
  timeout -s INT -k 15 "${KBENCH_AGREEMENT_SECONDS:-1800}" "$BUILD/kbench" eval --dataset "$FULL" \
    --candidates "$CANDS" --no-timing --runs-dir "$BUILD/runs-agreement" --run "agreement$SET" \
    > "$OUT/agreement.txt" 2> "$OUT/agreement.err"
  echo "agreement rc $? wall_s $(seconds_since "$start")" | tee -a "$OUT/times.txt"
  # Every verdict the store holds, also when the time limit stopped the run.
  "$PYTHON" - "$BUILD/runs-agreement/agreement$SET/kbench.db" "$OUT/agreement_verdicts.jsonl" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT verdict FROM verdicts").fetchall()
open(sys.argv[2], "w").writelines(r[0] + "\n" for r in rows)
print(len(rows), "verdicts stored")
PY
  "$PYTHON" "$ROOT/bench/agreement/confusion.py" "$OUT/agreement_verdicts.jsonl" \
    "$OUT/agreement.md" "$ROOT/local/agreement/selected$SET.jsonl" | head -40
  tail -3 "$OUT/agreement.err"
else
  echo "no $CANDS (bench/agreement/prepare.py makes it): skipping the agreement run"
fi
fi
exit $status
