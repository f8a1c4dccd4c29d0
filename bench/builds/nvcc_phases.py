"""Where nvcc's time goes in one candidate's CUDA file, step by step, and what running its
device and host chains side by side, or a lighter header, would save.

    python3 bench/builds/nvcc_phases.py local/builds/candidates.jsonl OUT_DIR \
        [--names l1_p1_s0,l1_p19_s0] [--limit N] [--ways light,per_op] [--runs R] \
        [--no-parallel] [--header-only] [--census] [--check] [--sources FILE]

For each candidate (its CUDA sources taken from its load_inline call, written as load_inline
writes them, as bench/builds/nvcc_headers.py does) and each way of making its torch/types.h:

- light: the header kbench's build wrapper makes today (kbench_worker/extensions.py,
  light_header: ATen/core/Tensor.h, the dispatch macros, ATen/TensorOperators.h, the operators
  the code calls);
- per_op: the same header with AT_PER_OPERATOR_HEADERS defined around ATen/TensorOperators.h
  alone, which then includes ATen/ops/empty_like.h instead of all of ATen/Functions.h (the
  tensor operators it defines call Tensor's methods and at::empty_like, nothing else);
- lean_ops: per_op, and for each ATen/ops/<name>.h it includes (and empty_like.h) a file of
  that name first on the include path: PyTorch's own inline wrappers of the operator, including
  ATen/core/Tensor.h, TensorOptions and ATen/ops/<name>_ops.h instead of ATen/Context.h and the
  rest (see shadows());

it runs, with the flags PyTorch gives load_inline (nvcc -c, one GPU target, sm_90 unless
TORCH_CUDA_ARCH_LIST says otherwise):

1. `nvcc -c` as PyTorch runs it (wall time);
2. the steps of `nvcc --dryrun --keep` one after another, each timed: host-E (gcc -E for the
   host), cudafe++, device-E (gcc -E with __CUDA_ARCH__), cicc, ptxas, fatbinary, host-cc
   (gcc -c of the .cudafe1.cpp, which includes cicc's .stub.c, which includes the .fatbin.c);
3. `parallel`: the device chain (device-E, cicc, ptxas, fatbinary) beside the host chain
   (host-E, cudafe++), then host-cc; cicc makes the module id itself (--gen_module_id_file;
   it is the same as cudafe++'s, checked);
4. `parallel_fifo`: the same, and host-cc starts as soon as cudafe++ is done, its
   #include "X.cudafe1.stub.c" a named pipe that is written (cicc's stub) once fatbinary is
   done, so that gcc parses the headers while the device chain runs.

Every object is compared with nvcc's own (same_object: the .nv_fatbin bytes, symbols, section
sizes and disassembly, nvcc's tmpxft_ file names taken out; nvcc's own objects differ in those
names from run to run). At most two compiler processes run at once (the parallel modes), all under nice.

--header-only times the steps for a trivial kernel under bare headers (cuda_runtime.h,
ATen/core/TensorBase.h, ATen/core/Tensor.h, the light header's base without operators),
to price the base header by itself. --census counts, over all candidates' CUDA sources, the
patterns that a TensorBase-only header would break. --check runs only host-E and cudafe++ (the
front end) for every candidate (or --names) and way: whether the header declares what the code
uses. --sources caches the probed CUDA sources (the probe imports torch once a candidate).

Writes OUT_DIR/nvcc_phases.jsonl (a line a candidate, way and mode) and prints tables.
Compiles only, so it needs no GPU.
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "..", "build", "python"))

import nvcc_headers  # noqa: E402  (cuda_sources, torch_cuda_flags, torch_include, PRELUDE)

NICE = ["nice", "-n", "10"]
STEPS = ["host-E", "cudafe++", "device-E", "cicc", "ptxas", "fatbinary", "host-cc"]


# ---------------------------------------------------------------------------------- headers

def header(way, sources, include):
    from kbench_worker import extensions

    text = extensions.light_header(sources, include)
    if way == "light":
        return text
    if way in ("per_op", "lean_ops"):
        return text.replace(
            "#include <ATen/TensorOperators.h>\n",
            "#ifndef AT_PER_OPERATOR_HEADERS\n#define AT_PER_OPERATOR_HEADERS\n"
            "#include <ATen/TensorOperators.h>\n#undef AT_PER_OPERATOR_HEADERS\n"
            "#else\n#include <ATen/TensorOperators.h>\n#endif\n")
    raise SystemExit(f"unknown way {way}")


def shadows(way, text, include):
    """lean_ops: for each ATen/ops/<name>.h the header includes (and empty_like.h, which
    ATen/TensorOperators.h includes), a file of the same name first on the include path with
    the same inline functions, but including only ATen/core/Tensor.h, c10's TensorOptions and
    ATen/ops/<name>_ops.h (the operator's declaration) instead of ATen/Context.h,
    ATen/TensorUtils.h, ATen/DeviceGuard.h and the rest that PyTorch's per-operator header
    brings."""
    if way != "lean_ops":
        return {}
    names = set(re.findall(r"#include <ATen/ops/(\w+)\.h>", text)) | {"empty_like"}
    files = {}
    for name in sorted(names):
        if not os.path.isfile(os.path.join(include, "ATen", "ops", name + "_ops.h")):
            continue  # hand-written (ATen/ops/tensor.h): PyTorch's own
        original = open(os.path.join(include, "ATen", "ops", name + ".h")).read()
        body = "\n".join(line for line in original.splitlines()
                         if not line.startswith("#include") and not line.startswith("#pragma once"))
        files[f"ATen/ops/{name}.h"] = (
            "#pragma once\n#include <ATen/core/Tensor.h>\n#include <c10/core/TensorOptions.h>\n"
            "#include <c10/core/SymIntArrayRef.h>\n#include <c10/util/OptionalArrayRef.h>\n"
            f"#include <optional>\n#include <string_view>\n#include <ATen/ops/{name}_ops.h>\n" + body + "\n")
    return files


# Headers alone, with one trivial kernel (the --header-only table).
BARE = {
    "cuda_runtime": [],
    "TensorBase": ["ATen/core/TensorBase.h"],
    "TensorBase+dispatch": ["ATen/core/TensorBase.h", "ATen/Dispatch.h",
                            "c10/core/TensorOptions.h", "c10/util/Exception.h"],
    "Tensor+dispatch": ["ATen/core/Tensor.h", "ATen/Dispatch.h", "c10/core/TensorOptions.h",
                        "c10/util/Exception.h"],
    "Tensor+dispatch+empty_like": ["ATen/core/Tensor.h", "ATen/Dispatch.h",
                                   "c10/core/TensorOptions.h", "c10/util/Exception.h",
                                   "ATen/ops/empty_like.h"],
    "light_base(Functions.h)": ["ATen/core/Tensor.h", "ATen/Dispatch.h",
                                "ATen/TensorOperators.h", "c10/core/TensorOptions.h",
                                "c10/util/Exception.h"],
}
TRIVIAL = """
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
"""


# ---------------------------------------------------------------------------------- steps

def run(argv, env, cwd, stdout=subprocess.DEVNULL):
    started = time.monotonic()
    done = subprocess.run(NICE + argv, env=env, cwd=cwd, stdout=stdout,
                          stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {done.stderr[-1500:]}")
    return seconds


def dryrun(command, folder, keep):
    """nvcc's steps: (environment, [(step name, argv)])."""
    done = subprocess.run(command + ["--dryrun", "--keep", "--keep-dir", keep],
                          cwd=folder, capture_output=True, text=True)
    env = dict(os.environ)
    steps = []
    for line in done.stderr.splitlines():
        if not line.startswith("#$ "):
            continue
        line = line[3:]
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if m:
            rest = m.group(2).strip()
            env[m.group(1)] = " ".join(shlex.split(rest)) if rest else ""
            continue
        argv = shlex.split(line)
        argv[0] = argv[0].replace("$CICC_PATH", env.get("CICC_PATH", ""))
        tool = os.path.basename(argv[0])
        if tool in ("gcc", "g++", "c++", "cc") or tool.endswith(("-gcc", "-g++")):
            if "-E" in argv:
                name = "device-E" if any(a.startswith("-D__CUDA_ARCH__=") for a in argv) \
                    else "host-E"
            else:
                name = "host-cc"
        else:
            name = tool
        steps.append((name, argv))
    names = [s[0] for s in steps]
    if sorted(names) != sorted(STEPS):
        raise RuntimeError(f"unexpected nvcc steps: {names}")
    return env, steps


def arg_after(argv, flag):
    return argv[argv.index(flag) + 1]


def sequential(env, steps, folder):
    times = {}
    for name, argv in steps:
        times[name] = run(argv, env, folder)
    return times


def parallel(env, steps, folder, fifo):
    """Device chain beside host chain, then host-cc; with fifo, host-cc starts after cudafe++
    and reads cicc's stub through a named pipe written after fatbinary."""
    by = dict(steps)
    cicc = list(by["cicc"])
    i = cicc.index("--module_id_file_name")
    cicc[i + 1] = cicc[i + 1] + ".dev"
    cicc.insert(i, "--gen_module_id_file")
    stub = arg_after(cicc, "--stub_file_name")            # where host-cc includes it from
    real_stub = stub + ".real.c"
    if fifo:
        cicc[cicc.index("--stub_file_name") + 1] = real_stub
    marks = {}
    errors = []
    cudafe_done = threading.Event()
    start = time.monotonic()

    def host():
        try:
            run(by["host-E"], env, folder)
            marks["host-E"] = time.monotonic() - start
            run(by["cudafe++"], env, folder)
            marks["cudafe++"] = time.monotonic() - start
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        cudafe_done.set()

    def device():
        try:
            for name in ("device-E",):
                run(by[name], env, folder)
                marks[name] = time.monotonic() - start
            run(cicc, env, folder)
            marks["cicc"] = time.monotonic() - start
            for name in ("ptxas", "fatbinary"):
                run(by[name], env, folder)
                marks[name] = time.monotonic() - start
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=host), threading.Thread(target=device)]
    if fifo:
        path = os.path.join(folder, stub)
        if os.path.exists(path):
            os.remove(path)
        os.mkfifo(path)
    for t in threads:
        t.start()
    if fifo:
        cudafe_done.wait()
        cc = subprocess.Popen(NICE + by["host-cc"], env=env, cwd=folder,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threads[1].join()
        text = open(os.path.join(folder, real_stub)).read().replace(real_stub, stub)
        with open(path, "w") as pipe:  # blocks until gcc opens it
            marks["stub opened"] = time.monotonic() - start
            pipe.write(text)
        _, err = cc.communicate()
        if cc.returncode != 0:
            errors.append(RuntimeError("host-cc failed: " + err[-1500:]))
        threads[0].join()
    else:
        for t in threads:
            t.join()
        if not errors:
            run(by["host-cc"], env, folder)
    marks["host-cc"] = time.monotonic() - start
    if errors:
        raise errors[0]
    host_id = open(os.path.join(folder, arg_after(by["cudafe++"], "--module_id_file_name"))).read()
    dev_id = open(os.path.join(folder, cicc[cicc.index("--module_id_file_name") + 1])).read()
    marks["module_id_same"] = host_id == dev_id
    return marks


def _normal(text):
    # nvcc names its own temporary files (tmpxft_<pid>_00000000-6_cuda.cudafe1.cpp) in the
    # object's file symbol and static constructor; --keep names them cuda.cudafe1.cpp.
    return re.sub(r"tmpxft_[0-9a-f]+_[0-9a-f]+[-_][0-9]+_", "", text)


def _section(path, name):
    out = tempfile.mktemp()
    subprocess.run(["objcopy", "-O", "binary", "--only-section=" + name, path, out],
                   capture_output=True)
    data = open(out, "rb").read() if os.path.exists(out) else b""
    if os.path.exists(out):
        os.remove(out)
    return data


def same_object(a, b):
    """Whether two objects are the same but for nvcc's temporary file names: the embedded
    device code (.nv_fatbin) byte for byte, the symbols, every section's size, and the
    disassembly of the host code."""
    def view(path):
        nm = subprocess.run(["nm", path], capture_output=True, text=True).stdout
        size = subprocess.run(["size", "-A", path], capture_output=True, text=True).stdout
        dis = subprocess.run(["objdump", "-d", "-r", path], capture_output=True, text=True).stdout
        dis = "\n".join(dis.splitlines()[2:])
        return _normal(nm), _normal(size).split("\n", 1)[1], _normal(dis)
    return _section(a, ".nv_fatbin") == _section(b, ".nv_fatbin") and \
        len(_section(a, ".nv_fatbin")) > 0 and view(a) == view(b)


def measure(name, way, text, sources_text, nvcc, cflags, post, work, modes, runs):
    folder = os.path.join(work, f"{name}_{way}")
    os.makedirs(os.path.join(folder, "inc", "torch"), exist_ok=True)
    for rel, content in shadows(way, text, nvcc_headers.torch_include()).items():
        os.makedirs(os.path.dirname(os.path.join(folder, "inc", rel)), exist_ok=True)
        open(os.path.join(folder, "inc", rel), "w").write(content)
    with open(os.path.join(folder, "inc", "torch", "types.h"), "w") as f:
        f.write(text)
    with open(os.path.join(folder, "inc", "torch", "extension.h"), "w") as f:
        f.write("#pragma once\n#include <torch/types.h>\n")
    with open(os.path.join(folder, "cuda.cu"), "w") as f:
        f.write(sources_text)
    def nvcc_command(out):
        return nvcc + ["-I" + os.path.join(folder, "inc")] + cflags + \
            ["-c", os.path.join(folder, "cuda.cu"), "-o", out] + post

    command = nvcc_command(os.path.join(folder, "nvcc.o"))
    rows = []
    for r in range(runs):
        row = {"candidate": name, "way": way, "run": r}
        try:
            row["nvcc"] = round(run(command, None, folder), 2)
        except RuntimeError as e:
            rows.append(dict(row, error=str(e)[-600:]))
            return rows
        row["ii_bytes"] = None
        row["fatbin_sha"] = hashlib.sha256(
            _section(os.path.join(folder, "nvcc.o"), ".nv_fatbin")).hexdigest()[:16]
        if "steps" in modes:
            keep = os.path.join(folder, "keep")
            shutil.rmtree(keep, ignore_errors=True)
            os.makedirs(keep)
            env, steps = dryrun(nvcc_command(os.path.join(folder, "steps.o")), folder, keep)
            times = sequential(env, steps, folder)
            row.update({k: round(v, 2) for k, v in times.items()})
            row["steps_sum"] = round(sum(times.values()), 2)
            row["steps_same_object"] = same_object(os.path.join(folder, "nvcc.o"),
                                                   os.path.join(folder, "steps.o"))
            row["ii_bytes"] = os.path.getsize(os.path.join(keep, "cuda.cpp4.ii"))
        for mode in ("parallel", "parallel_fifo"):
            if mode not in modes:
                continue
            keep = os.path.join(folder, "keep_" + mode)
            shutil.rmtree(keep, ignore_errors=True)
            os.makedirs(keep)
            out = os.path.join(folder, mode + ".o")
            env, steps = dryrun(nvcc_command(out), folder, keep)
            marks = parallel(env, steps, folder, mode == "parallel_fifo")
            row[mode] = round(marks["host-cc"], 2)
            row[mode + "_marks"] = {k: (round(v, 2) if isinstance(v, float) else v)
                                    for k, v in marks.items()}
            row[mode + "_same_object"] = same_object(os.path.join(folder, "nvcc.o"), out)
        rows.append(row)
    return rows


def front_end(name, way, text, src, nvcc, cflags, post, work):
    """host-E and cudafe++ alone: the front end's errors, without the device chain."""
    folder = os.path.join(work, f"{name}_{way}_check")
    os.makedirs(os.path.join(folder, "inc", "torch"), exist_ok=True)
    for rel, content in shadows(way, text, nvcc_headers.torch_include()).items():
        os.makedirs(os.path.dirname(os.path.join(folder, "inc", rel)), exist_ok=True)
        open(os.path.join(folder, "inc", rel), "w").write(content)
    open(os.path.join(folder, "inc", "torch", "types.h"), "w").write(text)
    open(os.path.join(folder, "inc", "torch", "extension.h"), "w").write(
        "#pragma once\n#include <torch/types.h>\n")
    open(os.path.join(folder, "cuda.cu"), "w").write(src)
    command = nvcc + ["-I" + os.path.join(folder, "inc")] + cflags + \
        ["-c", os.path.join(folder, "cuda.cu"), "-o", os.path.join(folder, "x.o")] + post
    keep = os.path.join(folder, "keep")
    os.makedirs(keep, exist_ok=True)
    env, steps = dryrun(command, folder, keep)
    started = time.monotonic()
    row = {"candidate": name, "way": way, "check": True, "ok": True}
    try:
        for step, argv in steps:
            if step in ("host-E", "cudafe++"):
                run(argv, env, folder)
    except RuntimeError as e:
        row["ok"] = False
        row["error"] = re.sub(r"/tmp/kbench-phases-\w+/", "", str(e))[-800:]
    row["seconds"] = round(time.monotonic() - started, 2)
    shutil.rmtree(folder, ignore_errors=True)
    return row


# ---------------------------------------------------------------------------------- census

def census(all_sources):
    """What a TensorBase-only header would break: uses of Tensor's own methods (those
    TensorBody.h declares and TensorBase.h does not), of functions returning Tensor, of
    Tensor as a type by value (which needs the complete class)."""
    include = nvcc_headers.torch_include()
    body = open(os.path.join(include, "ATen", "core", "TensorBody.h")).read()
    base = open(os.path.join(include, "ATen", "core", "TensorBase.h")).read()
    method = re.compile(r"^\s+(?:inline\s+)?(?:[\w:<>,\s&*]+?)\s+&?\*?(\w+)\s*\(", re.M)
    body_methods = set(method.findall(body))
    base_methods = set(method.findall(base))
    only_tensor = body_methods - base_methods - {"operator", "Tensor", "TensorBase", "if",
                                                  "return", "while", "for", "switch"}
    counts = {}
    per_candidate = {}
    ops = os.path.join(include, "ATen", "ops")
    kinds = {"names Tensor": 0, "calls torch::/at:: ops": 0, "Tensor-only methods": 0,
             "any of these": 0}
    for name, text in all_sources:
        names_tensor = bool(re.search(r"\b(?:torch|at)\s*::\s*Tensor\b", text))
        qualified_ops = {n for n in re.findall(r"\b(?:torch|at)\s*::\s*([a-z_][a-z0-9_]*)\s*\(",
                                                text)
                         if os.path.isfile(os.path.join(ops, n + ".h"))}
        kinds["names Tensor"] += names_tensor
        kinds["calls torch::/at:: ops"] += bool(qualified_ops)
        used = set(re.findall(r"[\w\)\]]\s*(?:\.|->)\s*([a-z_][a-z0-9_]*)\s*(?:<[^<>()]*>)?\s*\(",
                              text))
        # x.size(0) etc.: methods called on anything; keep the names Tensor has, TensorBase not
        broken = sorted(used & only_tensor)
        per_candidate[name] = broken
        kinds["Tensor-only methods"] += bool(broken)
        kinds["any of these"] += bool(broken or names_tensor or qualified_ops)
        for b in broken:
            counts[b] = counts.get(b, 0) + 1
    return only_tensor, counts, per_candidate, kinds


# ---------------------------------------------------------------------------------- main

def table(rows, cols):
    print("  ".join(f"{c:>9}" if i else f"{c:26}" for i, c in enumerate(cols)))
    for r in rows:
        out = []
        for i, c in enumerate(cols):
            v = r.get(c, "")
            if i == 0:
                out.append(f"{v:26}")
            elif isinstance(v, float):
                out.append(f"{v:9.2f}")
            else:
                out.append(f"{str(v):>9}")
        print("  ".join(out), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("candidates")
    parser.add_argument("out")
    parser.add_argument("--names", default="l1_p1_s0,l1_p19_s0,l1_p23_s0")
    parser.add_argument("--limit", type=int, default=0, help="the first N candidates instead")
    parser.add_argument("--ways", default="light,per_op")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--no-parallel", action="store_true")
    parser.add_argument("--header-only", action="store_true")
    parser.add_argument("--census", action="store_true")
    parser.add_argument("--check", action="store_true",
                        help="for every candidate and way, only host-E and cudafe++ (the front "
                             "end: whether the header declares what the code uses)")
    parser.add_argument("--sources", default="",
                        help="a jsonl of {name, sources} written by an earlier run (skips the "
                             "probe of each candidate's module)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    nvcc, cflags, post = nvcc_headers.torch_cuda_flags()
    include = nvcc_headers.torch_include()
    work = tempfile.mkdtemp(prefix="kbench-phases-")
    modes = {"steps"} | (set() if args.no_parallel else {"parallel", "parallel_fifo"})
    wanted = args.names.split(",") if args.names else []
    candidates = []
    cached = {}
    if args.sources and os.path.exists(args.sources):
        for line in open(args.sources):
            d = json.loads(line)
            cached[d["name"]] = d["sources"]
    for line in open(args.candidates):
        c = json.loads(line)
        name = f"l{c['level']}_p{c['problem_id']}_s{c['sample_id']}"
        if args.census or (args.check and not wanted) or (args.limit and len(candidates) < args.limit) or name in wanted:
            sources = cached.get(name)
            if sources is None:
                sources = nvcc_headers.cuda_sources(c["code"])
                if args.sources:
                    with open(args.sources, "a") as f:
                        f.write(json.dumps({"name": name, "sources": sources}) + "\n")
            if sources:
                candidates.append((name, sources))
    results = open(os.path.join(args.out, "nvcc_phases.jsonl"), "a")
    cols = ["candidate", "way", "nvcc", "ii_bytes"] + STEPS + ["steps_sum", "parallel",
                                                             "parallel_fifo"]
    rows = []
    if args.header_only:
        for bare, headers in BARE.items():
            text = "#pragma once\n" + "".join(f"#include <{h}>\n" for h in headers)
            src = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + \
                TRIVIAL
            for r in measure("header:" + bare, "bare", text, src, nvcc, cflags, post, work,
                             {"steps"}, args.runs):
                rows.append(r)
                results.write(json.dumps(r) + "\n")
                results.flush()
                table([r], cols)
    if args.census:
        only_tensor, counts, per, kinds = census([(n, "\n".join(s)) for n, s in candidates])
        broken = [n for n, b in per.items() if b]
        summary = {"census": True, "candidates": len(per), "broken": len(broken),
                   "methods": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
                   "per_candidate": per, "kinds": kinds}
        results.write(json.dumps(summary) + "\n")
        print(f"TensorBase-only: {len(broken)}/{len(per)} candidates' CUDA sources call "
              f"Tensor methods TensorBase lacks")
        for k, v in kinds.items():
            print(f"  {k}: {v}/{len(per)} candidates")
        for m, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {m:24} {n}")
        candidates = [c for c in candidates if c[0] in wanted]
    if args.check:
        for name, sources in candidates:
            src = nvcc_headers.PRELUDE + "\n".join(sources)
            for way in args.ways.split(","):
                r = front_end(name, way, header(way, sources, include), src, nvcc, cflags,
                              post, work)
                results.write(json.dumps(r) + "\n")
                results.flush()
                print(f"{name:16} {way:8} {'ok' if r['ok'] else 'FAILED'} {r['seconds']:6.2f} s "
                      f"{r.get('error', '')[:160]!r}", flush=True)
        return
    if wanted or args.limit:
        for name, sources in candidates:
            src = nvcc_headers.PRELUDE + "\n".join(sources)
            for way in args.ways.split(","):
                text = header(way, sources, include)
                for r in measure(name, way, text, src, nvcc, cflags, post, work, modes,
                                 args.runs):
                    rows.append(r)
                    results.write(json.dumps(r) + "\n")
                    results.flush()
                    table([r], cols)
    print()
    table(rows, cols)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
