"""The identity table: for each identity candidate and each way of timing, the speedups of its
separate runs, their spread (max/min - 1) and how many of the reported 95% intervals contain 1.

    python3 bench/timing/table.py RUNS_DIR

RUNS_DIR holds runs named rounds-K and apart-K (bench/timing/run.sh makes them).
"""

import collections
import glob
import json
import os
import sys


def main(runs):
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(glob.glob(os.path.join(runs, "*", "verdicts.jsonl"))):
        mode = os.path.basename(os.path.dirname(path)).split("-")[0]
        for line in open(path):
            v = json.loads(line)
            key = f"{v['problem']['level']}/{v['problem']['id']}"
            by[mode][key].append(v)
    for mode in sorted(by):
        print(f"\n## {mode}\n")
        print("| problem | baseline median | runs | speedups | spread | intervals holding 1 |")
        print("|---|---|---|---|---|---|")
        total = holding = 0
        long_spreads = []
        for key in sorted(by[mode], key=lambda k: tuple(map(int, k.split("/")))):
            vs = [v for v in by[mode][key] if v.get("speedup")]
            if not vs:
                print(f"| {key} | | 0 | {by[mode][key][0]['status']}: "
                      f"{by[mode][key][0]['reason'][:60]} | | |")
                continue
            speedups = [v["speedup"] for v in vs]
            inside = sum(1 for v in vs if v.get("speedup_ci95") and
                         v["speedup_ci95"][0] <= 1.0 <= v["speedup_ci95"][1])
            total += len(vs)
            holding += inside
            base = vs[0]["baseline"]["median_us"]
            spread = max(speedups) / min(speedups) - 1
            if base >= 100:
                long_spreads.append(spread)
            print(f"| {key} | {base:.1f} us | {len(vs)} | "
                  f"{', '.join(f'{s:.3f}' for s in speedups)} | {100 * spread:.2f}% | "
                  f"{inside}/{len(vs)} |")
        if total:
            print(f"\n{mode}: {holding}/{total} intervals hold 1.0 ({100 * holding / total:.0f}%); "
                  f"largest spread of kernels of at least 100 us: "
                  f"{100 * max(long_spreads, default=0):.2f}%")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
