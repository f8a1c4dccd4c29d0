"""Prepares the agreement set for the GPU machine, from public KernelBench runs collected in
local/agreement/ (official.jsonl: one row a candidate with its official verdict; runs/<run>/:
the candidates in KernelBench's run layout; SOURCES.md: where they come from).

Writes, all git-ignored:
  local/agreement/candidates.jsonl  {level, problem_id, sample_id, code}, for kbench eval
  local/agreement/selected.jsonl    the official row of each, with the sample_id given it
  local/agreement/candidates_l23.jsonl, selected_l23.jsonl   their level 2-3 part
  local/kernelbench_full.jsonl      the KernelBench problem set, for the device

  python3 bench/agreement/prepare.py [PROBLEM_SET] [--per-level L2=30,L3=24]
"""

import collections
import json
import os
import random
import shutil
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LOCAL = os.path.join(ROOT, "local")
AGREEMENT = os.path.join(LOCAL, "agreement")


def main(problem_set, quotas):
    rows = [json.loads(line) for line in open(os.path.join(AGREEMENT, "official.jsonl"))]
    rng = random.Random(10)
    chosen = []
    for level in (1, 2, 3):
        at_level = [r for r in rows if r["level"] == level]
        quota = quotas.get(level)
        if quota is None or quota >= len(at_level):
            chosen += at_level
            continue
        # Two officially correct for each incorrect one: rejecting honest kernels is the risk.
        good = [r for r in at_level if r["correctness"]]
        bad = [r for r in at_level if not r["correctness"]]
        rng.shuffle(good)
        rng.shuffle(bad)
        n_good = min(len(good), (2 * quota + 2) // 3)
        chosen += good[:n_good] + bad[:quota - n_good]
    samples = collections.Counter()
    # The whole selection, and its level 2-3 part apart.
    files = [open(os.path.join(AGREEMENT, name), "w") for name in (
        "candidates.jsonl", "selected.jsonl", "candidates_l23.jsonl", "selected_l23.jsonl")]
    for r in sorted(chosen, key=lambda r: (r["level"], r["problem_id"], r["run"])):
        key = (r["level"], r["problem_id"])
        sample = samples[key]
        samples[key] += 1
        name = f"level_{r['level']}_problem_{r['problem_id']}_sample_{r['sample_id']}_kernel.py"
        code = open(os.path.join(AGREEMENT, "runs", r["run"], name)).read()
        cand = json.dumps({"level": r["level"], "problem_id": r["problem_id"],
                           "sample_id": sample, "code": code}) + "\n"
        sel = json.dumps(dict(r, kbench_sample_id=sample)) + "\n"
        for f, line in zip(files, (cand, sel) * 2 if r["level"] >= 2 else (cand, sel)):
            f.write(line)
    for f in files:
        f.close()
    shutil.copyfile(problem_set, os.path.join(LOCAL, "kernelbench_full.jsonl"))
    count = collections.Counter((r["level"], r["correctness"]) for r in chosen)
    print(f"{len(chosen)} candidates:", dict(sorted(count.items())))


if __name__ == "__main__":
    args = sys.argv[1:]
    problem_set = args[0] if args and not args[0].startswith("--") else os.path.join(
        ROOT, "..", "shared", "kernelbench", "kernelbench.jsonl")
    quotas = {2: 30, 3: 24}
    if "--per-level" in args:
        spec = args[args.index("--per-level") + 1]
        quotas = {int(k[1:]): int(v) for k, v in (item.split("=") for item in spec.split(","))}
    main(problem_set, quotas)
