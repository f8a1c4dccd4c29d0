"""The static analyzer's linear-time scanners find what the regular expressions they replace find.

Each scanner of the static analyzer (src/integrity/analyzer/kbench_analyzer/native.py) that
stands for a regular expression (applied as such, it backtracks or rescans without bound on a
hostile text) is run here beside that expression, applied the plain way, on many short random
texts made of the pieces that matter to it: the two must agree on every text.
"""

import pathlib
import random
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANALYZER = ROOT / "src" / "integrity" / "analyzer"
if str(ANALYZER) not in sys.path:
    sys.path.insert(0, str(ANALYZER))

from kbench_analyzer import native as sr  # noqa: E402

TEXTS = 3000            # random texts per scanner
PIECES = 40             # pieces per text, at most

# Comments, string and character literals of C++ (what cxx_tokens finds).
CXX_TOKENS = re.compile(
    r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=d)"'
    r'|//[^\n]*'
    r'|/\*(?:.|\n)*?(?:\*/|\Z)'
    r'|"(?:\\.|[^"\\\n])*"'
    r"|(?<![A-Za-z0-9_])'(?:\\.|[^'\\\n]){1,8}'"
)
# The name of a function header, searched in the text from its keyword to the '('.
FUNCTION_NAME = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*$")
OPEN_WITH_FLAGS = re.compile(
    r"(?<![\w.>:])(?:::)?open(?:at|64)?\s*\([^;]*\bO_(?:RDONLY|WRONLY|RDWR|CREAT)")
MATH_MODE_CHANGES = re.compile(
    r"\bcublasSetMathMode\s*\((?![^;)]*\b(?:CUBLAS_DEFAULT_MATH|CUBLAS_PEDANTIC_MATH)\b\s*\))")
REDUCED_MMA = re.compile(r"\bmma\.sync[\w.]*\.(?:tf32|f16|bf16)\b")


def random_texts(pieces, seed):
    rng = random.Random(seed)
    for _ in range(TEXTS):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, PIECES)))


def cuda_functions_by_regex(code, keyword):
    """cuda_functions as it was written with regular expressions and scans from each keyword
    (quadratic in the worst case; the same result)."""
    def skip_parens(open_pos):
        depth = 0
        for index in range(open_pos, min(len(code), open_pos + 20000)):
            depth += {"(": 1, ")": -1}.get(code[index], 0)
            if code[index] == ")" and depth == 0:
                return index + 1
        return -1

    def skip_braces(open_pos):
        depth = 0
        for index in range(open_pos, len(code)):
            depth += {"{": 1, "}": -1}.get(code[index], 0)
            if code[index] == "}" and depth == 0:
                return index + 1
        return len(code)

    for match in re.finditer(r"\b%s\b" % keyword, code):
        pos = match.end()
        for _ in range(8):
            paren = code.find("(", pos)
            if paren < 0:
                break
            head = code[pos:paren]
            if re.search(r"[;{}=]", head):
                break
            name = FUNCTION_NAME.search(head)
            if not name:
                break
            after = skip_parens(paren)
            if after < 0:
                break
            if name.group(1) in sr._LAUNCH_ATTRS:
                pos = after
                continue
            tail = re.match(r"(?:\s|const\b|noexcept\b|__attribute__\s*\(\([^)]*\)\))*([{;])?",
                            code[after:after + 300])
            is_def = bool(tail and tail.group(1) == "{")
            end = after + tail.end() if tail else after
            if is_def:
                end = skip_braces(end - 1)
            start = max(code.rfind(c, 0, match.start()) for c in ";{}#")
            host = "__host__" in code[start + 1: paren]
            yield (name.group(1), pos + name.start(1), match.start(), end, is_def, host)
            break


CXX_PIECES = ['"', "'", "\\", "/", "*", "//", "/*", "*/", "\n", " ", "a", "x_", "9", "R", 'R"',
              'R"d(', ')d"', 'R"(', ')"', "u8", "L", "u", "(", ")", "'a'", "\\n", "\\\"",
              "'\\''", "abcdefghij"]


def test_cxx_tokens_match_the_regular_expression():
    for text in random_texts(CXX_PIECES, 1):
        expected = [match.span() for match in CXX_TOKENS.finditer(text)]
        assert list(sr.cxx_tokens(text)) == expected, repr(text)


HEADER_PIECES = ["__global__ ", "__device__ ", "__host__ ", "__global__ void k(",
                 "__device__ float f(", "__global__ __launch_bounds__(256) void g(",
                 "__global__ void t<int N>(", "__launch_bounds__", "(256)", " ", "\n", "(", ")",
                 ") {", "{", "}", "}", ";", "=", "#", "<", ">", "<int N>", "void", "f", "k1", "9",
                 "_x", " const", " noexcept", " __attribute__((a))", "float* p", "int n)",
                 ") const {", ");", "<a)>"]


@pytest.mark.parametrize("keyword", ["__global__", "__device__"])
def test_cuda_functions_match_the_regular_expressions(keyword):
    for text in random_texts(HEADER_PIECES, 2):
        expected = list(cuda_functions_by_regex(text, keyword))
        assert list(sr.cuda_functions(text, keyword)) == expected, repr(text)


@pytest.mark.parametrize("scanner, pattern, pieces", [
    (sr.open_with_flags, OPEN_WITH_FLAGS,
     ["open(", "open (", "::open(", "openat(", "open64(", "x.open(", "open", "(", ")", ";", " ",
      "\n", "O_RDONLY", "O_CREAT", "O_RDWR", "O_", "x", ".", ">", ":", "|", "f"]),
    (sr.math_mode_changes, MATH_MODE_CHANGES,
     ["cublasSetMathMode(", "cublasSetMathMode (h, ", "cublasSetMathMode", "(", ")", ";", " ",
      "\n", ", ", "h", "CUBLAS_DEFAULT_MATH", "CUBLAS_PEDANTIC_MATH",
      "CUBLAS_TF32_TENSOR_OP_MATH", "x", "_"]),
    (sr.reduced_mma, REDUCED_MMA,
     ["mma.sync", "mma.sync.aligned", "mma", ".sync", ".", ".tf32", ".f16", ".bf16", ".f32",
      ".row", "x", " ", ";", "_", "9", "\n"]),
], ids=["open_with_flags", "math_mode_changes", "reduced_mma"])
def test_native_scanners_match_their_regular_expressions(scanner, pattern, pieces):
    for text in random_texts(pieces, 3):
        expected = [match.start() for match in pattern.finditer(text)]
        assert list(scanner(text)) == expected, repr(text)


def test_newline_offsets():
    for text in random_texts(["\n", "a", " ", "\r", "\r\n"], 4):
        assert sr.newline_offsets(text) == [i for i, c in enumerate(text) if c == "\n"]
