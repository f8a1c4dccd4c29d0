#!/usr/bin/env bash
# kbench eval with two CPU judges, then with one, over the same 40 candidates: the built-in
# suite's 13 problems, 3 samples each and a 4th for the first. A sample is the reference itself
# as ModelNew (correct, nothing to build), so the run measures the judges, not the builders.
#
#   OUT=dir bench/multi-judge/cpu.sh [KBENCH]
#
# Writes $OUT/{judges2,judges1}.{txt,err,jsonl}, times.txt and summary.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
KBENCH=${1:-$ROOT/build/kbench}
DEST=${OUT:-$ROOT/bench/out}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kbench-multi-judge-XXXXXX")
mkdir -p "$DEST"
python3 - "$ROOT/suite/problems" "$WORK/candidates.jsonl" <<'PY'
import json, pathlib, re, sys
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("level*/*.py")):
    level, pid = int(path.parent.name[5:]), int(path.name.split("_")[0])
    for sample in range(4 if not rows else 3):
        code = path.read_text() + f"\n\nclass ModelNew(Model):\n    pass\n\n# sample {sample}\n"
        rows.append({"level": level, "problem_id": pid, "sample_id": sample, "code": code})
with open(sys.argv[2], "w") as out:
    for row in rows:
        out.write(json.dumps(row) + "\n")
print(len(rows), "candidates")
PY
{ date -u +%Y-%m-%dT%H:%M:%SZ; nproc; lscpu | grep -E "^Model name" || true; } > "$DEST/machine.txt"
: > "$DEST/times.txt"
for judges in 2 1; do
  start=$(date +%s%N)
  "$KBENCH" eval --device cpu --cpu-judges $judges --dataset builtin --candidates "$WORK/candidates.jsonl" \
    --runs-dir "$WORK/runs" --run judges$judges --max-seconds 1 > "$DEST/judges$judges.txt" 2> "$DEST/judges$judges.err"
  echo "judges$judges $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" >> "$DEST/times.txt"
  cp "$WORK/runs/judges$judges/verdicts.jsonl" "$DEST/judges$judges.jsonl"
done
python3 - "$DEST" <<'PY' | tee "$DEST/summary.txt"
import collections, json, pathlib, statistics, sys
dest = pathlib.Path(sys.argv[1])
times = dict(line.split() for line in (dest / "times.txt").read_text().splitlines())
runs = {}
for j in ("judges2", "judges1"):
    runs[j] = [json.loads(l) for l in (dest / f"{j}.jsonl").read_text().splitlines() if l.strip()]
    by = collections.Counter((v["config"]["device"], v["status"]) for v in runs[j])
    n = len(runs[j])
    print(f"{j}: {n} candidates in {times[j]} s = {n / float(times[j]) * 3600:.0f}/hour; "
          + ", ".join(f"{d} {s} {c}" for (d, s), c in sorted(by.items())))
print(f"two judges against one: {float(times['judges1']) / float(times['judges2']):.2f}x the candidates per hour")
# The same candidate's time on each judge it met (two-judge run) and with one judge.
print("problem: candidate mean us over its samples, judge (two-judge run) | one judge")
key = lambda v: (v["problem"]["level"], v["problem"]["id"])
for k in sorted({key(v) for v in runs["judges2"]}):
    two = [v for v in runs["judges2"] if key(v) == k and v.get("timing")]
    one = [v for v in runs["judges1"] if key(v) == k and v.get("timing")]
    fmt = lambda vs: f"{statistics.mean(v['timing']['mean_us'] for v in vs):.0f}" if vs else "-"
    print(f"  L{k[0]} P{k[1]}: {fmt(two)} us on {sorted({v['config']['device'] for v in two})} | {fmt(one)} us")
PY
rm -rf "$WORK"
