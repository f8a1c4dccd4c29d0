"""The static analyzer's time is linear in the source, whatever the source holds.

A hostile candidate can pad its source with text made to make a regular expression backtrack
or rescan, or a loop go over the same text again from every match (30,000 lines of 'open('
inside '#if 0' took the analyzer 40 s; kbench gives it 60 s). Each case here builds such a
source at two sizes, n and 4n, where n is large enough that the analyzer took over a second on
it before it was made linear, runs the analyzer as kbench does (python -I -S, the request on
stdin), and checks that the larger one ends within a few seconds and takes at most about six
times as long as the smaller one (four times, with slack for a busy machine). Times are the
analyzer's CPU time (user and system, from getrusage of the children), the best of up to three
runs of each size taken in turn, so that other work on the machine counts as little as it can.

Each source also ends with a real finding (a native system() call, or a Python one), so that a
case also checks that the analysis went through the padding; a case that the analyzer must
refuse (AnalysisLimit: exit 1, the candidate is reported unanalyzable) checks that it does.

The limits themselves (AnalysisLimit) are checked at the end: past them the analyzer refuses,
fast, rather than run long or report less.
"""

import json
import math
import pathlib
import resource
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The analyzer's folder: kbench runs it as python3 -I -S ANALYZER; kbench_analyzer is in it.
ANALYZER = ROOT / "src" / "integrity" / "analyzer"
if str(ANALYZER) not in sys.path:
    sys.path.insert(0, str(ANALYZER))

import kbench_analyzer as sr  # noqa: E402

LARGE_SECONDS = 15.0      # the larger source of each case ends within this (CPU seconds)
RATIO = 6.0               # time of the 4n source / time of the n source, at most
FLOOR_SECONDS = 0.25      # (a smaller time is counted as this: the start of python itself)
RUNS = 3                  # runs of each size at most, taken in turn; the best time counts
TIMEOUT_SECONDS = 2 * LARGE_SECONDS     # (wall clock) a run that takes longer fails at once
REFUSED = "refused"       # what a case expects when the analyzer must refuse the source

HEAD = "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
MODEL = ("class ModelNew(nn.Module):\n"
         "    def forward(self, x):\n"
         "        return ext.f(x)\n")


def native(body, python=""):
    """A candidate whose CUDA source holds body, then python; it ends with a system() call."""
    return (HEAD + 'cuda_src = r"""\n#include <torch/extension.h>\n' + body + "\n"
            "__global__ void k(float* x) { x[0] = 1.f; }\n"
            "torch::Tensor f(torch::Tensor x) {\n"
            "    k<<<1, 1>>>(x.data_ptr<float>());\n"
            '    system("id");\n'
            "    return x;\n"
            "}\n"
            '"""\n'
            'ext = load_inline(name="e", cpp_sources="", cuda_sources=cuda_src, functions=["f"])\n'
            + python + MODEL)


def python(body, before_model=""):
    """A candidate with the Python body at module level; it ends with a system() call."""
    return native("", before_model) + body + "import os\nos.system('id')\n"


def nested_functions(n):
    """Functions nested sqrt(n) deep (Python takes up to 100 indentation levels), each calling
    the next one with many kinds of arguments: the contexts of the data flow multiply, past
    Engine.HARD_CONTEXTS_PER_FUNCTION of one function, and the analyzer refuses the source."""
    depth = max(2, int(math.sqrt(n)))
    args = ["x", "1", "2.0", "'a'", "None", "[x]", "(x,)", "{}", "x.t()", "-x", "x*1", "len(x)"]
    lines = ["%sdef f%d(x):" % ("    " * k, k) for k in range(depth)]
    lines.append("%sreturn torch.relu(x)" % ("    " * depth))
    for k in range(depth - 1, 0, -1):
        lines.append("%sreturn %s" % ("    " * k, " + ".join("f%d(%s)" % (k, a) for a in args)))
    return python("y = f0(torch.ones(1))\n", "\n".join(lines) + "\n")


def try_handlers(n):
    """Many try statements whose except clause calls into a long chain of functions."""
    count = n // 64
    chain = "".join("def f%d(x):\n    return f%d(x)\n" % (i, i + 1) for i in range(count))
    chain += "def f%d(x):\n    return ext.f(x)\ndef g(x):\n    return x\n" % count
    tries = "".join("    try:\n        x = g(x)\n    except Exception:\n        x = f%d(x)\n" % i
                    for i in range(count))
    return python("def h(x):\n" + tries + "    return x\n", chain)


# name -> (source for size n, n, what the analyzer must report on it)
CASES = {
    # NATIVE_PATTERNS' open(...O_RDONLY: [^;]* went to the next ';' from every 'open('.
    "open_in_if0": (lambda n: native("#if 0\n" + "open(\n" * n + "#endif\n"), 8000, "subprocess"),
    # A long line without ';' (nor ')'), made of calls that scan to the next one.
    "line_without_semicolon": (
        lambda n: native("open(" * (n // 2) + "cublasSetMathMode(" * (n // 4)
                         + "mma.sync" * (n // 4)), 8000, "subprocess"),
    # \s*(?:<...>)?\s*\( tried every split of a run of spaces.
    "whitespace_runs": (
        lambda n: native("torch::a" + " " * (20 * n) + "x;\nfoo" + " " * (20 * n) + "x;",
                         "y = (1" + " " * (20 * n) + ")\n"), 2000, "subprocess"),
    # Each __global__ scanned up to 20,000 characters for its closing ')'.
    "many_parens": (lambda n: native("__global__ void f(" * n), 4000, "subprocess"),
    # Each attribute of a chain built its qualified name anew.
    "torch_attribute_chain": (lambda n: python("y = torch" + ".a" * n + "\n"), 6000, "subprocess"),
    # Many string literals: a list's 'in' for each exposed function name.
    "string_literals": (
        lambda n: native("").replace('functions=["f"]', "functions=[%s]" % ", ".join(
            '"f%d"' % i for i in range(n))), 16000, "subprocess"),
    # C++ strings never closed: each escaped quote started a rescan to the end of the line.
    "unterminated_cxx_strings": (lambda n: native('"' + '\\"' * n), 30000, "subprocess"),
    # C++ raw strings never closed: each rescanned to the end of the text.
    "unclosed_raw_strings": (lambda n: native("".join('R"d%d(' % i for i in range(n))), 4000,
                             "subprocess"),
    # Functions nested deep (the data flow's contexts): refused, at both sizes, in little time.
    "nested_functions": (nested_functions, 1600, REFUSED),
    # Lists nested as deep as the parser takes, on many lines (this one was linear already).
    "nested_brackets": (
        lambda n: python("".join("x%d = " % i + "[" * 150 + "]" * 150 + "\n" for i in range(n))),
        100, "subprocess"),
    # A huge identifier as a kernel's return type: the name was searched back from every
    # character of it.
    "huge_identifier": (
        lambda n: native("__global__ void " + "a" * n + " b(float* x) {}\n",
                         "z = " + "q" * n + "\n"), 5000, "subprocess"),
    # Kernels launched nowhere: each name was searched for in the whole text.
    "many_unused_kernels": (
        lambda n: native("".join("__global__ void u%d() {}\n" % i for i in range(n))), 4000,
        "unreachable_kernel"),
    # Braces never closed: each kernel body was scanned to the end of the text.
    "unclosed_braces": (lambda n: native("__global__ void h() {\n" * n), 2000, "subprocess"),
    # Many __global__ keywords before one header.
    "many_global_keywords": (lambda n: native("__global__ " * n + "void g()\n"), 600,
                             "subprocess"),
    # Except clauses that call into a long chain of functions.
    "try_handlers": (try_handlers, 96000, "subprocess"),
}


def run_analyzer(source):
    """(CPU seconds of the analyzer, its CompletedProcess) on source, run as kbench runs it."""
    request = json.dumps({"source": source, "backend": "cuda", "precision": "fp32"})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run([sys.executable, "-I", "-S", str(ANALYZER)], input=request,
                              capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail("the analyzer did not end within %d s on a source of %d characters"
                    % (TIMEOUT_SECONDS, len(source)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, done


def assert_refused(done):
    """The analyzer refused the source (AnalysisLimit: exit 1 and a one-line message)."""
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "cannot be analyzed in time" in done.stderr, done.stderr[-2000:]


def timed(source, expect):
    seconds, done = run_analyzer(source)
    if expect == REFUSED:
        assert_refused(done)
        return seconds
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["parsed"]
    rules = {f["rule"] for f in result["findings"]}
    assert expect in rules, sorted(rules)
    return seconds


@pytest.mark.parametrize("name", sorted(CASES))
def test_time_is_linear(name):
    build, n, expect = CASES[name]
    small, large = build(n), build(4 * n)
    assert 2.5 * len(small) <= len(large) <= 5 * len(small)
    small_s = large_s = math.inf
    for _ in range(RUNS):
        # In turn, so that a busy spell of the machine slows both sizes, not one of them.
        small_s = min(small_s, timed(small, expect))
        large_s = min(large_s, timed(large, expect))
        if large_s <= min(LARGE_SECONDS, RATIO * max(small_s, FLOOR_SECONDS)):
            break
    assert large_s <= LARGE_SECONDS, "%s: %.2f s for %d characters" % (name, large_s, len(large))
    assert large_s <= RATIO * max(small_s, FLOOR_SECONDS), \
        "%s: %.2f s for %d characters, %.2f s for %d" % (name, small_s, len(small), large_s,
                                                         len(large))


def test_native_text_amplified_by_many_strings_is_refused_fast():
    """Many strings built from one big native source: each is a unit scanned in full, so the
    work grows with their number times their size. Past MAX_NATIVE_TEXT the analyzer refuses
    (exit 1: kbench reports the candidate unanalyzable, which rejects it) in seconds."""
    base = native("x;\n" * 16000)
    source = base + "".join("s%d = cuda_src + '#include'\n" % i for i in range(1000))
    seconds, done = run_analyzer(source)
    assert_refused(done)
    assert seconds <= LARGE_SECONDS


def many_native_units(count):
    """A candidate with count native source texts: its two load_inline sources and count - 2
    assigned f-strings that each hold a kernel."""
    strings = "".join('s%d = f"__global__ void k%d(float* x) {{ x[0] = {v}; }}"\n' % (i, i)
                      for i in range(count - 2))
    return native("", "v = 1\n" + strings)


def test_many_native_units_are_refused_fast():
    """Each native source text costs a fixed amount of work, however short: past
    MAX_NATIVE_UNITS of them the analyzer refuses, in seconds (35,000 such strings took it
    half a minute), and up to it analyzes them."""
    seconds, done = run_analyzer(many_native_units(sr.MAX_NATIVE_UNITS + 1))
    assert_refused(done)
    assert "native sources" in done.stderr
    assert seconds <= LARGE_SECONDS
    seconds, done = run_analyzer(many_native_units(30000))
    assert_refused(done)
    assert seconds <= LARGE_SECONDS
    seconds, done = run_analyzer(many_native_units(sr.MAX_NATIVE_UNITS))
    assert done.returncode == 0, done.stderr[-2000:]
    rules = {f["rule"] for f in json.loads(done.stdout)["findings"]}
    assert {"subprocess", "unreachable_kernel"} <= rules, sorted(rules)
    assert seconds <= LARGE_SECONDS


def helper_given_instances(count):
    """apply(m, x) calls m.run(x); ModelNew.forward gives it instances of count classes, the
    last of which computes with PyTorch (torch.matmul): each instance is a context of apply."""
    out = ["import torch", "import torch.nn as nn", "import triton", "", "",
           "def apply(m, x):", "    return m.run(x)"]
    for index in range(count):
        body = "torch.matmul(x, x)" if index == count - 1 else "x"
        out += ["", "", "class C%d:" % index, "    def run(self, x):", "        return " + body]
    out += ["", "", "class ModelNew(nn.Module):", "    def forward(self, x):",
            "        return " + " + ".join("apply(C%d(), x)" % i for i in range(count))]
    return "\n".join(out) + "\n"


def test_helper_given_few_instances_reaches_torch():
    source = helper_given_instances(5)
    seconds, done = run_analyzer(source)
    assert done.returncode == 0, done.stderr[-2000:]
    findings = json.loads(done.stdout)["findings"]
    matmul = source.splitlines().index("        return torch.matmul(x, x)") + 1
    assert ("torch_compute", matmul) in {(f["rule"], f["line"]) for f in findings}, findings
    assert "no_kernel_call" in {f["rule"] for f in findings}, findings


def test_helper_given_more_instances_than_contexts_is_refused():
    """Past Engine.HARD_CONTEXTS_PER_FUNCTION contexts of one function the analyzer refuses:
    a context shared by the rest would lose the instances' kinds, and with them the PyTorch
    call behind the helper (no torch_compute, no no_kernel_call)."""
    hard = sr.Engine.HARD_CONTEXTS_PER_FUNCTION
    seconds, done = run_analyzer(helper_given_instances(hard))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no_kernel_call" in {f["rule"] for f in json.loads(done.stdout)["findings"]}
    seconds, done = run_analyzer(helper_given_instances(hard + 1))
    assert_refused(done)
    assert "calling contexts" in done.stderr
    assert seconds <= LARGE_SECONDS
