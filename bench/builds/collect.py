"""Collects the batch for the build and throughput measurement: model-written level 1 and 2 CUDA
candidates (load_inline) from public KernelBench runs, one a problem, into the git-ignored
local/builds/candidates.jsonl ({level, problem_id, sample_id, code}, what `kbench eval
--candidates` reads). The candidates are not in this repository; SOURCES.md beside the output
names the repository, commit and path of each.

    python3 bench/builds/collect.py MIRROR [--per-level 40]

MIRROR: a git directory of github.com/technoabsurdist/KernelBench (a fork of KernelBench, MIT),
whose runs/{gemini,qwencoder}_level{1,2}_run hold model-written candidates.
"""

import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNS = ["gemini_level{}_run", "qwencoder_level{}_run"]


def git(mirror, *args):
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, text=True,
                          check=True).stdout


def main(mirror, per_level):
    commit = git(mirror, "rev-parse", "HEAD").strip()
    names = git(mirror, "ls-tree", "-r", "--name-only", "HEAD", "runs").splitlines()
    out_dir = os.path.join(ROOT, "local", "builds")
    os.makedirs(out_dir, exist_ok=True)
    rows, sources = [], []
    for level in (1, 2):
        taken = 0
        for problem in range(1, 101):
            if taken >= per_level:
                break
            for run in RUNS:
                path = f"runs/{run.format(level)}/level_{level}_problem_{problem}_sample_0_kernel.py"
                if path not in names:
                    continue
                code = git(mirror, "show", f"HEAD:{path}")
                if "load_inline" not in code or "cuda_sources" not in code:
                    continue
                rows.append({"level": level, "problem_id": problem, "sample_id": 0, "code": code})
                sources.append(f"| {level} | {problem} | {path} | "
                               f"{hashlib.sha256(code.encode()).hexdigest()[:16]} |")
                taken += 1
                break
    with open(os.path.join(out_dir, "candidates.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(out_dir, "SOURCES.md"), "w") as f:
        f.write(f"technoabsurdist/KernelBench at {commit}\n\n| level | problem | path | sha256 |\n"
                "|---|---|---|---|\n" + "\n".join(sources) + "\n")
    print(f"{len(rows)} candidates in {out_dir}/candidates.jsonl")


if __name__ == "__main__":
    args = sys.argv[1:]
    per = 40
    if "--per-level" in args:
        i = args.index("--per-level")
        per = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        raise SystemExit(__doc__)
    main(args[0], per)
