#!/usr/bin/env bash
# kbench eval on two GPUs, then on each GPU alone, over the same 40 candidates: the built-in
# suite's CUDA candidates (13 problems), 3 samples each and a 4th for the first (a sample differs
# from the others by a comment, so each is built and judged on its own).
#
#   OUT=dir bench/multi-judge/gpu.sh [KBENCH]      (a machine with two GPUs)
#
# First GPU 1 alone, which also fills the build cache; then both GPUs and GPU 0 alone, from the
# warm cache, so the two-against-one ratio compares evaluation only. The same candidate's time
# on GPU 0 and on GPU 1 comes from the two single-GPU runs.
# Writes $OUT/{gpu1,both,gpu0}.{txt,err,jsonl}, times.txt and summary.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
KBENCH=${1:-$ROOT/build/kbench}
DEST=${OUT:-$ROOT/bench/out}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kbench-multi-gpu-XXXXXX")
mkdir -p "$DEST"
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] || { echo "needs two GPUs; nvidia-smi lists $(nvidia-smi -L | wc -l)"; exit 2; }
python3 - "$ROOT/suite/candidates/cuda" "$WORK/candidates.jsonl" <<'PY'
import json, pathlib, re, sys
rows = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("level_*_problem_*_sample_0_kernel.py")):
    level, pid = map(int, re.match(r"level_(\d+)_problem_(\d+)_", path.name).groups())
    for sample in range(4 if not rows else 3):
        rows.append({"level": level, "problem_id": pid, "sample_id": sample,
                     "code": path.read_text() + f"\n# sample {sample}\n"})
with open(sys.argv[2], "w") as out:
    out.writelines(json.dumps(row) + "\n" for row in rows)
print(len(rows), "candidates")
PY
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader; nproc; } > "$DEST/machine.txt"
: > "$DEST/times.txt"
for run in gpu1:1 both:0,1 gpu0:0; do
  name=${run%%:*} gpus=${run#*:}
  start=$(date +%s%N)
  "$KBENCH" eval --device cuda --gpus "$gpus" --dataset builtin --candidates "$WORK/candidates.jsonl" \
    --cache-dir "$WORK/cache" --runs-dir "$WORK/runs" --run "$name" > "$DEST/$name.txt" 2> "$DEST/$name.err"
  echo "$name $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" >> "$DEST/times.txt"
  cp "$WORK/runs/$name/verdicts.jsonl" "$DEST/$name.jsonl"
done
python3 - "$DEST" <<'PY' | tee "$DEST/summary.txt"
import collections, json, pathlib, sys
dest = pathlib.Path(sys.argv[1])
times = dict(line.split() for line in (dest / "times.txt").read_text().splitlines())
runs = {n: [json.loads(l) for l in (dest / f"{n}.jsonl").read_text().splitlines() if l.strip()]
        for n in ("gpu1", "both", "gpu0")}
for n, vs in runs.items():
    by = collections.Counter((v["config"]["device"], v["status"]) for v in vs)
    print(f"{n}: {len(vs)} candidates in {times[n]} s = {len(vs) / float(times[n]) * 3600:.0f}/hour; "
          + ", ".join(f"{d} {s} {c}" for (d, s), c in sorted(by.items())))
print(f"two GPUs against one (warm cache): {float(times['gpu0']) / float(times['both']):.2f}x the candidates per hour")
print("candidate: mean us on GPU 0 | on GPU 1 | ratio")
one = {v["candidate"]["sha256"]: v for v in runs["gpu1"]}
for v in runs["gpu0"]:
    w = one.get(v["candidate"]["sha256"])
    if v.get("timing") and w and w.get("timing"):
        a, b = v["timing"]["mean_us"], w["timing"]["mean_us"]
        print(f"  L{v['problem']['level']} P{v['problem']['id']} S{v['candidate']['sample_id']}: {a:.1f} | {b:.1f} | {a / b:.3f}")
PY
rm -rf "$WORK"
