#!/usr/bin/env bash
# KernelBench's analysis (scripts/benchmark_eval_analysis.py) against
# tests/python/kernelbench_analysis.py on the same eval results, side by side.
#
#   bench/analysis/compare.sh RUN_FOLDER LEVEL BASELINE_FILE
#
# RUN_FOLDER holds eval_results.json (KernelBench's format); BASELINE_FILE is a baseline timing
# JSON ({"level1": {"<problem file>": {"mean": ms, ...}}}). Needs bench/analysis/setup.sh run
# first (or KBENCH_HARNESS_DIR, a tree of the harness, and KBENCH_ANALYSIS_PYTHON, a Python
# that imports its kernelbench package, pydra and tabulate). The re-implementation takes the
# level's problems from KBENCH_KERNELBENCH_JSONL (default ../shared/kernelbench/kernelbench.jsonl
# beside the checkout). Exits 1 when any number differs by more than 1e-9, or a key is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 3 ] || { echo "usage: $0 RUN_FOLDER LEVEL BASELINE_FILE" >&2; exit 2; }
RUN=$(cd "$1" && pwd)
LEVEL=$2
BASELINE=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
HARNESS=${KBENCH_HARNESS_DIR:-$ROOT/local/kernelbench-harness}
PY=${KBENCH_ANALYSIS_PYTHON:-$ROOT/local/analysis-venv/bin/python}
JSONL=${KBENCH_KERNELBENCH_JSONL:-$ROOT/../shared/kernelbench/kernelbench.jsonl}
[ -f "$RUN/eval_results.json" ] || { echo "no eval_results.json in $RUN" >&2; exit 2; }
[ -f "$HARNESS/scripts/benchmark_eval_analysis.py" ] || {
  echo "no harness at $HARNESS: run bench/analysis/setup.sh" >&2; exit 2; }
[ -x "$PY" ] || { echo "no Python at $PY: run bench/analysis/setup.sh" >&2; exit 2; }
[ -f "$JSONL" ] || { echo "no problem set at $JSONL (set KBENCH_KERNELBENCH_JSONL)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "harness: $HARNESS ($(cat "$HARNESS/COMMIT" 2>/dev/null || echo 'commit unknown'))"
# litellm, imported by the package's __init__, otherwise tries to fetch a price list at import.
( cd "$HARNESS" && LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONPATH="$HARNESS/src" \
    "$PY" scripts/benchmark_eval_analysis.py run_name="$(basename "$RUN")" level="$LEVEL" \
    hardware=x baseline=y baseline_file="$BASELINE" eval_results_dir="$(dirname "$RUN")" \
    output_file="$TMP/reference.json" ) > "$TMP/reference.log" 2>&1 || {
  cat "$TMP/reference.log" >&2; echo "KernelBench's analysis failed" >&2; exit 1; }
grep -v "not found in baseline results" "$TMP/reference.log" || true
echo "($(grep -c 'not found in baseline results' "$TMP/reference.log" || true) problems of the level have no baseline entry)"
python3 "$ROOT/tests/python/kernelbench_analysis.py" --eval-results "$RUN/eval_results.json" \
  --baseline "$BASELINE" --level "$LEVEL" --problems-jsonl "$JSONL" > "$TMP/ours.json"

python3 - "$TMP/reference.json" "$TMP/ours.json" <<'PY'
import json, math, sys
ref = json.load(open(sys.argv[1]))
ours = json.load(open(sys.argv[2]))
keys = ["total_count", "total_eval", "compiled_count", "correct_count", "compilation_rate",
        "correctness_rate", "geo_mean_speedup"]
rows = [(k, ref.get(k), ours.get(k)) for k in keys]
for p in sorted(set(ref.get("fast_p", {})) | set(ours.get("fast_p", {})), key=float):
    rows.append((f"fast_p[{p}]", ref.get("fast_p", {}).get(p), ours.get("fast_p", {}).get(p)))
bad = 0
print(f"{'metric':<20} {'KernelBench':>24} {'re-implementation':>24} {'|diff|':>10}")
for name, a, b in rows:
    if a is None or b is None:
        same, diff = False, "missing"
    elif math.isnan(a) or math.isnan(b):
        same, diff = math.isnan(a) and math.isnan(b), "nan"
    elif a == b:
        same, diff = True, "0"
    else:
        d = abs(a - b)
        same, diff = d <= 1e-9, f"{d:.3g}"
    bad += not same
    print(f"{name:<20} {a!r:>24} {b!r:>24} {diff:>10}{'' if same else '  DIFFERENT'}")
print("all numbers agree" if not bad else f"{bad} numbers differ")
sys.exit(1 if bad else 0)
PY
