"""Compares the two evals of bench/builds/run.sh: status per candidate (they must agree), and the
build phase's seconds.

    python3 bench/builds/compare.py RESULTS_DIR
"""

import collections
import json
import os
import statistics
import sys


def load(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        v = json.loads(line)
        key = (v["problem"].get("level"), v["problem"].get("id"), v["candidate"].get("sample_id"))
        out[key] = v
    return out


def describe(name, verdicts):
    builds = [v["phases_s"]["build"] for v in verdicts.values() if "build" in v.get("phases_s", {})]
    statuses = collections.Counter(v["status"] for v in verdicts.values())
    line = f"{name}: {dict(sorted(statuses.items()))}"
    if builds:
        line += (f"; build phase median {statistics.median(builds):.1f} s, mean "
                 f"{statistics.mean(builds):.1f} s, max {max(builds):.1f} s over {len(builds)}")
    print(line)


def main(res):
    new = load(os.path.join(res, "support.verdicts.jsonl"))
    old = load(os.path.join(res, "as-written.verdicts.jsonl"))
    describe("with the build support", new)
    wide = load(os.path.join(res, "wide.verdicts.jsonl"))
    if wide:
        describe("every builder from the start", wide)
    if not old:
        return
    describe("as written", old)
    differ = [(k, old[k]["status"], new[k]["status"]) for k in sorted(set(old) & set(new), key=str)
              if old[k]["status"] != new[k]["status"]]
    print(f"status differs for {len(differ)} of {len(set(old) & set(new))} candidates")
    for k, a, b in differ:
        print(f"  level {k[0]} problem {k[1]}: as written {a} ({old[k]['reason'][:120]}), "
              f"with the support {b} ({new[k]['reason'][:120]})")


if __name__ == "__main__":
    main(sys.argv[1])
