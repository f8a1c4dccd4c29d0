"""Identity candidates for the timing check: each is its reference with `class ModelNew(Model)`
added, so its true speedup is exactly 1. Writes a candidate file for `kbench eval --candidates`.

    python3 bench/timing/identity.py PROBLEMS.jsonl OUT.jsonl [L/P ...]

Default problems: ten over levels 1-3 (below). Run them with --policy permissive: an identity
candidate has no kernel of its own, which the integrity rules would reject.
"""

import json
import sys

DEFAULT = ["1/1", "1/4", "1/19", "1/23", "1/40", "1/50", "2/1", "2/12", "3/1", "3/11"]


def write_candidates(problems, out, wanted, samples):
    """One candidate a (level/problem, sample) pair: samples(problem row) yields
    (sample_id, code)."""
    rows = {}
    for line in open(problems):
        p = json.loads(line)
        rows[f"{p['level']}/{p['problem_id']}"] = p
    with open(out, "w") as f:
        for key in wanted:
            p = rows[key]
            for sample, code in samples(p):
                f.write(json.dumps({"level": p["level"], "problem_id": p["problem_id"],
                                    "sample_id": sample, "code": code}) + "\n")


def main(problems, out, wanted):
    identity = "\n\n\nclass ModelNew(Model):\n    pass\n"
    write_candidates(problems, out, wanted, lambda p: [(0, p["code"].rstrip() + identity)])
    print(f"{len(wanted)} identity candidates in {out}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:] or DEFAULT)
