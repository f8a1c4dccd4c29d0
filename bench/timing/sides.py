"""Both sides of each identity run on the GPU: the speedup against the ratio of the two sides'
kernel time a call, from the kernel records (the candidate's `kernel_activity`, over its
correctness and timing calls; the baseline's `kernels`, over its warm-up and rounds). When a run's
speedup is off and the kernel ratio is off with it, the GPU ran the same kernels slower on one
side (where the work sits in memory, say); when the kernels agree, the difference is outside
them (launches, the CPU).

    python3 bench/timing/sides.py RUNS_DIR

RUNS_DIR holds runs named rounds-K (bench/timing/run.sh makes them).
"""

import collections
import glob
import json
import os
import sys


def per_call(kernel_us, calls):
    return kernel_us / calls if calls else None


def main(runs):
    rows = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(runs, "rounds-*", "verdicts.jsonl"))):
        run = os.path.basename(os.path.dirname(path))
        for line in open(path):
            v = json.loads(line)
            key = f"{v['problem']['level']}/{v['problem']['id']}"
            rows[key].append((run, v))
    print("| problem | run | speedup | candidate kernels a call | baseline's | baseline / candidate |"
          " kernels (candidate, baseline) |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(rows, key=lambda k: tuple(map(int, k.split("/")))):
        for run, v in rows[key]:
            activity = v.get("kernel_activity") or {}
            base = (v.get("baseline") or {}).get("kernels") or {}
            mine = per_call(activity.get("kernel_us", 0), activity.get("calls", 0))
            theirs = per_call(base.get("kernel_us", 0), base.get("calls", 0))
            ratio = theirs / mine if mine and theirs else None
            speedup = v.get("speedup")
            print(f"| {key} | {run} | {speedup:.4f} | " if speedup else f"| {key} | {run} | "
                  f"{v['status']} | ", end="")
            print(f"{mine:.1f} us | " if mine else "| ", end="")
            print(f"{theirs:.1f} us | " if theirs else "| ", end="")
            print(f"{ratio:.4f} | " if ratio else "| ", end="")
            print(f"{activity.get('kernels', '')}, {len(base.get('kernels', []))} |")


if __name__ == "__main__":
    main(sys.argv[1])
