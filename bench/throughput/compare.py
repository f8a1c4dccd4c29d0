"""Summarises a bench/throughput/run.sh run: both tools' verdicts side by side and their rates.

    python3 compare.py RESULTS_DIR
"""
import json
import pathlib
import re
import sys

res = pathlib.Path(sys.argv[1])
# times.txt: one "key value" per line; the harness may have run in several segments (CONTINUE=1).
entries = [line.split() for line in (res / "times.txt").read_text().splitlines() if line.strip()]
times = dict(entries)
kb_wall = float(times.get("kbench_wall_s", "nan"))
h_segments = [float(v) for k, v in entries if k == "harness_wall_s"]
h_wall = sum(h_segments) if h_segments else float("nan")
h_cut = any(k == "harness_rc" and v == "124" for k, v in entries)

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
      + (f" (cut short; {len(h_segments)} segment(s))" if h_cut else ""))
if h_rate > 0:
    print(f"ratio: {kb_rate / h_rate:.1f}x the candidates per hour")


def harness_phases():
    """From the first segment's log and its line times: when the builds ended (the first batch
    began) and how long each evaluation took, as the harness itself reports them."""
    log = res / "harness_1.log"
    if not log.exists():
        return None, []
    lines = log.read_text(errors="replace").replace("\r", "\n").split("\n")
    seen = []  # (seconds, lines so far) for segment 1
    for row in (res / "harness_lines.txt").read_text().splitlines():
        seg, t, c = row.split()
        if seg == "1":
            seen.append((float(t), int(c)))
    builds_end = None
    for i, line in enumerate(lines):
        if "[Curr Batch]" in line:
            builds_end = next((t for t, c in seen if c > i), None)
            break
    evals = []
    for path in sorted(res.glob("harness_*.log")):
        for line in path.read_text(errors="replace").replace("\r", "\n").split("\n"):
            m = re.search(r"\[Curr batch\] Evaluation took ([\d.]+) seconds", line)
            if m:
                evals.append(float(m.group(1)))
    return builds_end, evals


if h_cut and kbench:
    builds_end, evals = harness_phases()
    if builds_end is not None and evals:
        n = len(kbench)
        mean = sum(evals) / len(evals)
        projected = builds_end + sum(evals) + (n - len(evals)) * mean
        print(f"harness, measured phases: builds of all {n} in {builds_end:.0f} s; "
              f"{len(evals)} evaluations, {min(evals):.1f}-{max(evals):.1f} s, mean {mean:.1f} s")
        print(f"harness, projected whole run: {builds_end:.0f} + {sum(evals):.0f} + {n - len(evals)} x {mean:.1f} = "
              f"{projected:.0f} s = {n / projected * 3600:.0f} candidates/hour; "
              f"kbench {kb_rate / (n / projected * 3600):.1f}x that")
        print(f"harness, evaluation alone (builds left out): {3600 / mean:.0f} candidates/hour; "
              f"kbench {kb_rate / (3600 / mean):.1f}x that")
