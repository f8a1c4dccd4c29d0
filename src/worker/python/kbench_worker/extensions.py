"""How candidates' C++/CUDA extensions are built and loaded under kbench.

torch.utils.cpp_extension.load and load_inline are wrapped, once per process, before the
candidate is imported:

- Everywhere: extensions are linked against the libstdc++ this process has loaded. A compiler
  that links libstdc++ statically (some toolchain wrappers do) would otherwise put a second copy
  beside libtorch's, and its streams break or crash on the first number they format.
- In a sandbox: an extension that the builder already compiled is imported from the verified
  copy kbench placed in the sandbox's own folder, without running the compiler or ninja again.
  The builder compiled it from the same candidate source, so the same call names the same
  module. Anything else is built as usual, inside the sandbox's own folder.
- In a builder for a run on the CPU: a call that compiles CUDA code (load_inline's cuda_sources,
  .cu files among load's sources) raises CudaOnCpu, which the builder reports as a compile error
  that says so, rather than letting the build fail somewhere inside PyTorch for want of a GPU.
- With kbench's build support ($KBENCH_BUILD_SUPPORT, made by kbench_worker.build_support): a
  load_inline build's host code reads torch/extension.h from a precompiled header (its main.cpp
  starts with that include anyway), and CUDA files that do not use pybind11 see, for
  torch/types.h and torch/extension.h, a header made for their code (light_header: ATen's Tensor
  and the operators the code calls). Should such a build fail, it is built again as written,
  from nothing, and only that build's outcome counts.
"""

import functools
import hashlib
import importlib.util
import inspect
import os
import re
import shutil
import sys
import tempfile

_installed = False


class CudaOnCpu(RuntimeError):
    """The candidate compiles CUDA code, and the run's device is the CPU."""


def _cuda_code(arguments):
    """What of a load or load_inline call is CUDA code, for a message; "" when nothing is."""
    if arguments.get("cuda_sources"):
        return "cuda_sources in load_inline"
    sources = arguments.get("sources")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    cuda_files = [os.path.basename(os.fspath(s)) for s in sources or ()
                  if isinstance(s, (str, os.PathLike)) and
                  os.fspath(s).endswith((".cu", ".cuh"))]
    if cuda_files:
        return "CUDA file " + cuda_files[0] + " in load"
    return ""


def _cuda_texts(arguments):
    """The CUDA source text a load or load_inline call compiles."""
    texts = []
    cuda_sources = arguments.get("cuda_sources")
    if isinstance(cuda_sources, str):
        texts.append(cuda_sources)
    elif cuda_sources:
        texts += [s for s in cuda_sources if isinstance(s, str)]
    sources = arguments.get("sources")
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    for s in sources or ():
        if isinstance(s, (str, os.PathLike)) and os.fspath(s).endswith((".cu", ".cuh")):
            try:
                with open(s, errors="replace") as f:
                    texts.append(f.read())
            except OSError:
                texts.append("pybind11")  # unreadable here: no shortcut
    return texts


def _optimisation(flags):
    """The precompiled header's folder for a build's host flags: its last -O level ("O0" with
    none), or "" for a level none was made for."""
    level = "O0"
    for flag in flags if isinstance(flags, (list, tuple)) else [flags] if flags else []:
        if isinstance(flag, str) and flag.startswith("-O"):
            level = {"-O0": "O0", "-O2": "O2", "-O3": "O3"}.get(flag, "")
    return level


def _starts_with_extension_h(arguments):
    """Whether load_inline's main.cpp starts with #include <torch/extension.h>: its own first
    line, or, with no_implicit_headers, the candidate's first line of code."""
    sources = arguments.get("cpp_sources")
    if not sources:
        return False
    if not arguments.get("no_implicit_headers"):
        return True
    text = sources if isinstance(sources, str) else "\n".join(
        s for s in sources if isinstance(s, str))
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        return line.replace(" ", "") in ("#include<torch/extension.h>",
                                         '#include"torch/extension.h"')
    return False


# What PyTorch's torch/types.h declares in namespace torch besides `using namespace at`.
_TORCH_NAMESPACE = """\
namespace torch {
using namespace at;
using std::nullopt;
using std::optional;
using Dtype = at::ScalarType;
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kUInt16 = at::kUInt16;
constexpr auto kUInt32 = at::kUInt32;
constexpr auto kUInt64 = at::kUInt64;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kU8 = kUInt8;
constexpr auto kU16 = kUInt16;
constexpr auto kU32 = kUInt32;
constexpr auto kU64 = kUInt64;
constexpr auto kI8 = kInt8;
constexpr auto kI16 = kInt16;
constexpr auto kI32 = kInt32;
constexpr auto kI64 = kInt64;
constexpr auto kF16 = kFloat16;
constexpr auto kF32 = kFloat32;
constexpr auto kF64 = kFloat64;
}  // namespace torch
"""


def _aten_include():
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "include")


def light_header(texts, include):
    """torch/types.h for the CUDA code in texts: ATen's Tensor with its methods, the dispatch
    macros, c10's checks and TensorOptions, and the header of each ATen operator the code calls
    by name (torch::name(, at::name( or a bare name( that ATen has an operator of) and the
    arithmetic operators on tensors, in place of all of ATen and the autograd headers. The same
    code gives the same header."""
    ops = os.path.join(include, "ATen", "ops")
    names = set()
    for text in texts:
        names.update(re.findall(r"(?<![\w.>])(?:(?:torch|at)\s*::\s*)?([a-z_][a-z0-9_]*)\s*\(",
                                text))
    lines = [
        "// kbench: torch/types.h for this candidate's CUDA code. A build that fails with it is",
        "// built again with PyTorch's own headers.",
        "#pragma once",
        "#include <optional>",
        "#include <ATen/core/Tensor.h>",
        "#include <ATen/Dispatch.h>",
        # Tensor's arithmetic operators, with the header of the one operator they call
        # (empty_like) rather than all of ATen's (ATen/Functions.h).
        "#ifndef AT_PER_OPERATOR_HEADERS",
        "#define AT_PER_OPERATOR_HEADERS",
        "#include <ATen/TensorOperators.h>",
        "#undef AT_PER_OPERATOR_HEADERS",
        "#else",
        "#include <ATen/TensorOperators.h>",
        "#endif",
        "#include <c10/core/TensorOptions.h>",
        "#include <c10/util/Exception.h>",
    ]
    headers = set()
    for n in names:
        header = _operator_header(ops, n)
        if header:
            headers.add(header)
    lines += [f"#include <ATen/ops/{h}.h>" for h in sorted(headers)]
    return "\n".join(lines) + "\n" + _TORCH_NAMESPACE


def _operator_header(ops, name):
    """The ATen/ops header that declares at::name: its own, or for an out= or in-place form
    (add_out, add_outf, relu_) the base operator's, which declares them all; None when ATen
    has no such operator."""
    for suffix in ("", "_outf", "_out", "_"):
        if suffix and not name.endswith(suffix):
            continue
        base = name[:len(name) - len(suffix)] if suffix else name
        if base and os.path.isfile(os.path.join(ops, base + ".h")):
            return base
    return None


# What the light header would give another meaning: pybind11, and the factories PyTorch's
# torch/types.h defines in namespace torch itself (torch::tensor infers its dtype from an
# initializer list; the factories take requires_grad), which it would resolve to ATen's.
_OWN_HEADER = re.compile(r"pybind11|PYBIND11|py::|requires_grad|\btorch\s*::\s*tensor\s*\(")


def _needs_pytorchs_own_header(text):
    return bool(_OWN_HEADER.search(text))


# One header, so that a file including both includes it once.
_EXTENSION_H = "#pragma once\n#include <torch/types.h>\n"


def lean_operator_headers(header, include):
    """For each ATen/ops/<name>.h the light header includes (and empty_like.h, which
    ATen/TensorOperators.h includes), a header of that name to go first on nvcc's include path:
    PyTorch's own inline functions of the operator, but including only ATen's Tensor,
    TensorOptions and the operator's declaration (ATen/ops/<name>_ops.h) in place of
    ATen/Context.h and the rest that PyTorch's per-operator header brings. Operators without a
    generated declaration (hand-written headers) keep PyTorch's. {relative path: text}."""
    ops = os.path.join(include, "ATen", "ops")
    names = set(re.findall(r"#include <ATen/ops/(\w+)\.h>", header)) | {"empty_like"}
    out = {}
    for name in sorted(names):
        if not os.path.isfile(os.path.join(ops, name + "_ops.h")):
            continue
        with open(os.path.join(ops, name + ".h")) as f:
            original = f.read()
        body = "\n".join(line for line in original.splitlines()
                         if not line.startswith("#include") and not line.startswith("#pragma once"))
        out[f"ATen/ops/{name}.h"] = (
            "#pragma once\n// kbench: PyTorch's ATen/ops/" + name + ".h with fewer includes\n"
            "#include <optional>\n#include <string_view>\n#include <ATen/core/Tensor.h>\n"
            "#include <c10/core/TensorOptions.h>\n#include <c10/core/SymIntArrayRef.h>\n"
            "#include <c10/util/OptionalArrayRef.h>\n"
            f"#include <ATen/ops/{name}_ops.h>\n" + body + "\n")
    return out


def _light_folder(texts):
    """A folder whose torch/types.h and torch/extension.h are the light header of texts, with
    lean headers of the operators it includes, under the process's temporary folder, named by
    the hash of its files (made once, atomically)."""
    include = _aten_include()
    text = light_header(texts, include)
    files = {"torch/types.h": text, "torch/extension.h": _EXTENSION_H}
    files.update(lean_operator_headers(text, include))
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    folder = os.path.join(tempfile.gettempdir(), "kbench-light-" + digest.hexdigest()[:20])
    if not os.path.isdir(folder):
        making = tempfile.mkdtemp(prefix="kbench-light-making-")
        for path, content in files.items():
            os.makedirs(os.path.dirname(os.path.join(making, path)), exist_ok=True)
            with open(os.path.join(making, path), "w") as f:
                f.write(content)
        try:
            os.rename(making, folder)
        except OSError:  # made meanwhile by another build
            shutil.rmtree(making, ignore_errors=True)
    return folder


def _shortcuts(arguments, inline, support):
    """The arguments with the build support's flags added, and what was added (empty: none)."""
    if not support:
        return arguments, []
    added = []
    shortcut = dict(arguments)
    level = _optimisation(arguments.get("extra_cflags"))
    header = os.path.join(support, "pch", level or "none", "kbench_torch_extension.h")
    if (inline and _starts_with_extension_h(arguments) and os.path.isfile(header + ".gch")):
        shortcut["extra_cflags"] = ["-include", header] + list(arguments.get("extra_cflags") or [])
        added.append("precompiled torch/extension.h")
    texts = _cuda_texts(arguments)
    if texts and not any(_needs_pytorchs_own_header(t) for t in texts):
        try:
            folder = _light_folder(texts)
        except OSError:  # nowhere to write it: PyTorch's header
            folder = ""
        if folder:
            shortcut["extra_cuda_cflags"] = ["-I" + folder] + list(
                arguments.get("extra_cuda_cflags") or [])
            added.append("a torch/types.h of the operators it calls in CUDA files")
    return shortcut, added


def _worth_building_again(error):
    """Whether a build that failed with the shortcuts may succeed as written: unless ninja's
    output (PyTorch puts it in the message when it captured it) shows that only host objects
    failed. The precompiled header is the very header main.cpp includes first, so a host
    object fails as written too; the lighter header reaches CUDA objects alone."""
    failed = [line for line in str(error).splitlines() if line.startswith("FAILED:")]
    return not failed or any(".cuda.o" in line or ".cu.o" in line for line in failed)


def _only_cuda_objects_failed(error):
    failed = [line for line in str(error).splitlines() if line.startswith("FAILED:")]
    return bool(failed) and all(".cuda.o" in line or ".cu.o" in line for line in failed)


_UNDEFINED = re.compile(r'error: identifier "([A-Za-z_][A-Za-z0-9_]*)" is undefined')


def _fails_as_written_too(error, support):
    """The names that make a build with the light header fail as written too, or [] when that
    is not certain: every error nvcc reported is an identifier it did not know, and none of those
    identifiers occurs anywhere in what PyTorch's torch/types.h and torch/extension.h bring into
    a CUDA file (the support's cuda/identifiers.txt, macros included). Whatever else the
    candidate includes, it includes either way."""
    text = str(error)
    errors = [line for line in text.splitlines() if "error:" in line or "error :" in line]
    names = [m.group(1) for m in map(_UNDEFINED.search, errors) if m]
    if not errors or len(names) != len(errors):
        return []
    path = os.path.join(support, "cuda", "identifiers.txt")
    try:
        with open(path) as f:
            known = set(f.read().split())
    except OSError:
        return []
    if not known or any(n in known for n in names):
        return []
    return sorted(set(names))


def _build_folder(arguments):
    folder = arguments.get("build_directory")
    if folder:
        return folder
    name = arguments.get("name")
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not name or not root or os.sep in name:
        return ""
    return os.path.join(root, name)


def _loaded_libstdcxx():
    with open("/proc/self/maps") as maps:
        return next((line.split()[-1] for line in maps if "/libstdc++.so" in line), "")


def _prebuilt_module(prebuilt, name):
    """The module the builder made for `name`, imported from the verified copy, or None."""
    if not prebuilt or not name or os.sep in name:
        return None
    path = os.path.join(prebuilt, name, name + ".so")
    if not os.path.isfile(path):
        return None
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _wrap(fn, libstdcxx, prebuilt, device, support, versioner):
    signature = inspect.signature(fn)
    inline = fn.__name__ == "load_inline"

    @functools.wraps(fn)
    def build(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        arguments = bound.arguments
        if device == "cpu":
            cuda = _cuda_code(arguments)
            if cuda:
                raise CudaOnCpu(
                    f"the candidate builds CUDA code ({cuda}), but the device is the CPU: "
                    "run it on a GPU with --device cuda")
        wants_module = arguments.get("is_python_module", True) and not arguments.get(
            "is_standalone", False)
        if wants_module and arguments.get("build_directory") is None:
            module = _prebuilt_module(prebuilt, arguments.get("name"))
            if module is not None:
                return module
        if libstdcxx:
            flags = list(arguments.get("extra_ldflags") or [])
            if libstdcxx not in flags:
                flags.append(libstdcxx)
            arguments["extra_ldflags"] = flags
        shortcut, added = _shortcuts(dict(arguments), inline, support)
        if added:
            # Quiet, so that PyTorch puts the compilers' output in the exception, where the
            # decision to build again reads it; a build again as written is as verbose as asked.
            if "verbose" in signature.parameters:
                shortcut["verbose"] = False
            try:
                return fn(**shortcut)
            except Exception as e:  # the build as written decides
                if not _worth_building_again(e):
                    raise
                unknown = _fails_as_written_too(e, support)
                if unknown:
                    print(f"kbench: the build failed on {', '.join(unknown)}, which PyTorch's "
                          "headers do not declare either: not built again as written",
                          file=sys.stderr)
                    raise
                print(f"kbench: the build with {' and '.join(added)} failed "
                      f"({type(e).__name__}); building it again as written", file=sys.stderr)
                folder = _build_folder(arguments)
                if folder:
                    shutil.rmtree(folder, ignore_errors=True)
                # Otherwise PyTorch would name the second build NAME_v1, which is not the module
                # a sandbox looks for.
                entries = getattr(versioner, "entries", None)
                if isinstance(entries, dict):
                    entries.pop(arguments.get("name"), None)
                # Where only CUDA objects failed, host files keep the precompiled header: it is
                # the header they include first, which is why a failure of theirs is final.
                if (_only_cuda_objects_failed(e) and "extra_cflags" in shortcut and
                        shortcut["extra_cflags"][:1] == ["-include"]):
                    arguments["extra_cflags"] = shortcut["extra_cflags"]
        return fn(**arguments)

    return build


def import_before_fork():
    """Imports torch.utils.cpp_extension in a process that forks sandboxes later, without
    starting CUDA there (a child forked after that could not use the GPU). Its import asks
    torch.cuda.is_available(), which starts the driver, only to word a warning: the answer is
    taken as yes while it imports. A sandbox then finds it imported (about 0.5 s a sandbox)."""
    import torch

    real = torch.cuda.is_available
    torch.cuda.is_available = lambda: True
    try:
        import torch.utils.cpp_extension  # noqa: F401
    finally:
        torch.cuda.is_available = real


def install(prebuilt="", device=""):
    """Wraps load and load_inline; prebuilt is the folder holding verified builds (a sandbox),
    device the kind of device a builder builds for ("cpu" refuses CUDA code)."""
    global _installed
    if _installed:
        return
    _installed = True
    # Imported here, not with this module: its import initialises CUDA, which the zygote that
    # imports this module must not do before it forks (the zygote imports it through
    # import_before_fork instead).
    import torch.utils.cpp_extension as cpp_extension

    libstdcxx = _loaded_libstdcxx()
    support = os.environ.get("KBENCH_BUILD_SUPPORT", "")
    versioner = getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None)
    cpp_extension.load = _wrap(cpp_extension.load, libstdcxx, prebuilt, device, support,
                               versioner)
    cpp_extension.load_inline = _wrap(cpp_extension.load_inline, libstdcxx, prebuilt, device,
                                      support, versioner)
