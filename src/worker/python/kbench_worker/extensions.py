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
"""

import functools
import importlib.util
import inspect
import os
import sys

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


def _wrap(fn, libstdcxx, prebuilt, device):
    signature = inspect.signature(fn)

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
        return fn(*bound.args, **bound.kwargs)

    return build


def install(prebuilt="", device=""):
    """Wraps load and load_inline; prebuilt is the folder holding verified builds (a sandbox),
    device the kind of device a builder builds for ("cpu" refuses CUDA code)."""
    global _installed
    if _installed:
        return
    _installed = True
    # Imported here, not with this module: its import initialises CUDA, which the zygote that
    # imports this module must not do before it forks.
    import torch.utils.cpp_extension as cpp_extension

    libstdcxx = _loaded_libstdcxx()
    cpp_extension.load = _wrap(cpp_extension.load, libstdcxx, prebuilt, device)
    cpp_extension.load_inline = _wrap(cpp_extension.load_inline, libstdcxx, prebuilt, device)
