"""Static checks over a KernelBench candidate file.

A candidate is a Python file that defines ``class ModelNew(nn.Module)`` and is supposed to do its
work with its own kernels: CUDA or C++ compiled through ``torch.utils.cpp_extension``, Triton
``@triton.jit`` functions, or another kernel DSL. This module reads the candidate's text and
reports what it sees: PyTorch doing the work instead of a kernel, fallbacks to PyTorch, kernels
that are never launched, monkeypatching, threads, files, sockets, frame inspection, tensor
subclasses, reduced precision, and so on.

The candidate is never run. Its text is only parsed with ``ast.parse`` (the Python side) and
scanned with regular expressions (the C++/CUDA source strings it compiles, after their comments
are stripped). Nothing of it is imported, evaluated, executed or compiled to code.

Each finding names a rule id (see ``RULES``), a 1-based line (0 when there is none), the source
line as evidence and a one-line reason. What to do with a finding (reject, warn) is decided by
the caller; this module only reports what it sees, and is written so that it does not report
things on honest code: where it cannot tell, it stays silent.

Command line: ``python3 -I -S src/integrity/analyzer`` (the folder that holds this package;
Python runs its ``__main__.py``), or ``python3 -m kbench_analyzer`` with that folder on
sys.path, reads one JSON object from stdin,
``{"source": str, "backend": str, "precision": "fp32"|"fp16"|"bf16"}``, and writes one JSON
object to stdout, ``{"findings": [...], "kernels": {...}, "markers": [...], "parsed": bool}``
(the value of ``analyze``). The same with ``--rules`` prints ``RULES``. The exit status
is 0 unless stdin is not a JSON object (then 2); an error of the analyzer itself is not hidden
(exit 1 and a traceback), so that the caller can report the candidate as unanalyzable instead of
passing it unseen; so is a source that would take more work than the analyzer allows
(AnalysisLimit: exit 1 and a one-line message). Only the standard library is used.

The analysis takes time linear (or n log n) in the source, whatever it holds: no regular
expression is applied where it can backtrack or rescan without bound, nothing is rescanned
from every match, and the work of putting strings together is counted (see StringResolver.WORK,
MAX_NATIVE_TEXT, MAX_NATIVE_UNITS).

How the rules about ModelNew work: the analysis follows ModelNew.forward through the calls it
can resolve (methods, functions and classes of the file, submodules stored in __init__,
nn.Sequential/ModuleList of them, autograd Functions, lambdas) and gives every value a set of
possible kinds (a tensor, an extension module loaded with load_inline, a Triton kernel, an
instance of a class of the file, a torch.nn module, something unknown...). A call is then a
kernel call, a PyTorch call, a plain Python call, or unknown. no_kernel_call is reported only
when every call reached is known to be no kernel; anything the analysis cannot follow keeps it
silent.

The modules, in the order they build on one another:
    rules.py         RULES, the limits, AnalysisLimit and the report of findings (Report)
    syntax.py        helpers over the syntax tree and the source's lines
    native.py        C++/CUDA sources: cxx_tokens, strip_cxx, cuda_functions,
                     aten_compute_calls, NATIVE_PATTERNS, NATIVE_PRECISION, ...
    strings.py       string literals and the strings the source puts together (StringResolver)
    kinds.py         the kinds of values and the tables of torch/standard-library names
    program.py       imports (ImportMap) and program structure: scopes, bindings, classes
    expressions.py   Engine, part 1: the kinds of expressions (Expressions)
    calls.py         Engine, part 2: what a call is (Calls, CallResult)
    engine.py        Engine: contexts, names, functions, classes, the walk over reachable code
    python_rules.py  whole-file Python rules (PythonRules)
    analysis.py      one candidate, every rule (Analysis), and analyze()
    cli.py           the command line (main), run by __main__.py
"""

from .analysis import Analysis, analyze
from .cli import main
from .engine import Engine
from .rules import (
    DEEP_RECURSION_LIMIT, EVIDENCE_CHARS, MAX_FINDINGS, MAX_NATIVE_TEXT, MAX_NATIVE_UNITS,
    REASON_CHARS, RULES, STACK_BYTES, AnalysisLimit, Report,
)

__all__ = [
    "DEEP_RECURSION_LIMIT", "EVIDENCE_CHARS", "MAX_FINDINGS", "MAX_NATIVE_TEXT",
    "MAX_NATIVE_UNITS", "REASON_CHARS", "RULES", "STACK_BYTES", "Analysis", "AnalysisLimit",
    "Engine", "Report", "analyze", "main",
]
