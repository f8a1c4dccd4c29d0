"""Summarises a bench/throughput/run.sh run: both tools' verdicts side by side and their rates.

    python3 compare.py RESULTS_DIR
"""
import json
import pathlib
import re
import sys

res = pathlib.Path(sys.argv[1])
times = dict(line.split() for line in (res / "times.txt").read_text().splitlines() if line.strip())
kb_wall = float(times.get("kbench_wall_s", "nan"))
h_wall = float(times.get("harness_wall_s", "nan"))

kbench = {}
path = res / "kbench_verdicts.jsonl"
if path.exists():
    for line in path.read_text().splitlines():
        v = json.loads(line)
        kbench[v["problem"]["id"]] = v
harness = {}
path = res / "harness_eval_results.json"
if path.exists():
    for pid, entries in json.loads(path.read_text()).items():
        harness[int(pid)] = entries[0]


def kb_text(v):
    if v is None:
        return "-"
    t = v.get("timing") or {}
    return v["status"] + (f" {t['mean_us']:.0f} us" if t.get("mean_us") else "")


def h_text(e):
    if e is None:
        return "-"
    if not e["compiled"]:
        return "compile/eval failed"
    if not e["correctness"]:
        return "incorrect or error"
    return f"correct {e['runtime'] * 1000:.0f} us" if e.get("runtime", -1) > 0 else "correct"


agree = 0
print(f"{'problem':>7}  {'kbench':<28} {'reference harness':<28}")
for pid in sorted(set(kbench) | set(harness)):
    k, h = kbench.get(pid), harness.get(pid)
    if k is not None and h is not None:
        agree += (k["status"] == "correct") == bool(h["compiled"] and h["correctness"])
    print(f"{pid:>7}  {kb_text(k):<28} {h_text(h):<28}")
both = len(set(kbench) & set(harness))
print()
print(f"correct/not correct agree on {agree} of {both} candidates both evaluated")
kb_rate = len(kbench) / kb_wall * 3600 if kbench else 0.0
h_rate = len(harness) / h_wall * 3600 if harness else 0.0
print(f"kbench:            {len(kbench)} candidates in {kb_wall:.1f} s = {kb_rate:.0f} candidates/hour")
print(f"reference harness: {len(harness)} candidates in {h_wall:.1f} s = {h_rate:.0f} candidates/hour"
      + (" (cut short)" if times.get("harness_rc") == "124" else ""))
if h_rate > 0:
    print(f"ratio: {kb_rate / h_rate:.1f}x the candidates per hour")
