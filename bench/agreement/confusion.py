"""The confusion table of official verdicts (the reference harness, on the GPU the run was made
on) against kbench's, from local/agreement/selected.jsonl and a kbench eval's verdicts.jsonl.

  python3 bench/agreement/confusion.py VERDICTS.jsonl [OUT.md [SELECTED.jsonl]]

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


def main(verdicts_path, out_path=None, selected_path=None):
    selected_path = selected_path or os.path.join(ROOT, "local", "agreement", "selected.jsonl")
    selected = {(r["level"], r["problem_id"], r["kbench_sample_id"]): r
                for r in map(json.loads, open(selected_path))}
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
    # The decoy check: each candidate whose own kernels took under 1% and were knocked out.
    knocked = []
    for key, row in sorted(selected.items()):
        v = verdicts.get(key)
        k = v and isinstance(v.get("kernel_activity"), dict) and v["kernel_activity"].get("knockout")
        if k:
            share = v["kernel_activity"].get("candidate_share", 0)
            knocked.append(f"| {row['level']}/{row['problem_id']} | {row['run']} | "
                           f"{official_label(row)} | {v['status']} | {100 * share:.2f}% | "
                           f"{'changed' if k['changed'] else 'same'} if decided: "
                           f"{k['decided']} | {k['detail'][:160].replace('|', '/')} |")
    if knocked:
        out += ["", "Knocked out (own kernels under 1% of the kernel time):", "",
                "| problem | run | official | kbench | own share | outputs | detail |",
                "|---|---|---|---|---|---|---|"] + knocked
    text = "\n".join(out) + "\n"
    print(text)
    if out_path:
        open(out_path, "w").write(text)


if __name__ == "__main__":
    main(*sys.argv[1:4])
