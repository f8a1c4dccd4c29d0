"""The rule ids a finding can name (RULES), the analyzer's limits, and the report of
findings (Report).
"""


MAX_FINDINGS = 200
STACK_BYTES = 256 << 20          # the command line's analysis thread (deeply nested sources)
DEEP_RECURSION_LIMIT = 100000
EVIDENCE_CHARS = 160
REASON_CHARS = 400
MAX_NATIVE_TEXT = 8 << 20        # characters of all native source texts of a file together
MAX_NATIVE_UNITS = 2000          # native source texts of a file (each has a fixed cost)


class AnalysisLimit(Exception):
    """The source needs more work than the analyzer allows (honest files are far below it).

    Not caught by analyze: like an error of the analyzer, it makes the command exit 1, so that
    the candidate is reported unanalyzable (rejected) in seconds rather than after a timeout.
    """

RULES = {
    "unparsable": "The candidate does not parse as Python (no other rule runs).",
    "no_model_new": "The candidate never names ModelNew (no class, assignment, import, attribute "
                    "or string): it cannot load, so it is not built (no other rule runs).",
    "no_backend": "No kernel backend is imported or used: torch.utils.cpp_extension, Triton, "
                  "ThunderKittens, CUTLASS/CuTe, TileLang, CuPy RawKernel or numba.cuda.",
    "no_kernel_call": "The code reachable from ModelNew.forward certainly calls no custom kernel "
                      "(every call resolves to PyTorch or Python, or to an extension that only "
                      "calls ATen).",
    "torch_compute": "A PyTorch compute op in code reachable from ModelNew.forward, or an ATen "
                     "compute call in the native sources (views, allocation, metadata and "
                     "conversions are not counted).",
    "try_fallback": "A try statement whose except (or else/finally) computes with PyTorch, calls "
                    "the reference model, or returns another result than the kernel's.",
    "try_except": "Any other try/except (or contextlib.suppress).",
    "pass_inheritance": "ModelNew inherits a class other than nn.Module and keeps its forward "
                        "(no forward, or one that only passes or delegates), or a forward returns "
                        "super().forward(...).",
    "monkeypatch": "An attribute of an imported module or of a class from one is assigned, "
                   "set or deleted (or an aten op is re-registered).",
    "stream": "CUDA streams or graphs are created or switched.",
    "concurrency": "Threads, processes, asyncio or signals (Python or native).",
    "subprocess": "Other programs are run (subprocess, os.system, os.popen, exec, pty, system()).",
    "network": "Network access (sockets, HTTP clients, ...).",
    "file_access": "Files are read or written (open, os file calls, pathlib I/O, shutil, glob, "
                   "mmap, temporary files, torch.load/save, /proc, fopen, fstream, ...).",
    "native_access": "ctypes/cffi, torch.cuda.cudart(), private torch._C calls, loading shared "
                     "objects, dlopen/dlsym.",
    "introspection": "Interpreter introspection: gc, inspect, frames, sys.modules, globals of "
                     "functions, subclasses, builtins, atexit, audit hooks.",
    "dynamic_code": "Code the analyzer cannot see: eval/exec/compile, __import__, importlib, "
                    "runpy, unpickling, getattr with a computed name on a module.",
    "tensor_subclass": "A torch.Tensor subclass, __torch_function__/__torch_dispatch__, "
                       "dispatch/function modes or torch.overrides.",
    "precision_downgrade": "Reduced precision in an fp32 problem: fp16/bf16 casts or types, "
                           "autocast, TF32 or reduced-precision reductions.",
    "unreachable_kernel": "A __global__ function launched nowhere in the native sources, an "
                          "extension function or a Triton kernel never called from code "
                          "reachable from ModelNew.forward.",
}


def one_line(text, limit):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Report:
    """Findings, de-duplicated by (rule, line); reasons of merged findings are joined."""

    def __init__(self, lines):
        self.lines = lines
        self.items = {}

    def line_text(self, line):
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1].strip()[:EVIDENCE_CHARS]
        return ""

    def add(self, rule, line, reason):
        line = int(line or 0)
        reason = one_line(reason, REASON_CHARS)
        key = (rule, line)
        item = self.items.get(key)
        if item is not None:
            if reason not in item["reason"] and len(item["reason"]) + len(reason) < REASON_CHARS:
                item["reason"] += "; " + reason
            return
        self.items[key] = {"rule": rule, "line": line, "evidence": self.line_text(line),
                           "reason": reason}

    def findings(self):
        out = sorted(self.items.values(), key=lambda f: (f["line"], f["rule"]))
        return out[:MAX_FINDINGS]
