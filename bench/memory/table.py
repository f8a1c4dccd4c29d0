"""Peak device memory a problem, kbench beside the reference harness, as bench/memory/run.sh
wrote them: kbench's verdicts (each with `memory`) and harness_peak.py's lines.

    python3 bench/memory/table.py KBENCH.jsonl HARNESS.jsonl > table.md

Columns (GiB): one call's inputs and outputs (kbench's plan), kbench's status and each party's
peak (the judge's PyTorch and shared buffers, the sandboxes' allocators as they reported them,
the device's whole use as the judge saw it at replies), the plan's total, the harness's verdict
and its peaks (allocator; its process's whole use, context included: NVML's per-process figure
where the harness ran beside other problems, else the device's whole use); last, kbench's
device peak less the harness's and one output: at most 0 is what kbench is asked for.
"""

import json
import sys

GIB = 2 ** 30


def gib(x):
    return f"{x / GIB:.2f}" if isinstance(x, (int, float)) else "-"


def main(kbench_path, harness_path):
    kb = {}
    for line in open(kbench_path):
        v = json.loads(line)
        kb[(v["problem"]["level"], v["problem"]["id"])] = v
    hs = {}
    for line in open(harness_path):
        h = json.loads(line)
        hs[(h["level"], h["problem_id"])] = h
    print("| problem | in | out | kbench | judge | cand. | ref. sandbox | device | plan | "
          "harness | alloc | device | kbench - (harness + out) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    over = within = 0
    for key in sorted(set(kb) | set(hs)):
        v, h = kb.get(key), hs.get(key)
        m = (v or {}).get("memory") or {}
        plan = m.get("plan") or {}
        problem = plan.get("problem") or {}
        name = (v or {}).get("problem", {}).get("name") or (h or {}).get("name")
        status = v["status"] if v else "-"
        if h is None:
            verdict = "-"
        elif h.get("oom"):
            verdict = "out of memory"
        elif h.get("error"):
            verdict = "error"
        else:
            verdict = "correct" if h.get("correctness") else "incorrect"
        excess = "-"
        harness_device = None
        if h:
            harness_device = h.get("process_peak_used") or (
                None if h.get("shared_device") else h.get("device_peak_used"))
        if m.get("device_peak") and harness_device:
            d = m["device_peak"] - harness_device - problem.get("outputs", 0)
            excess = gib(d)
            over += d > 0
            within += d <= 0
        print(f"| {key[0]}/{key[1]} {name} | {gib(problem.get('inputs'))} | "
              f"{gib(problem.get('outputs'))} | {status} | {gib(m.get('judge_peak'))} | "
              f"{gib(m.get('candidate_sandbox_peak'))} | {gib(m.get('reference_sandbox_peak'))} | "
              f"{gib(m.get('device_peak'))} | {gib(plan.get('total'))} | {verdict} | "
              f"{gib((h or {}).get('max_memory_reserved'))} | "
              f"{gib(harness_device)} | {excess} |")
    print(f"\nkbench's device peak within the harness's and one output: {within}; beyond: {over}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
