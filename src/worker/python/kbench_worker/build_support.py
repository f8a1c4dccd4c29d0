"""Makes kbench's build support: what every candidate's extension build reuses, made once per
toolchain by kbench itself (never by a builder, which runs candidate code).

    python3 -m kbench_worker.build_support OUT_DIR cpu|cuda

Writes into OUT_DIR (which must not exist yet, or be empty):

- pch/O0, pch/O2, pch/O3: kbench_torch_extension.h and its GCC precompiled header (.gch):
  `#include <torch/extension.h>` compiled once with the host flags PyTorch gives a load_inline
  build, at no optimisation and at -O2 and -O3 (the levels candidates ask for; GCC takes a
  precompiled header only at the level it was made at). A build that includes this header first
  (`-include`, which is what load_inline's main.cpp does with torch/extension.h as its first line
  anyway) reads the compiled form instead of parsing PyTorch's headers again. GCC ignores a
  precompiled header whose flags do not match and parses the text, which is the same header:
  the result is the same either way.
- CUDA files get no shared header: the wrapper (kbench_worker/extensions.py) writes each build a
  torch/types.h made for its code. The manifest names that way ("cuda_header"), so that a change
  of it changes every build key.
- cuda/identifiers.txt (a GPU's support): every identifier of what PyTorch's torch/types.h and
  torch/extension.h bring into a CUDA file as load_inline writes it (nvcc -E, macros kept). A
  build with the light header that failed only on identifiers none of these declares fails as
  written too, and is not built again.
- manifest.json: the compilers, the flags, PyTorch's version and the SHA-256 of every file;
  printed on stdout too. kbench folds it into every build's cache key.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

PCH_HEADER = "kbench_torch_extension.h"
# A precompiled header a level of optimisation: the flags added to PyTorch's.
PCH_LEVELS = {"O0": [], "O2": ["-O2"], "O3": ["-O3"]}

# How CUDA files are built with the support (the manifest says it; extensions.py does it).
CUDA_HEADER = ("light 2: ATen's Tensor, the dispatch macros and the operators the code calls, "
               "each through a header of fewer includes")


class _Written(Exception):
    """Raised where PyTorch would run ninja: the build file is all that is needed."""


def _ninja_variables(path):
    values = {}
    for line in open(path):
        if " = " in line and not line.startswith((" ", "\t", "rule ", "build ")):
            name, value = line.rstrip("\n").split(" = ", 1)
            values[name.strip()] = value
    return values


def _torch_flags(with_cuda, work):
    """The variables of the build file PyTorch writes for a load_inline build."""
    import torch.utils.cpp_extension as cpp_extension

    os.environ["TORCH_EXTENSIONS_DIR"] = work
    # Without a GPU PyTorch needs the targets named; the host flags do not depend on them.
    if with_cuda:
        os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    real = cpp_extension._run_ninja_build

    def stop(build_directory, verbose, error_prefix):
        raise _Written(build_directory)

    cpp_extension._run_ninja_build = stop
    try:
        cpp_extension.load_inline(name="kbench_flags", cpp_sources="", functions=None,
                                  with_cuda=with_cuda)
    except _Written as written:
        return _ninja_variables(os.path.join(str(written), "build.ninja"))
    finally:
        cpp_extension._run_ninja_build = real
    raise RuntimeError("PyTorch built the probe extension without writing a build file")


def _without_extension_name(flags):
    return [f for f in flags if not f.startswith("-DTORCH_EXTENSION_NAME=")]


def _version(command):
    try:
        out = subprocess.run(command + ["--version"], capture_output=True, text=True, timeout=60)
        lines = [line for line in out.stdout.splitlines() if line.strip()]
        return lines[-1] if "nvcc" in command[0] else (lines[0] if lines else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cuda_identifiers(variables, folder):
    """cuda/identifiers.txt: the identifiers of load_inline's CUDA prelude with PyTorch's own
    torch/extension.h, preprocessed by nvcc with the flags PyTorch gives it (macros kept)."""
    os.makedirs(folder)
    probe = os.path.join(folder, "probe.cu")
    with open(probe, "w") as f:
        f.write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
                "#include <torch/extension.h>\n")
    nvcc = shlex.split(variables.get("nvcc", "nvcc"))
    flags = _without_extension_name(shlex.split(variables.get("cuda_cflags", "")))
    post = _without_extension_name(shlex.split(variables.get("cuda_post_cflags", "")))
    done = subprocess.run(nvcc + flags + ["-DTORCH_EXTENSION_NAME=kbench_probe", "-E",
                                          "-Xcompiler", "-dD", probe] + post,
                          capture_output=True, text=True)
    os.remove(probe)
    if done.returncode != 0:
        raise SystemExit("kbench build support: nvcc -E of torch/extension.h failed:\n" +
                         done.stderr[-4000:])
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", done.stdout))
    with open(os.path.join(folder, "identifiers.txt"), "w") as f:
        f.write("\n".join(sorted(names)) + "\n")


def make(out, device):
    import torch

    os.makedirs(out, exist_ok=True)
    if os.listdir(out):
        raise SystemExit(f"kbench build support: {out} is not empty")
    with_cuda = device == "cuda"
    work = tempfile.mkdtemp(prefix="kbench-flags-")
    started = time.monotonic()
    try:
        variables = _torch_flags(with_cuda, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cxx = shlex.split(variables.get("cxx", "c++"))
    cflags = _without_extension_name(shlex.split(variables.get("cflags", "")))
    post = _without_extension_name(shlex.split(variables.get("post_cflags", "")))

    compiles = []
    for level, flags in PCH_LEVELS.items():
        os.makedirs(os.path.join(out, "pch", level))
        header = os.path.join(out, "pch", level, PCH_HEADER)
        with open(header, "w") as f:
            f.write("#include <torch/extension.h>\n")
        command = cxx + cflags + flags + ["-x", "c++-header", header, "-o", header + ".gch"] + post
        compiles.append(subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True))
    for compiling in compiles:
        _, err = compiling.communicate()
        if compiling.returncode != 0:
            raise SystemExit("kbench build support: a precompiled header failed:\n" + err[-4000:])

    if with_cuda:
        _cuda_identifiers(variables, os.path.join(out, "cuda"))

    files = {}
    for root, _, names in os.walk(out):
        for name in names:
            path = os.path.join(root, name)
            os.chmod(path, 0o444)
            files[os.path.relpath(path, out)] = _sha256(path)
    for root, dirs, _ in os.walk(out):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    os.chmod(out, 0o755)
    nvcc = variables.get("nvcc", "")
    manifest = {
        "version": 2,
        "device": device,
        "torch": torch.__version__,
        "cxx": _version(cxx[:1]),
        "nvcc": _version(shlex.split(nvcc)[:1]) if nvcc else "",
        "cflags": cflags + post,
        "cuda_header": CUDA_HEADER if with_cuda else "",
        "cuda_cflags": _without_extension_name(shlex.split(variables.get("cuda_cflags", ""))),
        "files": dict(sorted(files.items())),
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    os.chmod(os.path.join(out, "manifest.json"), 0o444)
    print(json.dumps(manifest))
    print(f"made in {time.monotonic() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in ("cpu", "cuda"):
        raise SystemExit("usage: python3 -m kbench_worker.build_support OUT_DIR cpu|cuda")
    make(sys.argv[1], sys.argv[2])
