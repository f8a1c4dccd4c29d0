"""Phase times of lone extension builds: each candidate imported in a fresh Python, as a kbench
builder does (the GPU hidden, the targets named), once as written and once with kbench's build
support; ninja's log gives each step (host compile, nvcc, link).

    python3 bench/builds/phases.py CANDIDATES.jsonl WORKER_PACKAGE SUPPORT_DIR [COUNT]

WORKER_PACKAGE: the folder holding kbench_worker (a build's python/). Prints a Markdown table.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

IMPORT = r"""
import importlib.util, os, runpy, sys
spec = importlib.util.spec_from_file_location("kbench_extensions", sys.argv[1])
extensions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(extensions)
extensions.install("", "cuda")
runpy.run_path(sys.argv[2])
"""


def steps(folder):
    out = {}
    for root, _, files in os.walk(folder):
        if ".ninja_log" not in files:
            continue
        for line in open(os.path.join(root, ".ninja_log")):
            if line.startswith("#"):
                continue
            start, end, _, target, _ = line.split("\t")
            kind = ("link" if target.endswith(".so") else
                    "nvcc" if ".cuda." in target or target.endswith(".cu.o") else "host")
            out[kind] = out.get(kind, 0) + (int(end) - int(start)) / 1000
    return out


def build(code, worker, support):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "candidate.py")
        open(path, "w").write(code)
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.join(tmp, "ext"),
                   CUDA_VISIBLE_DEVICES="", TORCH_CUDA_ARCH_LIST=os.environ.get(
                       "TORCH_CUDA_ARCH_LIST", "9.0"))
        env.pop("KBENCH_BUILD_SUPPORT", None)
        if support:
            env["KBENCH_BUILD_SUPPORT"] = support
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-c", IMPORT,
                            os.path.join(worker, "kbench_worker", "extensions.py"), path],
                           env=env, capture_output=True, text=True)
        total = time.monotonic() - start
        ok = r.returncode == 0 or "is not available" in r.stderr or "CUDA" in r.stderr[-300:]
        return total, steps(os.path.join(tmp, "ext")), r.returncode, r.stderr[-400:]


def main(candidates, worker, support, count):
    rows = [json.loads(line) for line in open(candidates)][:count]
    print("| candidate | build | host compile | nvcc | link | total (import included) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ways = (("as written", ""), ("build support", support))
        wanted = os.environ.get("PHASE_WAYS", "as_written,support").split(",")
        for label, sup in [w for w, key in zip(ways, ("as_written", "support")) if key in wanted]:
            total, s, rc, err = build(r["code"], worker, sup)
            name = f"level {r['level']} problem {r['problem_id']}"
            print(f"| {name} | {label} | {s.get('host', 0):.1f} s | {s.get('nvcc', 0):.1f} s | "
                  f"{s.get('link', 0):.1f} s | {total:.1f} s{'' if rc == 0 else ' (exit ' + str(rc) + ')'} |",
                  flush=True)
            if rc != 0:
                print("    " + err.replace("\n", "\n    "), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 3)
