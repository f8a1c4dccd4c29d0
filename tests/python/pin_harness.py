"""Writes harness_pins.json: what the reference harness (a checkout at harness.COMMIT, given
as the first argument) makes of a few real problems, for test_rules.py to check kbench's rules
against where the harness itself cannot run (CI)."""

import json
import sys

import torch

import harness

PROBLEMS = [(1, 9), (1, 72), (1, 81), (2, 15), (3, 4), (3, 8), (3, 35)]


def main(harness_dir, problem_set, out):
    h = harness.load(harness_dir)
    problems = {(p["level"], p["problem_id"]): p for p in map(json.loads, open(problem_set))}
    torch.manual_seed(42)
    seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
    pins = {"commit": harness.COMMIT, "trial_seeds_42": seeds, "problems": PROBLEMS,
            "problem_pins": []}
    for level, pid in PROBLEMS:
        p = problems[(level, pid)]
        pins["problem_pins"].append({"level": level, "problem_id": pid, "name": p["name"],
                                     "summary": harness.harness_summary(h, p["code"])})
    json.dump(pins, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:4])
