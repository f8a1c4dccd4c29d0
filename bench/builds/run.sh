#!/usr/bin/env bash
# Build times and throughput on a GPU machine, in one call (carry local/builds, local/debs and
# local/kernelbench.jsonl):
#   phases      lone builds of the first PHASE_COUNT candidates (default 3), as written and with
#               kbench's build support (PHASE_WAYS, default as_written,support): ninja's time
#               for host compile, nvcc and link.
#   throughput  kbench eval over local/builds/candidates.jsonl from an empty build cache, with
#               --no-build-support (builds as written) and with the support, side by side; the
#               support is made before the clock starts, and the time it took reported apart.
#
#   support     makes the support before the clock starts (phases does too)
#
#   OUT=dir bench/builds/run.sh [support] [phases] [throughput] [wide] [old]
#
# "wide" runs the support's eval again from an empty cache with --builders $(nproc): every
# builder from the start, where the default starts half of them until the first build is done.
# "old" runs the as-written eval too (it takes about five minutes for 50 candidates); DEADLINE_S
# (seconds from the start) cuts either eval short with SIGINT, and its rate is then what it
# finished over the time it ran. COUNT takes the first COUNT candidates only; EVAL_ARGS are added
# to both evals (-v: where each candidate's time went, in $name.err).
# Results: $OUT/builds.txt, $OUT/builds.tar.gz.
set -uo pipefail
T0=$(date +%s)
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEST=${OUT:-$ROOT/bench/out}
BUILD=${KBENCH_GPU_BUILD:-$ROOT/build-gpu}
PYTHON=${KBENCH_PYTHON:-$(command -v python3)}
STEPS=${*:-phases throughput old}
want() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
WORK=$BUILD/builds-bench
RES=$WORK/results
rm -rf "$WORK" && mkdir -p "$RES" "$DEST"
trap 'tar czf "$DEST/builds.tar.gz" -C "$RES" . ; cp "$RES/builds.txt" "$DEST/" 2>/dev/null' EXIT
CANDS=$ROOT/local/builds/candidates.jsonl
if [ -n "${COUNT:-}" ]; then head -"$COUNT" "$CANDS" > "$WORK/batch.jsonl"; CANDS=$WORK/batch.jsonl; fi
DATA=$ROOT/local/kernelbench.jsonl
[ -f "$CANDS" ] || { echo "no $CANDS: run bench/builds/collect.py"; exit 2; }
# kbench and its worker module are all this needs: the tests are not built.
[ -x "$BUILD/kbench" ] || KBENCH_BUILD_TARGETS="kbench _kbench_worker" OUT=$BUILD/build-out bash tests/gpu/run.sh build > "$RES/build.txt" 2>&1 || { tail -30 "$RES/build.txt"; exit 2; }
N=$(wc -l < "$CANDS")
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "cores $(nproc); $("$PYTHON" -c 'import torch; print("torch", torch.__version__)'); $(nvcc --version | tail -1)"
  echo "candidates: $N ($(cut -c1-30 "$CANDS" | sort | uniq -c | tr '\n' ' '))"
} | tee "$RES/builds.txt"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)
export TMPDIR=$WORK/tmp && mkdir -p "$TMPDIR" && chmod 1777 "$TMPDIR"

since() { "$PYTHON" -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$1"; }
support_dir() { ls -d "$1"/support/*/ 2>/dev/null | head -1; }

# The support is made by a one-problem eval into the cache (then its build is removed).
CACHE=$WORK/cache
make_support() {
  local start; start=$(date +%s.%N)
  head -1 "$CANDS" > "$WORK/one.jsonl"
  # Problem 1 of level 1 alone: the other problems' missing candidates cost nothing, but noise.
  "$BUILD/kbench" eval --dataset "$DATA" --candidates "$WORK/one.jsonl" --runs-dir "$WORK/runs" \
    --run make-support --level 1 --problems 1 --cache-dir "$CACHE" --no-timing -q > "$RES/support.log" 2>&1
  echo "build support made in $(since "$start") s (one eval of one candidate included): $(support_dir "$CACHE")" | tee -a "$RES/builds.txt"
  grep -h "build support" "$RES/support.log" | tee -a "$RES/builds.txt"
  find "$CACHE" -mindepth 1 -maxdepth 1 ! -name support -exec rm -rf {} +
}
# Without phases or support, the first eval makes the support itself and says how long that took.
{ want phases || want support; } && make_support

if want phases; then
  echo; echo "## lone builds (TORCH_CUDA_ARCH_LIST=$ARCH)" | tee -a "$RES/builds.txt"
  TORCH_CUDA_ARCH_LIST=$ARCH "$PYTHON" bench/builds/phases.py "$CANDS" "$BUILD/python" \
    "$(support_dir "$CACHE")" "${PHASE_COUNT:-3}" 2> "$RES/phases.err" | tee -a "$RES/builds.txt"
fi

evaluate() {  # NAME CACHE SECONDS [ARGS...]: SECONDS (0: none) cuts it short with SIGINT
  local name=$1 cache=$2 limit=$3; shift 3
  local start; start=$(date +%s.%N)
  local cut=()
  [ "$limit" -gt 0 ] && cut=(timeout -s INT "$limit")
  "${cut[@]}" "$BUILD/kbench" eval --dataset "$DATA" --candidates "$CANDS" --runs-dir "$WORK/runs" \
    --run "$name" --level 1 --level 2 --cache-dir "$cache" "$@" ${EVAL_ARGS:-} > "$RES/$name.out" 2> "$RES/$name.err"
  local rc=$?
  local s; s=$(since "$start")
  cp "$WORK/runs/$name/verdicts.jsonl" "$RES/$name.verdicts.jsonl" 2>/dev/null
  local done; done=$(grep -c '"status"' "$RES/$name.verdicts.jsonl" 2>/dev/null || echo 0)
  local made; made=$(grep -ho "made the build support in [0-9.]* s" "$RES/$name.err" | grep -o "[0-9.]*" | head -1)
  local net; net=$("$PYTHON" -c "print(round($s - float('${made:-0}'), 1))")
  echo "$name: rc $rc, $done of $N candidates in $s s${made:+ ($made s of it making the build support, once)}: $("$PYTHON" -c "print(round($done * 60 / $net, 1))") a minute" | tee -a "$RES/builds.txt"
}

if want throughput; then
  echo; echo "## kbench eval from an empty build cache" | tee -a "$RES/builds.txt"
  # DEADLINE_S cuts this one short too (its rate is then what it finished over the time it ran).
  left=0
  [ -n "${DEADLINE_S:-}" ] && left=$(( DEADLINE_S - $(date +%s) + T0 - 15 ))
  evaluate support "$CACHE" "$(( left < 0 ? 1 : left ))"
  if want wide; then
    # The same from an empty cache (the support kept) with every builder from the start.
    find "$CACHE" -mindepth 1 -maxdepth 1 ! -name support -exec rm -rf {} +
    left=0
    [ -n "${DEADLINE_S:-}" ] && left=$(( DEADLINE_S - $(date +%s) + T0 - 15 ))
    evaluate wide "$CACHE" "$(( left < 0 ? 1 : left ))" --builders "$(nproc)"
  fi
  if want old; then
    # What is left of the call's time (DEADLINE_S from the script's start), less a margin.
    left=$(( ${DEADLINE_S:-100000} - $(date +%s) + T0 - 20 ))
    evaluate as-written "$WORK/cache-old" "$(( left > 0 ? left : 1 ))" --no-build-support
  fi
  "$PYTHON" bench/builds/compare.py "$RES" | tee -a "$RES/builds.txt"
  # With EVAL_ARGS=-v: where the device's time went, step by step.
  for name in support wide as-written; do
    [ -s "$RES/$name.err" ] && "$PYTHON" bench/builds/device_time.py "$RES/$name.err" | sed "s/^/$name: /" | tee -a "$RES/builds.txt"
  done
fi
