"""The confusion table of official verdicts (the reference harness, on the GPU the run was made
on) against kbench's, from local/agreement/selected.jsonl and a kbench eval's verdicts.jsonl.

  python3 bench/agreement/confusion.py VERDICTS.jsonl [OUT.md]

Prints (and writes) the table, then one line per disagreement with kbench's reason and, where it
happened, its fp64 arbitration, for the explanation column to be filled in by a person.
"""

import collections
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STATUSES = ["correct", "incorrect", "compile_error", "load_error", "runtime_error", "timeout",
            "crash", "rejected", "infra_error"]


def official_label(row):
    if row["correctness"]:
        return "correct"
    return "not compiled" if not row["compiled"] else "compiled, not correct"


def main(verdicts_path, out_path=None):
    selected = {(r["level"], r["problem_id"], r["kbench_sample_id"]): r
                for r in map(json.loads, open(os.path.join(ROOT, "local", "agreement",
                                                           "selected.jsonl")))}
    verdicts = {}
    for line in open(verdicts_path):
        v = json.loads(line)
        key = (v["problem"]["level"], v["problem"]["id"], v["candidate"]["sample_id"])
        verdicts[key] = v
    table = collections.Counter()
    lines = []
    missing = 0
    for key, row in sorted(selected.items()):
        v = verdicts.get(key)
        status = v["status"] if v else "not evaluated"
        if not v:
            missing += 1
        label = official_label(row)
        table[(label, status)] += 1
        agree = (label == "correct") == (status == "correct")
        if v and not agree:
            arbitration = v["correctness"].get("arbitration")
            lines.append(f"| {row['level']}/{row['problem_id']} | {row['run']} | {label} | "
                         f"{status} | {v['reason'][:220].replace('|', '/')} | "
                         f"{json.dumps(arbitration) if arbitration else ''} |")
    rows = ["correct", "compiled, not correct", "not compiled"]
    cols = [s for s in STATUSES + ["not evaluated"] if any(table[(r, s)] for r in rows)]
    out = ["| official \\ kbench | " + " | ".join(cols) + " | total |",
           "|---|" + "---|" * (len(cols) + 1)]
    for r in rows:
        out.append(f"| {r} | " + " | ".join(str(table[(r, c)]) for c in cols) +
                   f" | {sum(table[(r, c)] for c in cols)} |")
    out += ["", f"{len(selected)} candidates, {len(verdicts)} verdicts, {missing} not evaluated",
            "", "| problem | run | official | kbench | kbench's reason | arbitration |",
            "|---|---|---|---|---|---|"] + lines
    text = "\n".join(out) + "\n"
    print(text)
    if out_path:
        open(out_path, "w").write(text)


if __name__ == "__main__":
    main(*sys.argv[1:3])
