"""Where the device's time went in a `kbench eval -v` log (its stderr): for each candidate that
reached its sandbox, the span from the sandbox's start to its verdict, and the steps `-v` names
(the sandboxes' attach, the reference's own sandbox, correctness and timing steps, the end).

    python3 bench/builds/device_time.py EVAL_STDERR
"""

import collections
import re
import sys

LINE = re.compile(r"kbench \[([\d.]+) s\] (.*)")
SECONDS = re.compile(r"([\d.]+) s")


def steps(text):
    """'inputs 0.1 s, requests 1.2 s' -> {'inputs': 0.1, 'requests': 1.2}"""
    out = {}
    for part in text.split(", "):
        m = re.match(r"(.+) ([\d.]+) s$", part)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def main(path):
    totals = collections.Counter()
    spans = []
    current = None
    for line in open(path, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        at, text = float(m.group(1)), m.group(2)
        if text.startswith("evaluating "):
            current = {}
        if current is None:
            continue
        if re.match(r"  sandbox \d+ started in", text):
            current["start"] = at
        elif text.startswith("  sandbox attached in"):
            totals["attach (candidate's sandbox)"] += float(SECONDS.search(text).group(1))
        elif text.startswith("  the reference's own sandbox started in"):
            totals["the reference's own sandbox (start, attach, load)"] += sum(
                float(x) for x in SECONDS.findall(text))
        elif text.startswith("  sandbox detached and ended in"):
            totals["end of the sandbox"] += float(SECONDS.search(text).group(1))
        elif text.startswith("  sandboxes detached and ended in"):
            # With rounds both sandboxes end beside the judge's count of the problem's work.
            totals["end of both sandboxes, beside the floor's count"] += float(
                SECONDS.search(text).group(1))
            part = re.search(r"\(the candidate's ([\d.]+) s\).*\(([\d.]+) s\)$", text)
            if part:
                totals["  of which the candidate's end"] += float(part.group(1))
                totals["  of which the judge's count of the work"] += float(part.group(2))
        elif text.startswith("  correctness:") or text.startswith("  timed:"):
            phase = "correctness" if "correctness" in text else "timing"
            inner = text[text.find("(", text.find("checked") if phase == "timing" else 0) + 1:-1]
            for name, s in steps(inner).items():
                totals[f"{phase}: {name}"] += s
        elif re.search(r": \w+ after [\d.]+ s$", text):
            if "start" in current:
                spans.append(at - current["start"])
            current = None
    total = sum(spans)
    print(f"{len(spans)} candidates on the device, {total:.1f} s from sandbox start to verdict "
          f"({total / max(len(spans), 1):.2f} s each)")
    for name, s in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {name:55s} {s:7.2f} s")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
