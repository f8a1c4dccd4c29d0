"""Where nvcc's time goes in a candidate's CUDA file, and what a lighter header saves.

    python3 bench/builds/nvcc_headers.py local/builds/candidates.jsonl OUT_DIR [--limit N] [--jobs J]

Each candidate's CUDA sources are taken from its load_inline call (the call is intercepted,
nothing is built by the candidate), written as load_inline writes them (torch/types.h first), and
compiled with the flags PyTorch gives load_inline, three ways:

- as_written: PyTorch's headers;
- shadow: torch/extension.h as torch/types.h (kbench's build support today);
- light: torch/extension.h and torch/types.h as the header kbench's build wrapper makes for the
  source (kbench_worker/extensions.py, light_header).

Writes OUT_DIR/nvcc_headers.jsonl (a line a candidate and way: seconds, success) and prints a
table. Compiles only (nvcc -c), so it needs no GPU.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
# build/python (PYTHONPATH) first: the package there has its compiled module.
sys.path.append(os.path.join(HERE, "..", "..", "build", "python"))

PRELUDE = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"


def cuda_sources(code):
    """The cuda_sources of the candidate's load_inline calls, by running its module with
    load_inline replaced (in a child process: the candidate's module is not ours)."""
    probe = r"""
import json, sys
import torch.utils.cpp_extension as ext
found = []
class Stop(Exception):
    pass
def capture(*args, **kwargs):
    cuda = kwargs.get("cuda_sources", args[2] if len(args) > 2 else None)
    if isinstance(cuda, str):
        cuda = [cuda]
    found.extend(cuda or [])
    raise Stop()
ext.load_inline = capture
try:
    exec(compile(sys.stdin.read(), "candidate", "exec"), {"__name__": "candidate"})
except BaseException:
    pass
print(json.dumps(found))
"""
    out = subprocess.run([sys.executable, "-c", probe], input=code, capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return []


def torch_cuda_flags():
    from kbench_worker import build_support

    work = tempfile.mkdtemp(prefix="kbench-flags-")
    variables = build_support._torch_flags(True, work)
    nvcc = shlex.split(variables.get("nvcc", "nvcc"))
    cflags = build_support._without_extension_name(shlex.split(variables["cuda_cflags"]))
    post = build_support._without_extension_name(shlex.split(variables["cuda_post_cflags"]))
    return nvcc, cflags + ["-DTORCH_EXTENSION_NAME=probe"], post


def torch_include():
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "include")


def light_header(sources):
    """The header kbench's build wrapper makes for these sources (kbench_worker/extensions.py)."""
    from kbench_worker import extensions

    return extensions.light_header(sources, torch_include())


def compile_one(nvcc, cflags, post, folder, way, sources):
    src = os.path.join(folder, "cuda.cu")
    with open(src, "w") as f:
        f.write(PRELUDE + "\n".join(sources))
    include = []
    if way in ("shadow", "light"):
        shadow = os.path.join(folder, way, "torch")
        os.makedirs(shadow, exist_ok=True)
        if way == "shadow":
            text = "#pragma once\n#include <torch/types.h>\n"
            open(os.path.join(shadow, "extension.h"), "w").write(text)
        else:
            text = light_header(sources)
            open(os.path.join(shadow, "extension.h"), "w").write(text)
            open(os.path.join(shadow, "types.h"), "w").write(text)
        include = ["-I" + os.path.join(folder, way)]
    command = nvcc + include + cflags + ["-c", src, "-o", os.path.join(folder, way + ".o")] + post
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - started
    return {"way": way, "ok": done.returncode == 0, "seconds": round(seconds, 2),
            "error": "" if done.returncode == 0 else done.stderr[-600:]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("candidates")
    parser.add_argument("out")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--ways", default="as_written,shadow,light")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    nvcc, cflags, post = torch_cuda_flags()
    work = tempfile.mkdtemp(prefix="kbench-nvcc-")
    tasks = []
    for line in open(args.candidates):
        c = json.loads(line)
        sources = cuda_sources(c["code"])
        if not sources:
            continue
        name = f"l{c['level']}_p{c['problem_id']}_s{c['sample_id']}"
        for way in args.ways.split(","):
            folder = os.path.join(work, name + "_" + way)
            os.makedirs(folder)
            tasks.append((name, folder, way, sources))
        if len({t[0] for t in tasks}) >= args.limit:
            break
    results = []
    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [(name, pool.submit(compile_one, nvcc, cflags, post, folder, way, sources))
                   for name, folder, way, sources in tasks]
        with open(os.path.join(args.out, "nvcc_headers.jsonl"), "w") as out:
            for name, future in futures:
                r = dict(future.result(), candidate=name)
                results.append(r)
                out.write(json.dumps(r) + "\n")
                out.flush()
                print(f"{name:16} {r['way']:10} {'ok' if r['ok'] else 'FAILED':6} {r['seconds']:7.1f} s",
                      flush=True)
    for way in args.ways.split(","):
        mine = [r for r in results if r["way"] == way]
        ok = [r["seconds"] for r in mine if r["ok"]]
        ok.sort()
        median = ok[len(ok) // 2] if ok else float("nan")
        print(f"{way:10} {len(ok)}/{len(mine)} built, median {median:.1f} s")


if __name__ == "__main__":
    main()
