#!/usr/bin/env bash
# The cost of the trust boundary on the CPU, side by side: this kbench and an earlier one (built
# from local/old into OLD_BUILD) alternate on the same work, each with its own warm build cache.
#   bench/cost/cpu.sh OUT_DIR        (OLD_BUILD defaults to /tmp/old-build)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?give an output folder}
OLD_BUILD=${OLD_BUILD:-/tmp/old-build}
NEW=build/kbench OLD=$OLD_BUILD/kbench
PY=$(command -v python3)
mkdir -p "$OUT"
REF=tests/fixtures/references/relu_small.py CAND=tests/fixtures/cpu/honest.py
now() { date +%s%N; }
run() {  # NAME CACHE COMMAND...
  local name=$1 cache=$2; shift 2
  local start; start=$(now)
  KBENCH_CACHE=$cache "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  echo "$name rc=$? wall_s $(python3 -c "print(round(($(now) - $start) / 1e9, 2))")" | tee -a "$OUT/times.txt"
}
{ date -u +%Y-%m-%dT%H:%M:%SZ; nproc; uname -r; "$PY" -c 'import torch; print("torch", torch.__version__)'; } > "$OUT/machine.txt"
# Warm both build caches first.
run warm_new /tmp/cost-new "$NEW" check "$REF" "$CAND" --device cpu --json -q --python "$PY"
run warm_old /tmp/cost-old "$OLD" check "$REF" "$CAND" --device cpu --json -q --python "$PY"
run warm_suite_new /tmp/cost-new "$NEW" eval --device cpu --python "$PY" --runs-dir /tmp/cost-runs-new --run suite -q
run warm_suite_old /tmp/cost-old "$OLD" eval --device cpu --python "$PY" --runs-dir /tmp/cost-runs-old --run suite -q
for round in 1 2 3; do
  run "check_new_$round" /tmp/cost-new "$NEW" check "$REF" "$CAND" --device cpu --json -q --python "$PY"
  run "check_old_$round" /tmp/cost-old "$OLD" check "$REF" "$CAND" --device cpu --json -q --python "$PY"
done
for round in 1 2; do
  run "suite_new_$round" /tmp/cost-new "$NEW" eval --device cpu --python "$PY" --runs-dir /tmp/cost-runs-new --run suite --force
  run "suite_old_$round" /tmp/cost-old "$OLD" eval --device cpu --python "$PY" --runs-dir /tmp/cost-runs-old --run suite --force
done
