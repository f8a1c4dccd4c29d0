"""kbench's verdicts under a device memory cap beside what the reference harness would need there.

    python3 bench/memory/caps_table.py CAP_GIB KBENCH.jsonl HARNESS.jsonl [CONTEXT_GIB]

KBENCH.jsonl: `run.sh kbench` under CAP=CAP_GIB (each verdict's status, reason, memory).
HARNESS.jsonl: `harness_peak.py` without a cap. Under a cap the harness's allocator refuses what
goes past it less its CUDA context (about 0.66 GiB on an H100): a problem whose allocated peak
is past that cannot fit, one whose reserved peak (its cache included) is within it fits for
sure, and one in between is marked "maybe" (it would have to be run under the cap). Prints a
markdown table a problem and the count of problems where the harness fits and kbench does not
give `correct`.
"""

import json
import sys

G = 1 << 30


def read(path):
    out = {}
    for line in open(path):
        v = json.loads(line)
        v = v.get("verdict", v)
        if "problem" in v and "id" in v["problem"]:
            out[(v["problem"]["level"], v["problem"]["id"])] = v
        elif "level" in v:
            out[(v["level"], v["problem_id"])] = v
    return out


def main():
    cap = float(sys.argv[1])
    kbench, harness = read(sys.argv[2]), read(sys.argv[3])
    context = float(sys.argv[4]) if len(sys.argv) > 4 else 0.66
    room = cap - context
    print(f"| problem | harness allocated / reserved, GiB (no cap) | harness at {cap:g} GiB "
          f"| kbench at {cap:g} GiB | kbench's reason |")
    print("|---|---|---|---|---|")
    short = []
    for key in sorted(kbench):
        v, h = kbench[key], harness.get(key)
        if h and h.get("max_memory_allocated") is not None:
            a, r = h["max_memory_allocated"] / G, h["max_memory_reserved"] / G
            fits = "no" if a > room else "yes" if r <= room else "maybe"
            if h.get("correctness") is not True:
                fits += f" (fails uncapped: {str(h.get('error') or h.get('metadata'))[:40]})"
            peaks = f"{a:.1f} / {r:.1f}"
        else:
            fits, peaks = "not run", "-"
        status = v["status"]
        reason = (v.get("reason") or "").split("\n")[0][:160].replace("|", "/")
        if fits.startswith(("yes", "maybe")) and status != "correct":
            short.append(f"{key[0]}/{key[1]}")
        print(f"| {key[0]}/{key[1]} {v['problem']['name']} | {peaks} | {fits} | {status} | {reason} |")
    print(f"\n{len(kbench)} problems; where the harness fits (or may) and kbench is not correct: "
          f"{len(short)} ({', '.join(short) or 'none'})")


if __name__ == "__main__":
    main()
