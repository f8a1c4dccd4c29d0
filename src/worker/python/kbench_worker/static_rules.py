#!/usr/bin/env python3
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

Command line: ``python3 static_rules.py`` reads one JSON object from stdin,
``{"source": str, "backend": str, "precision": "fp32"|"fp16"|"bf16"}``, and writes one JSON
object to stdout, ``{"findings": [...], "kernels": {...}, "markers": [...], "parsed": bool}``
(the value of ``analyze``). ``python3 static_rules.py --rules`` prints ``RULES``. The exit status
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
"""

import ast
import bisect
import builtins
import collections
import json
import re
import sys
import textwrap
import threading

MAX_FINDINGS = 200
STACK_BYTES = 256 << 20          # the command line's analysis thread (deeply nested sources)
DEEP_RECURSION_LIMIT = 100000
EVIDENCE_CHARS = 160
REASON_CHARS = 400
MAX_NATIVE_TEXT = 8 << 20        # characters of all native source texts of a file together
MAX_NATIVE_UNITS = 2000          # native source texts of a file (each has a fixed cost)


def names_model_new(tree):
    """Whether anything in the module could bind ModelNew: a class, function or name, an import,
    an attribute, or a string that holds the name (globals()["ModelNew"] = ...)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
        elif isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.alias):
            if node.name == "*" or node.name.endswith(".ModelNew"):
                return True
            name = node.asname or node.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if "ModelNew" in node.value:
                return True
            continue
        else:
            continue
        if name == "ModelNew":
            return True
    return False


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

# ======================================================================================
# Source text helpers


def walk_all(tree):
    """The nodes of ast.walk(tree), in its order, as a list made once per tree.

    The rules go over the whole tree a dozen times: a list is much faster to go over again.
    """
    nodes = getattr(tree, "_kbench_nodes", None)
    if nodes is None:
        nodes = tree._kbench_nodes = list(ast.walk(tree))
    return nodes


def split_lines(source):
    """Lines as ast numbers them (only \\n, \\r\\n and \\r end a line)."""
    return re.split(r"\r\n|\r|\n", source)


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


# ======================================================================================
# Names: imports and aliases of imported modules


QUAL_CHARS = 400                 # a longer qualified name keeps its first and last characters
_QUAL_HEAD, _QUAL_TAIL = 240, 120
_ELIDED = "\u2026"                # (no identifier holds it)


def short_qual(qual):
    """qual, or its first _QUAL_HEAD and last _QUAL_TAIL characters when over QUAL_CHARS.

    Every attribute of a chain a.b.c... has a qualified name: written out in full they would
    be quadratic in the chain's length (names that long are no name the rules know). A name
    already shortened and then extended (short_qual(q) + ".x") is shortened again to what the
    whole name gives, so that a chain's names can be built one attribute at a time.
    """
    if qual is None:
        return None
    size = len(qual)
    if size <= QUAL_CHARS and (size <= _QUAL_HEAD + 1 + _QUAL_TAIL or
                               qual[_QUAL_HEAD] != _ELIDED):
        return qual
    return qual[:_QUAL_HEAD] + _ELIDED + qual[-_QUAL_TAIL:]


class ImportMap:
    """Local names bound to imported modules or their members, as dotted qualified names.

    Scope-insensitive: an import anywhere in the file counts, and so does a plain alias
    ``cuda = torch.cuda``; a name that is bound to two different things is dropped.
    """

    def __init__(self, tree):
        self._quals = None          # id(Attribute) -> qual, once the aliases are known
        self._roots = {}
        self.names = {}
        for node in walk_all(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        self.names[root] = root
            elif isinstance(node, ast.ImportFrom):
                base = "." * (node.level or 0) + (node.module or "")
                for alias in node.names:
                    if alias.name != "*":
                        full = base + "." + alias.name if base and not base.endswith(".") \
                            else base + alias.name
                        self.names[alias.asname or alias.name] = full
        self.aliases = {}
        self._find_aliases(tree)
        self._quals = {}

    def _find_aliases(self, tree):
        assigned = {}
        for node in walk_all(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                if isinstance(node.target, ast.Name) and getattr(node, "value", None):
                    assigned.setdefault(node.target.id, []).append(None)
        for _ in range(3):
            for name, values in assigned.items():
                if name in self.names:
                    continue
                quals = {self.qual(v) if isinstance(v, (ast.Name, ast.Attribute)) else None
                         for v in values}
                if len(quals) == 1 and None not in quals:
                    self.aliases[name] = quals.pop()

    def root(self, name):
        return self.aliases.get(name) or self.names.get(name)

    def qual(self, node):
        """Dotted qualified name of a Name/Attribute chain rooted at an import, else None.

        Shortened by short_qual (of the root's name, then of each attribute added). Kept for
        each attribute once the aliases are known, so that each attribute of a long chain costs
        O(1), not the chain's length.
        """
        quals = self._quals         # None while the aliases are found: they still change
        chain = []
        while isinstance(node, ast.Attribute) and (quals is None or id(node) not in quals):
            chain.append(node)
            node = node.value
        if isinstance(node, ast.Attribute):
            qual = quals[id(node)]
        elif not isinstance(node, ast.Name):
            qual = None
        elif quals is None:
            qual = short_qual(self.root(node.id))
        else:
            qual = self._roots.get(node.id, False)
            if qual is False:
                qual = self._roots[node.id] = short_qual(self.root(node.id))
        for attribute in reversed(chain):
            if qual is not None:
                qual = short_qual(qual + "." + attribute.attr)
            if quals is not None:
                quals[id(attribute)] = qual
        return qual


def qual_matches(qual, patterns):
    """True when qual equals a pattern or is an attribute of it; 'x.*' matches x's members."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if qual.startswith(pattern[:-1]):
                return True
        elif qual == pattern or qual.startswith(pattern + "."):
            return True
    return False


# ======================================================================================
# Native (C++/CUDA) sources

# Comments, string and character literals of C++ (see strip_cxx), found by cxx_tokens. What
# they are is what finditer of this regular expression finds (tests/python/
# test_static_rules_scanners.py checks that both agree):
#     (?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=d)"
#     |//[^\n]*
#     |/\*(?:.|\n)*?(?:\*/|\Z)
#     |"(?:\\.|[^"\\\n])*"
#     |(?<![A-Za-z0-9_])'(?:\\.|[^'\\\n]){1,8}'
# It is not used as such: tried at every position, it rescans an unterminated string or raw
# string to the end of its line or of the text from every quote that starts one, which is
# quadratic in a hostile text (a quote followed by many escaped quotes, or many raw strings
# that are never closed).
_CXX_START = re.compile(r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"|//|/\*|"|(?<![A-Za-z0-9_])\'')
_CXX_RAW_HEAD = re.compile(r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<d>[^()\\\s"]{0,16})\(')
_CXX_RAW_CLOSE = re.compile(r'\)([^()\\\s"]{0,16})"')
_CXX_STRING = re.compile(r'"(?:\\.|[^"\\\n])*("?)')
_CXX_CHAR = re.compile(r"'(?:\\.|[^'\\\n]){1,8}'")


def _blank(text):
    return "\n".join(" " * len(part) for part in text.split("\n"))


def cxx_tokens(text):
    """(start, end) of each comment, string and character literal of a C++ text, in order.

    The same tokens as the regular expression above finds with finditer (tried at the same
    positions), in time linear in the text: a raw string's end is looked up in an index of the
    text's closing delimiters, and a string that is not closed on its line marks
    every quote up to where its scan stopped as failing too (each is escaped inside it, and its
    own scan would stop at the same place).
    """
    size = len(text)
    closers = None          # raw string delimiter -> offsets of its ')delimiter"'
    dead_until = -1         # a '"' before this offset starts no string
    pos = 0
    while True:
        match = _CXX_START.search(text, pos)
        if match is None:
            return
        index = match.start()
        char = text[index]
        end = -1
        if char == "/":
            if text[index + 1] == "/":
                end = text.find("\n", index)
                end = size if end < 0 else end
            else:
                end = text.find("*/", index + 2)
                end = size if end < 0 else end + 2
        elif char == '"':
            if index >= dead_until:
                string = _CXX_STRING.match(text, index)
                if string.group(1):
                    end = string.end()
                else:
                    dead_until = string.end()
        elif char == "'":
            literal = _CXX_CHAR.match(text, index)
            if literal:
                end = literal.end()
        else:
            head = _CXX_RAW_HEAD.match(text, index)
            if head:
                if closers is None:
                    closers = {}
                    for close in _CXX_RAW_CLOSE.finditer(text):
                        closers.setdefault(close.group(1), []).append(close.start())
                delimiter = head.group("d")
                places = closers.get(delimiter, ())
                at = bisect.bisect_left(places, head.end())
                if at < len(places):
                    end = places[at] + len(delimiter) + 2
        if end < 0:
            pos = index + 1
            continue
        yield index, end
        pos = end


def strip_cxx(text, blank_strings=False):
    """Comments (and, if asked, the contents of string literals) replaced by spaces.

    The length and the newlines are kept, so offsets and line numbers stay valid.
    """
    def repl(token):
        if token.startswith("//") or token.startswith("/*"):
            return _blank(token)
        if blank_strings:
            quote = token.index(token[-1]) if token[-1] in "\"'" else 0
            return token[: quote + 1] + _blank(token[quote + 1: -1]) + token[-1]
        return token
    out = []
    pos = 0
    for start, end in cxx_tokens(text):
        out.append(text[pos:start])
        out.append(repl(text[start:end]))
        pos = end
    out.append(text[pos:])
    return "".join(out)


_NEWLINE = re.compile("\n")


def newline_offsets(text):
    """Offsets of the newlines of text, in order."""
    return [match.start() for match in _NEWLINE.finditer(text)]


class NativeUnit:
    """One C++/CUDA source text put together from Python string pieces.

    segments: (start offset, end offset, line starts, first line) where line starts, when
    known, gives the source line of each line of the piece's text (so that a line can be
    computed for any offset); otherwise the piece's first line is used.
    """

    def __init__(self, pieces, complete):
        self.segments = []
        self.node_ids = set()
        text = []
        offset = 0
        for piece_text, line, starts, node_id in pieces:
            self.segments.append((offset, offset + len(piece_text), starts, line))
            if node_id is not None:
                self.node_ids.add(node_id)
            text.append(piece_text)
            offset += len(piece_text)
        self.text = "".join(text)
        self.complete = complete
        self.code = strip_cxx(self.text)
        self.bare = strip_cxx(self.text, blank_strings=True)
        self._segment_starts = [segment[0] for segment in self.segments]
        self._newlines = None

    def line_of(self, offset):
        """The source line of an offset of the text (in O(log n): called for every match)."""
        segments = self.segments
        at = bisect.bisect_left(self._segment_starts, offset)
        if at < len(segments) and segments[at][0] == offset:
            segment = segments[at]          # the first segment that starts at offset
        elif at and offset < segments[at - 1][1]:
            segment = segments[at - 1]
        else:
            return segments[-1][3] if segments else 0
        start, _, starts, line = segment
        if self._newlines is None:
            self._newlines = newline_offsets(self.text)
        index = bisect.bisect_left(self._newlines, offset) - \
            bisect.bisect_left(self._newlines, start)
        if starts and index < len(starts):
            return starts[index]
        return line or 0


_OCTAL = re.compile(r"[0-7]{1,3}")
# (Matched at an offset, not on text[index:]: a copy of the rest of the text at each escape or
# each piece of a literal is quadratic in a literal made of many.)
_LITERAL_OPEN = re.compile(r"([rRuU]{0,2})(\'\'\'|\"\"\"|\'|\")")


def _escape_length(text, index):
    """Length of the escape sequence at text[index] (a backslash) and whether it is a newline."""
    code = text[index + 1]
    if code in "xuU":
        width = {"x": 2, "u": 4, "U": 8}[code]
        digits = text[index + 2: index + 2 + width]
        try:
            return 2 + width, int(digits, 16) == 10
        except ValueError:
            return 2, False
    if code in "01234567":
        match = _OCTAL.match(text, index + 1)
        return 1 + len(match.group(0)), int(match.group(0), 8) == 10
    if code == "N" and text[index + 2: index + 3] == "{":
        end = text.find("}", index)
        if end < 0:
            return 2, False
        return end + 1 - index, text[index + 3: end].upper() in ("LINE FEED", "LF", "NEW LINE",
                                                                 "NL", "EOL")
    return 2, code == "n"


def literal_line_starts(node, lines, encoded=None):
    """Source line of each line of a string constant's value (None when unsure).

    Reads the literal's own source text: escapes, line continuations and implicit
    concatenation all change how the value's lines sit on the source's lines. encoded, a dict,
    keeps the UTF-8 of the lines where literals start (a line of many literals is encoded once).
    """
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    try:
        chunk = lines[node.lineno - 1: node.end_lineno]
        head = encoded.get(node.lineno) if encoded is not None else None
        if head is None:
            head = chunk[0].encode("utf-8")
            if encoded is not None:
                encoded[node.lineno] = head
        if len(chunk) == 1:
            text = head[node.col_offset: node.end_col_offset].decode("utf-8")
        else:
            tail = chunk[-1].encode("utf-8")[: node.end_col_offset].decode("utf-8")
            text = "\n".join([head[node.col_offset:].decode("utf-8")] + chunk[1:-1] + [tail])
    except (UnicodeError, IndexError):
        return None
    starts = [None]      # None: the value line has not started yet
    line = node.lineno

    def produce(is_newline):
        if starts[-1] is None:
            starts[-1] = line
        if is_newline:
            starts.append(None)

    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == "\n":
            line += 1
            index += 1
            continue
        if char in " \t\f()":
            index += 1
            continue
        if char == "#":
            end = text.find("\n", index)
            index = size if end < 0 else end
            continue
        if char == "\\" and text[index + 1: index + 2] == "\n":
            line += 1
            index += 2
            continue
        match = _LITERAL_OPEN.match(text, index)
        if not match:
            return None
        raw = "r" in match.group(1).lower()
        quote = match.group(2)
        index = match.end()
        while True:
            if index >= size:
                return None
            if text.startswith(quote, index):
                index += len(quote)
                break
            char = text[index]
            if char == "\\" and index + 1 < size:
                follower = text[index + 1]
                if raw:
                    produce(False)
                    if follower == "\n":
                        produce(True)
                        line += 1
                    else:
                        produce(False)
                    index += 2
                    continue
                if follower == "\n":
                    line += 1
                    index += 2
                    continue
                length, newline = _escape_length(text, index)
                produce(newline)
                index += length
                continue
            produce(char == "\n")
            if char == "\n":
                line += 1
            index += 1
    if starts[-1] is None:
        starts[-1] = line
    if len(starts) != node.value.count("\n") + 1:
        return None
    return starts


HOLE = "__kb_hole__"


def flatten_add(node):
    """Operands of a chain a + b + c (left-nested BinOps), without recursion."""
    operands = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        operands.append(node.right)
        node = node.left
    operands.append(node)
    return operands[::-1]


class StringResolver:
    """Static value of Python expressions that build strings (never evaluates anything)."""

    MAX_TEXT = 4 << 20     # characters of one resolved string
    BUDGET = 200000        # resolution steps for a whole file
    # Pieces and characters handled for a whole file: a few names bound to big strings and
    # used many times would otherwise make the work quadratic in the source (see charge).
    WORK = 1 << 26

    def __init__(self, program, names, lines):
        self.program = program
        self.names = names
        self.lines = lines
        self.active = set()
        self.memo = {}
        self.budget = self.BUDGET
        self.work = self.WORK
        self._class_binds = None
        self.encoded_lines = {}

    def charge(self, amount):
        """Counts work (pieces copied, characters handled) against WORK; past it, AnalysisLimit.

        Honest files stay far below it; past it the analysis would not end in reasonable time.
        """
        self.work -= amount
        if self.work < 0:
            raise AnalysisLimit("the source's strings take more than %d steps to put together"
                                % self.WORK)

    def resolve(self, node, scope):
        """List of pieces (text, line, line starts, node id) and a completeness flag, or None."""
        key = (id(node), id(scope))
        if key in self.memo:
            return self.memo[key]
        if key in self.active or self.budget <= 0:
            return None
        self.budget -= 1
        self.active.add(key)
        try:
            result = self._resolve(node, scope)
        finally:
            self.active.discard(key)
        if result is not None:
            self.charge(len(result[0]))
            if sum(len(p[0]) for p in result[0]) > self.MAX_TEXT:
                result = None
        self.memo[key] = result
        return result

    def _resolve(self, node, scope):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                starts = literal_line_starts(node, self.lines, self.encoded_lines)
                return [(node.value, node.lineno, starts, id(node))], True
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return [(str(node.value), node.lineno, None, None)], True
            return None
        if isinstance(node, ast.JoinedStr):
            return self._joined(node, scope)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._concat(flatten_add(node), scope, "")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self.resolve(node.left, scope)
            return (left[0], False) if left else None
        if isinstance(node, (ast.List, ast.Tuple)):
            return self._concat(node.elts, scope, "\n")
        if isinstance(node, ast.IfExp):
            return self._concat([node.body, node.orelse], scope, "\n")
        if isinstance(node, ast.Name):
            return self._name(node.id, scope)
        if isinstance(node, ast.Attribute):
            return self._class_attr(node, scope)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        return None

    def _joined(self, node, scope):
        text, complete = [], True
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                text.append(value.value)
                continue
            inner = None
            if isinstance(value, ast.FormattedValue) and value.format_spec is None:
                inner = self.resolve(value.value, scope)
            if inner and inner[1] and len(inner[0]) == 1:
                text.append(inner[0][0][0])
            else:
                text.append(HOLE)
                complete = False
        size = sum(map(len, text))
        if size > self.MAX_TEXT:
            return None         # (not kept anyway: see resolve)
        self.charge(size)
        joined = "".join(text)
        count = joined.count("\n")
        starts = None
        if (node.end_lineno or node.lineno) - node.lineno == count:
            starts = [node.lineno + k for k in range(count + 1)]
        return [(joined, node.lineno, starts, id(node))], complete

    def _concat(self, nodes, scope, separator):
        pieces, complete, found = [], True, False
        self.charge(len(nodes))
        for index, item in enumerate(nodes):
            if isinstance(item, ast.Starred):
                item = item.value
            part = self.resolve(item, scope)
            if index and separator:
                pieces.append((separator, 0, None, None))
            if part is None:
                complete = False
                continue
            found = True
            self.charge(len(part[0]))
            pieces.extend(part[0])
            complete = complete and part[1]
        return (pieces, complete) if found else None

    def _name(self, name, scope):
        while scope is not None:
            binds = scope.bindings.get(name)
            if binds:
                nodes = [b.node for b in binds if b.kind in ("value", "aug") and not b.path]
                if not nodes:
                    return None
                return self._concat(nodes, self.program.scope_of_owner(binds[0].owner), "\n")
            scope = scope.parent
        return None

    def _class_attr(self, node, scope):
        # self.SRC / cls.SRC / ClassName.SRC: a string assigned in the class body.
        if not isinstance(node.value, ast.Name):
            return None
        if self._class_binds is None:
            # attr -> (class, its bindings of attr), classes in order: one look-up per use
            # rather than a pass over every class of the file.
            self._class_binds = {}
            for info in self.program.classes.values():
                for attr, binds in (info.scope.bindings.items() if info.scope else ()):
                    self._class_binds.setdefault(attr, []).append((info, binds))
        for info, binds in self._class_binds.get(node.attr, ()):
            if binds and (node.value.id in ("self", "cls") or node.value.id == info.name):
                nodes = [b.node for b in binds if b.kind == "value" and not b.path]
                if nodes:
                    return self._concat(nodes, info.outer, "\n")
        return None

    def _call(self, node, scope):
        func = node.func
        qual = self.names.qual(func) or ""
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else ""
        if qual in ("textwrap.dedent", "inspect.cleandoc", "builtins.str") or \
                (name in ("dedent", "cleandoc") and node.args) or (name == "str" and node.args):
            if not node.args:
                return None
            inner = self.resolve(node.args[0], scope)
            if inner is None:
                return None
            self.charge(sum(len(p[0]) for p in inner[0]))
            return [(textwrap.dedent(t), l, e, i) for t, l, e, i in inner[0]], inner[1]
        if isinstance(func, ast.Attribute):
            base = func.value
            if name in ("strip", "lstrip", "rstrip") and not node.args:
                inner = self.resolve(base, scope)
                if inner is None:
                    return None
                self.charge(len(inner[0][0][0]) + len(inner[0][-1][0]) if inner[0] else 0)
                return self._strip(inner[0], name), inner[1]
            if name == "join" and len(node.args) == 1:
                sep = self.resolve(base, scope)
                sep_text = sep[0][0][0] if sep and len(sep[0]) == 1 else "\n"
                items = node.args[0]
                if isinstance(items, (ast.List, ast.Tuple)):
                    return self._concat(items.elts, scope, sep_text)
                inner = self.resolve(items, scope)
                return inner
            if name == "format":
                inner = self.resolve(base, scope)
                return (inner[0], False) if inner else None
            if name == "replace" and len(node.args) >= 2:
                inner = self.resolve(base, scope)
                old = self.resolve(node.args[0], scope)
                new = self.resolve(node.args[1], scope)
                if inner is None:
                    return None
                if old and new and len(old[0]) == 1 and len(new[0]) == 1:
                    a, b = old[0][0][0], new[0][0][0]
                    # The result's size, known before it is made: over MAX_TEXT it is not
                    # kept anyway (resolve), and x.replace("", big) is huge.
                    size = sum(len(t) + t.count(a) * (len(b) - len(a)) for t, _, _, _ in inner[0])
                    self.charge(sum(len(p[0]) for p in inner[0]) + max(size, 0))
                    if size > self.MAX_TEXT:
                        return None
                    same = "\n" not in a and "\n" not in b
                    return [(t.replace(a, b), l, e if same else None, i)
                            for t, l, e, i in inner[0]], inner[1] and old[1] and new[1]
                return inner[0], False
        return None

    @staticmethod
    def _strip(pieces, how):
        out = list(pieces)
        if out and how in ("strip", "lstrip"):
            text, line, starts, node_id = out[0]
            stripped = text.lstrip()
            removed = text[: len(text) - len(stripped)].count("\n")
            if starts:
                starts = starts[removed:]
                line = starts[0] if starts else line
            out[0] = (stripped, line, starts, node_id)
        if out and how in ("strip", "rstrip"):
            text, line, starts, node_id = out[-1]
            out[-1] = (text.rstrip(), line, starts, node_id)
        return out


# --- what the native sources define and call

_LAUNCH_ATTRS = ("__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__",
                 "__maxnreg__", "__cluster_dims__")


_SKIP_PARENS_WINDOW = 20000     # a parameter list closes within these many characters
_HEAD_STOPS = re.compile(r"[;{}=(]")
_DECLARATION_STOPS = re.compile(r"[;{}#]")
_HOST_MARK = re.compile(r"(?=__host__)")
# The name of a function header is what ([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*$ finds searched in
# the text from the keyword to the '(' (not applied as such: searched from every keyword, it is
# quadratic in a long head; see _FunctionScanner.name).
_FUNCTION_TAIL = re.compile(r"(?:\s|const\b|noexcept\b|__attribute__\s*\(\([^)]*\)\))*([{;])?")
# Backward scans, as forward matches over the reversed text.
_REV_SPACE = re.compile(r"\s*")
_REV_WORD = re.compile(r"\w*")
_REV_TEMPLATE = re.compile(r"[^<>;{}()]*")
_NOT_IDENT_START = re.compile(r"[^A-Za-z_]*")


def _positions(pattern, code):
    return [match.start() for match in pattern.finditer(code)]


def _matching(code, opening, closing):
    """opening offset -> offset of its closing bracket, for the brackets that are closed."""
    pairs, stack = {}, []
    for match in re.finditer("[%s]" % re.escape(opening + closing), code):
        if match.group(0) == opening:
            stack.append(match.start())
        elif stack:
            pairs[stack.pop()] = match.start()
    return pairs


class _FunctionScanner:
    """What cuda_functions needs to know about one text, each found once (linear time).

    A header's pieces are found in indices built once (brackets matched with a stack, sorted
    offsets looked up by bisection) instead of by scans from each keyword: a text made of many
    keywords, brackets or a huge identifier would make those scans quadratic.
    """

    def __init__(self, code):
        self.code = code
        self.size = len(code)
        self.reverse = code[::-1]
        self.stops = _positions(_HEAD_STOPS, code)
        self.declaration_stops = _positions(_DECLARATION_STOPS, code)
        self.hosts = _positions(_HOST_MARK, code)
        self.parens = _matching(code, "(", ")")
        self.braces = None
        self.heads = {}         # offset of '(' -> (name start, name end) in the text before it
        self.names = {}         # (start, end) -> name

    def paren_after(self, pos):
        """Offset of the first '(' at or after pos when no ';{}=' comes before it, else -1."""
        at = bisect.bisect_left(self.stops, pos)
        if at == len(self.stops) or self.code[self.stops[at]] != "(":
            return -1
        return self.stops[at]

    def _back(self, pattern, end):
        """Start of the run that pattern matches backwards from end (exclusive)."""
        rev = self.size - end
        return end - (pattern.match(self.reverse, rev).end() - rev)

    def _head(self, paren):
        """(start, end) of the header name (see above) found in code[:paren], start -1 if none.

        With a head that starts later than 0, the answer is the same when the head does not
        start inside the name (see name).
        """
        code = self.code
        end = self._back(_REV_SPACE, paren)
        if end and code[end - 1] == ">":
            bracket = self._back(_REV_TEMPLATE, end - 1) - 1
            if bracket < 0 or code[bracket] != "<":
                return -1, -1
            end = self._back(_REV_SPACE, bracket)
        first = self._back(_REV_WORD, end)
        start = _NOT_IDENT_START.match(code, first, end).end()
        return (start, end) if start < end else (-1, -1)

    def name(self, pos, paren):
        """(name, offset) of the header name (see above) in the head code[pos:paren], or None.

        A head starts after a keyword (at a word's end, before a character that is not of a
        word) or after a ')': never inside the name, which therefore starts at or after pos
        when it ends after it.
        """
        head = self.heads.get(paren)
        if head is None:
            head = self.heads[paren] = self._head(paren)
        start, end = head
        if start < 0 or pos >= end:
            return None
        key = (start, end)
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = self.code[start:end]
        return name, start

    def skip_parens(self, open_pos):
        close = self.parens.get(open_pos)
        if close is None or close >= open_pos + _SKIP_PARENS_WINDOW:
            return -1
        return close + 1

    def skip_braces(self, open_pos):
        if self.braces is None:
            self.braces = _matching(self.code, "{", "}")
        close = self.braces.get(open_pos)
        return self.size if close is None else close + 1

    def declaration_start(self, offset):
        at = bisect.bisect_left(self.declaration_stops, offset)
        return self.declaration_stops[at - 1] if at else -1

    def has_host(self, start, end):
        at = bisect.bisect_left(self.hosts, start)
        return at < len(self.hosts) and self.hosts[at] + len("__host__") <= end


def cuda_functions(code, keyword="__global__"):
    r"""Function headers marked with keyword (__global__ or __device__).

    Yields (name, offset of the name, offset of the keyword, end of the declaration or of
    the body, is a definition, is also __host__).

    What is found is what this finds, scanning from each keyword:
        paren = the first '(' after the keyword, with no ';{}=' before it;
        the name: ([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>)?\s*$ searched in the head (from the
            keyword to paren); a name in _LAUNCH_ATTRS (__launch_bounds__(...) ...) is
            skipped, up to 8 times;
        after = the end of the parameter list: where the brackets from paren close, if
            within 20000 characters;
        _FUNCTION_TAIL matched in code[after:after + 300] tells a definition ('{');
        a definition ends where its braces close (or at the end of the text);
        the declaration starts after the last ';{}#' before the keyword.
    """
    scanner = None
    for match in re.finditer(r"\b%s\b" % keyword, code):
        if scanner is None:
            scanner = _FunctionScanner(code)
        pos = match.end()
        for _ in range(8):
            paren = scanner.paren_after(pos)
            if paren < 0:
                break
            found = scanner.name(pos, paren)
            if not found:
                break
            name, name_offset = found
            after = scanner.skip_parens(paren)
            if after < 0:
                break
            if name in _LAUNCH_ATTRS:
                pos = after
                continue
            tail = _FUNCTION_TAIL.match(code[after:after + 300])
            is_def = bool(tail and tail.group(1) == "{")
            end = after + tail.end() if tail else after
            if is_def:
                end = scanner.skip_braces(end - 1)
            start = scanner.declaration_start(match.start())
            host = scanner.has_host(start + 1, paren)
            yield (name, name_offset, match.start(), end, is_def, host)
            break


def global_functions(code):
    """(name, offset of the name, is a definition) for each __global__ function header."""
    return [(name, offset, is_def) for name, offset, _, _, is_def, _ in cuda_functions(code)]


def host_code(code):
    """code without the bodies of __global__ and device-only functions (host code only)."""
    spans = []
    for keyword in ("__global__", "__device__"):
        for _, _, start, end, is_def, host in cuda_functions(code, keyword):
            if is_def and not host:
                spans.append((start, min(end, len(code))))
    if not spans:
        return code
    out = []
    pos = 0
    for start, end in sorted(spans):
        start = max(start, pos)
        if end <= start:
            continue
        out.append(code[pos:start])
        out.append(_blank(code[start:end]))
        pos = end
    out.append(code[pos:])
    return "".join(out)


def word_offsets(code, names):
    """name -> offsets where it stands as a whole word (as r'\bname\b' finds it), for names.

    One pass over the text for all names, instead of one search per name.
    """
    out = {}
    if names:
        for match in re.finditer(r"\w+", code):
            if match.group(0) in names:
                out.setdefault(match.group(0), []).append(match.start())
    return out


# ATen / torch C++ calls that are not compute: allocation, views, metadata, types, utilities.
NATIVE_NOT_COMPUTE = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "from_blob", "tensor", "scalar_tensor", "arange", "linspace", "eye",
    "reshape", "view", "flatten", "unflatten", "permute", "transpose", "t", "squeeze",
    "unsqueeze", "narrow", "select", "split", "chunk", "unbind", "expand", "expand_as",
    "as_strided", "contiguous", "movedim", "view_as_real", "view_as_complex", "slice",
    "detach", "clone", "to", "device", "dtype", "layout", "requires_grad", "memory_format",
    "ceil_div", "get_num_threads", "set_num_threads", "parallel_for", "parallel_reduce",
    "manual_seed", "globalContext", "toString", "elementSize", "typeMetaToScalarType",
    "isFloatingType", "isComplexType", "isIntegralType", "checkAllSameGPU", "checkContiguous",
    "checkDim", "checkSize", "checkSameGPU", "opmath_type", "acc_type", "numel", "size",
    "stride", "data_ptr", "is_contiguous", "get_generator_or_default", "check_generator",
    "getCurrentCUDAStream", "getDefaultCUDAStream", "device_of", "options", "scalarTypeToTypeMeta",
    "default_dtype", "get_default_dtype", "empty_cuda", "empty_cpu", "resize_", "copy_",
    "zero_", "fill_", "cat_out_check", "record_function", "is_same_size", "numeric_limits",
}
NATIVE_SKIP_NAMESPACES = {"cuda", "indexing", "detail", "autograd", "jit", "library", "utils",
                          "hip", "mps", "xpu", "vec", "cpu", "internal", "philox", "Tag",
                          "impl", "dispatch"}
NATIVE_COMPUTE_METHODS = (
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "einsum", "conv1d",
    "conv2d", "conv3d", "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "relu",
    "relu_", "sigmoid", "sigmoid_", "tanh", "tanh_", "exp", "exp_", "log", "log_", "softmax",
    "log_softmax", "pow", "pow_", "sqrt", "sqrt_", "rsqrt", "abs", "clamp", "clamp_",
    "clamp_min", "clamp_max", "norm", "var", "gelu", "silu", "softplus", "leaky_relu", "hardtanh",
    "elu", "neg", "reciprocal", "erf", "cumsum", "cumprod", "sort", "topk", "masked_fill",
    "index_select", "gather", "scatter", "scatter_add", "add", "add_", "sub", "sub_", "mul",
    "mul_", "div", "div_", "addcmul", "addcdiv", "logsumexp", "max", "min", "minimum",
    "maximum", "where", "tril", "triu", "linear", "sin", "cos", "floor", "ceil", "round",
    "sign", "square", "std",
)
# (The spaces after a template argument list sit inside its group: two \s* in a row would try
# every split of a long run of spaces.)
_NATIVE_CHAIN = re.compile(r"(?<![\w:.>])((?:torch|at)(?:::\w+)+)\s*(?:<[^<>;(){}]*>\s*)?\(")
_NATIVE_METHOD = re.compile(r"[\w\)\]]\s*\.\s*(" + "|".join(NATIVE_COMPUTE_METHODS) + r")\s*\(")


def aten_compute_calls(code):
    """(offset, text) of ATen compute calls: torch::/at:: functions and tensor methods."""
    out = []
    for match in _NATIVE_CHAIN.finditer(code):
        chain = match.group(1)
        parts = chain.split("::")
        last = parts[-1]
        if any(p in NATIVE_SKIP_NAMESPACES for p in parts[1:-1]):
            continue
        if last[:1].isupper() or last.startswith("k") and last[1:2].isupper():
            continue
        if last in NATIVE_NOT_COMPUTE or last.startswith(("empty", "zeros", "ones", "full",
                                                           "rand", "_cast", "is_", "get")):
            continue
        out.append((match.start(1), chain))
    for match in _NATIVE_METHOD.finditer(code):
        out.append((match.start(1), "." + match.group(1) + "()"))
    return out


# Patterns whose regular expression scans to a ';' or ')' from each place where it starts: a text
# with many such starts before one ';' (30,000 'open(' in an '#if 0' block) makes finditer
# quadratic. Each is found here as finditer finds it (the same starts, each search going on
# from where the last match ended), with what follows the start looked up in indices of the
# text built once.

_SEMICOLON = re.compile(";")
_SEMICOLON_OR_CLOSE = re.compile(r"[;)]")
_OPEN_CALL = re.compile(r"(?<![\w.>:])(?:::)?open(?:at|64)?\s*\(")
_OPEN_FLAG = re.compile(r"\bO_(?:RDONLY|WRONLY|RDWR|CREAT)")


def open_with_flags(code):
    r"""Offsets of the matches of (?<![\w.>:])(?:::)?open(?:at|64)?\s*\([^;]*\bO_(?:RDONLY|
    WRONLY|RDWR|CREAT): an open( with an O_ flag before the next ';'. The greedy [^;]* makes a
    match end at the last flag before that ';'."""
    semicolons = flags = None
    pos = 0
    while True:
        call = _OPEN_CALL.search(code, pos)
        if call is None:
            return
        if flags is None:
            semicolons = _positions(_SEMICOLON, code)
            flags = [(m.start(), m.end()) for m in _OPEN_FLAG.finditer(code)]
            flag_starts = [start for start, _ in flags]
        at = bisect.bisect_left(semicolons, call.end())
        limit = semicolons[at] if at < len(semicolons) else len(code)
        last = bisect.bisect_left(flag_starts, limit) - 1
        if last >= 0 and flag_starts[last] >= call.end():
            yield call.start()
            pos = flags[last][1]
        else:
            pos = call.start() + 1


_MATH_MODE_CALL = re.compile(r"\bcublasSetMathMode\s*\(")
_MATH_MODE_FP32 = re.compile(r"\b(?:CUBLAS_DEFAULT_MATH|CUBLAS_PEDANTIC_MATH)\b")


def math_mode_changes(code):
    r"""Offsets of the matches of
    \bcublasSetMathMode\s*\((?![^;)]*\b(?:CUBLAS_DEFAULT_MATH|CUBLAS_PEDANTIC_MATH)\b\s*\)):
    a cublasSetMathMode( whose argument list does not end with a default or pedantic mode. The
    lookahead holds when the first ';' or ')' after the '(' is a ')' that only spaces separate
    from such a mode starting after the '('."""
    ends = None
    fp32_ends = {}          # offset of a ')' -> start of the fp32 mode just before it, or -1
    pos = 0
    while True:
        call = _MATH_MODE_CALL.search(code, pos)
        if call is None:
            return
        if ends is None:
            ends = _positions(_SEMICOLON_OR_CLOSE, code)
            modes = {m.end(): m.start() for m in _MATH_MODE_FP32.finditer(code)}
            reverse = code[::-1]
        at = bisect.bisect_left(ends, call.end())
        close = ends[at] if at < len(ends) and code[ends[at]] == ")" else -1
        if close >= 0 and close not in fp32_ends:
            rev = len(code) - close
            end = close - (_REV_SPACE.match(reverse, rev).end() - rev)
            fp32_ends[close] = modes.get(end, -1)
        if close < 0 or fp32_ends[close] < call.end():
            yield call.start()
            pos = call.end()
        else:
            pos = call.start() + 1


_MMA_SYNC = re.compile(r"\bmma\.sync")
_MMA_RUN = re.compile(r"[\w.]*")
_MMA_TYPE = re.compile(r"\.(?:tf32|f16|bf16)\b")


def reduced_mma(code):
    r"""Offsets of the matches of \bmma\.sync[\w.]*\.(?:tf32|f16|bf16)\b: the greedy [\w.]*
    makes a match end at the last type suffix of the run of word characters and dots."""
    types = None
    run_end = -1
    pos = 0
    while True:
        sync = _MMA_SYNC.search(code, pos)
        if sync is None:
            return
        if types is None:
            types = [(m.start(), m.end()) for m in _MMA_TYPE.finditer(code)]
            type_starts = [start for start, _ in types]
        if sync.end() > run_end:
            run_end = _MMA_RUN.match(code, sync.end()).end()
        last = bisect.bisect_left(type_starts, run_end) - 1
        if last >= 0 and type_starts[last] >= sync.end():
            yield sync.start()
            pos = types[last][1]
        else:
            pos = sync.start() + 1


def native_matches(pattern, code):
    """Start offsets of a native pattern's matches: a regular expression or a function."""
    if callable(pattern):
        return pattern(code)
    return (match.start() for match in re.finditer(pattern, code))


# Native patterns per rule: (regex or function giving match offsets, reason).
NATIVE_PATTERNS = {
    "stream": [
        (r"\bcudaStreamCreate\w*\s*\(", "creates a CUDA stream"),
        (r"\bgetStreamFromPool\s*\(", "takes a stream from the pool"),
        (r"\bsetCurrentCUDAStream\s*\(", "switches the current CUDA stream"),
        (r"\bcudaGraphLaunch\s*\(", "launches a CUDA graph"),
        (r"\bcudaGraphInstantiate\w*\s*\(", "instantiates a CUDA graph"),
        (r"\bcudaStreamBeginCapture\w*\s*\(", "captures a CUDA graph"),
        (r"\bcudaGraphCreate\s*\(", "creates a CUDA graph"),
    ],
    "concurrency": [
        (r"\bstd::j?thread\b", "uses std::thread"),
        (r"\bpthread_create\s*\(", "creates a pthread"),
        (r"(?<![\w.>:])(?:::)?v?fork\s*\(", "forks the process"),
        (r"\bstd::async\s*\(", "uses std::async"),
        (r"(?<![\w.>:])(?:::)?posix_spawnp?\s*\(", "spawns a process"),
    ],
    "subprocess": [
        (r"(?<![\w.>:])(?:std::|::)?system\s*\(", "runs a shell command with system()"),
        (r"(?<![\w.>:])(?:::)?popen\s*\(", "runs a command with popen()"),
        (r"(?<![\w.>:])(?:::)?exec(?:l|lp|le|v|vp|vpe|ve)\s*\(", "executes a program"),
    ],
    "network": [
        (r"(?<![\w.>:])(?:::)?socket\s*\(", "opens a socket"),
        (r"(?<![\w.>:])(?:::)?connect\s*\(", "connects a socket"),
        (r"#\s*include\s*<(?:sys/socket|netinet/\w+|arpa/inet|netdb)\.h>",
         "includes socket headers"),
        (r"\b(?:getaddrinfo|gethostbyname)\s*\(", "resolves host names"),
    ],
    "file_access": [
        (r"\b(?:fopen|fopen64|freopen|fdopen)\s*\(", "opens a file with fopen"),
        (r"\b(?:std::)?(?:i|o)?fstream\b", "uses a file stream"),
        (r"(?<![\w.>:])(?:::)?open(?:at|64)?\s*\(\s*\"", "opens a file path"),
        (open_with_flags, "opens a file"),
        (r"(?<![\w.>:])(?:::)?mmap\s*\(", "maps memory with mmap"),
        (r"/proc/", "names /proc"),
        (r"/dev/shm", "names /dev/shm"),
        (r"\bstd::filesystem::", "uses std::filesystem"),
        (r"\bopendir\s*\(", "lists a directory"),
        (r"(?<![\w.>:])(?:::)?creat(?:64)?\s*\(", "creates a file with creat"),
        (r"\b(?:posix_)?fallocate(?:64)?\s*\(", "allocates file space"),
        (r"\b(?:tmpfile|mkstemps?|mkostemps?|mkdtemp)\s*\(", "makes a temporary file"),
        (r"\b(?:SYS|__NR)_(?:open|openat|openat2|creat|write|pwrite64|fallocate|truncate|"
         r"ftruncate|rename|renameat2?|unlink|unlinkat|mkdir|mkdirat)\b",
         "names a file system call by number"),
        (r"(?<![\w.>:])(?:::)?syscall\s*\(\s*\d", "makes a system call by its number"),
    ],
    "native_access": [
        (r"\bdl(?:m)?open\s*\(", "loads a shared object with dlopen"),
        (r"\bdlsym\s*\(", "looks up a symbol with dlsym"),
        (r"#\s*include\s*<dlfcn\.h>", "includes dlfcn.h"),
    ],
    "monkeypatch": [
        (r"\bTORCH_LIBRARY_(?:IMPL|FRAGMENT)\s*\(\s*(?:aten|prims)\b",
         "re-registers an aten operator"),
        (r"\.impl\s*\(\s*\"aten::", "re-registers an aten operator"),
    ],
}
NATIVE_PRECISION = [
    (r"\b__half2?\b", "uses __half"),
    (r"\bhalf2\b", "uses half2"),
    (r"\b__nv_bfloat162?\b", "uses __nv_bfloat16"),
    (r"\b__floats?2half2?\w*", "converts float to half"),
    (r"\b__floats?2bfloat162?\w*", "converts float to bfloat16"),
    (r"\bwmma::precision::tf32\b", "uses TF32 WMMA"),
    (r"\b__float_to_tf32\b", "rounds to TF32"),
    (reduced_mma, "uses a reduced-precision mma.sync"),
    (r"\bCUBLAS_COMPUTE_32F_FAST_\w+", "uses a fast (reduced-precision) cuBLAS compute type"),
    (r"\bCUBLAS_TF32_TENSOR_OP_MATH\b", "enables TF32 in cuBLAS"),
    # Default and pedantic math modes keep fp32; any other mode allows reduced precision.
    (math_mode_changes, "changes the cuBLAS math mode"),
]
# Anything that does compute without being an ATen call, for the ATen-wrapper test.
_NATIVE_OWN_WORK = re.compile(
    r"\b(?:for|while)\s*\(|\bdo\s*\{|<<<|\bcublas\w*|\bcudnn\w*|\bcusparse\w*|\bcufft\w*"
    r"|\bcurand\w*|\bthrust::|\bcub::|\bcutlass|\bcute::|\bwmma::|\bmma\b|\basm\b"
    r"|\bparallel_for\b|\bparallel_reduce\b|\bstd::(?:transform|for_each|accumulate|inner_product"
    r"|reduce)\b|#\s*pragma\s+omp|\bVectorized\b|\bcudaLaunch\w*|\bcuLaunch\w*")


def native_is_aten_wrapper(units):
    """True when the sources launch no kernel, loop nowhere, and call ATen compute ops.

    Kernels that are defined but never named in host code cannot run, so their bodies (and
    those of device-only functions) do not count: only host code is looked at.
    """
    if not units or not all(u.complete for u in units):
        return False
    kernels = {name for unit in units for name, _, _ in global_functions(unit.bare)}
    calls = False
    for unit in units:
        # Included headers are not used code.
        host = re.sub(r"(?m)^[ \t]*#[ \t]*include[^\n]*", "", host_code(unit.bare))
        if _NATIVE_OWN_WORK.search(host):
            return False
        if word_offsets(host, kernels):
            return False
        calls = calls or bool(aten_compute_calls(host))
    return calls


# m.def("name" for any m, found at every place it starts (overlapping ones too).
_MODULE_DEF = re.compile(r"(?=\b(\w+)\s*\.\s*def\s*\(\s*\"(?:\w+::)?([A-Za-z_]\w*))")


def pybind_functions(code):
    r"""(name, offset) of functions exposed by PYBIND11_MODULE / TORCH_LIBRARY m.def.

    What re.finditer(r'\bm\s*\.\s*def\s*\(\s*"(?:\w+::)?([A-Za-z_]\w*)') finds for each module
    m, modules in sorted order, with one pass over the text for all of them (one per module is
    quadratic in a text that declares many).
    """
    modules = set(re.findall(r"\bPYBIND11_MODULE\s*\(\s*\w+\s*,\s*(\w+)\s*\)", code))
    modules |= set(re.findall(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*\w+\s*,\s*(\w+)\s*\)", code))
    if not modules:
        return []
    found = {}
    ends = {}
    for match in _MODULE_DEF.finditer(code):
        module = match.group(1)
        if module in modules and match.start() >= ends.get(module, 0):
            found.setdefault(module, []).append((match.group(2), match.start(2)))
            ends[module] = match.end(2)
    return [item for module in sorted(found) for item in found[module]]


def torch_library_namespaces(code):
    return set(re.findall(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,", code))


# ======================================================================================
# Program structure: scopes, bindings, classes


class Binding:
    """One place where a name gets a value.

    kind: value (node = assigned expression, path = position inside a tuple target), aug,
    iter (node = iterated expression), with, import (node = qualified name), def, class,
    except, elem (node = an element added to a container), elemiter (elements of node added).
    owner: the function (or module) node whose code performs the binding.
    """

    __slots__ = ("kind", "node", "path", "owner")

    def __init__(self, kind, node, path, owner):
        self.kind, self.node, self.path, self.owner = kind, node, path, owner


class Scope:
    """The names a module, function or class body binds (Python's scoping, simplified)."""

    def __init__(self, node, parent, kind):
        self.node = node
        self.parent = parent          # nearest enclosing function/module scope
        self.kind = kind              # module | function | class
        self.bindings = {}
        self.globals = set()
        self.nonlocals = set()
        self.elems = {}               # name -> element bindings made in this scope
        self.cls = None               # ClassInfo of the class a method is defined in
        self.cls_info = None          # for class scopes
        self.self_name = None         # first parameter of a method
        self.method_kind = None       # "static" | "class" | None


class ClassInfo:
    """A class of the file: its methods, class attributes and what methods store on self."""

    def __init__(self, node, outer):
        self.node = node
        self.cid = id(node)
        self.name = node.name
        self.outer = outer            # scope whose code runs the class statement
        self.scope = None
        self.methods = {}
        self.self_attrs = {}
        self.self_elems = {}
        self.dyn_attrs = []


MUTATORS = {"append": 0, "insert": 1, "appendleft": 0, "add": 0}
PATTERN_BINDERS = tuple(getattr(ast, name) for name in ("MatchAs", "MatchStar", "MatchMapping",
                                                        "TypeAlias") if hasattr(ast, name))


class Program:
    """Scopes and classes of the candidate, built from its syntax tree."""

    def __init__(self, tree):
        self.tree = tree
        self.scopes = {}
        self.classes = {}
        self.funcs = {}
        self.parents = {}
        self.serial = {id(tree): 0}     # id(node) -> walk order: a key stable across runs
        for parent in walk_all(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
                self.serial[id(child)] = len(self.serial)
        self._elem_index = None
        self.foreign_attrs = {}       # attr -> bindings of obj.attr = v where obj is not self
        self.dynamic_writes = []      # nodes that write attributes or globals by computed name
        self.module_scope = Scope(tree, None, "module")
        self.scopes[id(tree)] = self.module_scope
        for stmt in tree.body:
            self._visit(stmt, self.module_scope)

    def binding_scope(self, scope, name):
        """The scope whose binding of name a use in scope refers to (None: a builtin)."""
        current = scope
        while current is not None:
            if current.kind == "function" and name in current.globals:
                return self.module_scope if name in self.module_scope.bindings else None
            if name in current.bindings:
                return current
            current = current.parent
        return None

    def element_bindings(self, scope, name):
        """Element bindings (x.append(v), x[k] = v) of the name bound in scope."""
        if self._elem_index is None:
            self._elem_index = {}
            for other in list(self.scopes.values()):
                for elem_name, binds in other.elems.items():
                    target = self.binding_scope(other, elem_name)
                    if target is not None:
                        self._elem_index.setdefault((id(target), elem_name), []).extend(binds)
        return self._elem_index.get((id(scope), name), [])

    def scope_of_owner(self, owner):
        return self.scopes.get(id(owner), self.module_scope)

    def enclosing_function(self, node):
        """Innermost FunctionDef/Lambda containing node, or the module."""
        current = self.parents.get(id(node))
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return current
            current = self.parents.get(id(current))
        return self.tree

    # --- building

    @staticmethod
    def _function_scope(scope):
        while scope.kind == "class":
            scope = scope.parent
        return scope

    def _owner(self, scope):
        return self._function_scope(scope).node

    def _bind(self, scope, name, binding):
        if scope.kind == "class":
            if binding.kind == "def":
                scope.cls_info.methods[name] = binding.node
                return
        elif scope.kind == "function":
            if name in scope.globals:
                scope = self.module_scope
            elif name in scope.nonlocals and scope.parent is not None:
                scope = scope.parent
        scope.bindings.setdefault(name, []).append(binding)

    def _bind_target(self, target, value, kind, scope, path=()):
        owner = self._owner(scope)
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, Binding(kind, value, path, owner))
        elif isinstance(target, (ast.Tuple, ast.List)):
            for index, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self._bind_target(elt.value, value, kind, scope, path + ("*",))
                else:
                    self._bind_target(elt, value, kind, scope, path + (index,))
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, value, kind, scope, path + ("*",))
        elif isinstance(target, ast.Attribute):
            self._bind_self_attr(target, value, kind, scope, path)
        elif isinstance(target, ast.Subscript) and kind == "value":
            base = target.value
            if isinstance(base, ast.Attribute) and base.attr == "__dict__":
                self.dynamic_writes.append(target)
            self._bind_element(target.value, value, "elem", scope)

    def _self_base(self, node, scope):
        """The method scope when node is the method's self parameter."""
        fscope = self._function_scope(scope)
        if fscope.cls is not None and fscope.self_name and isinstance(node, ast.Name) \
                and node.id == fscope.self_name:
            return fscope
        return None

    def _bind_self_attr(self, target, value, kind, scope, path):
        fscope = self._self_base(target.value, scope)
        if fscope is not None:
            fscope.cls.self_attrs.setdefault(target.attr, []).append(
                Binding(kind, value, path, fscope.node))
        else:
            # obj.x = v on anything but self: any object's x may be v.
            self.foreign_attrs.setdefault(target.attr, []).append(
                Binding(kind, value, path, self._owner(scope)))

    def _bind_element(self, container, value, kind, scope):
        owner = self._owner(scope)
        if isinstance(container, ast.Name):
            # x.append(v) / x[k] = v do not bind x: kept apart, joined to x's own scope later.
            fscope = self._function_scope(scope)
            fscope.elems.setdefault(container.id, []).append(Binding(kind, value, (), owner))
        elif isinstance(container, ast.Attribute):
            fscope = self._self_base(container.value, scope)
            if fscope is not None:
                fscope.cls.self_elems.setdefault(container.attr, []).append(
                    Binding(kind, value, (), fscope.node))

    @staticmethod
    def _params(fscope, args):
        # Parameters are local names; their values come from each calling context.
        for arg in args.posonlyargs + args.args + args.kwonlyargs:
            fscope.bindings.setdefault(arg.arg, [])
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                fscope.bindings.setdefault(arg.arg, [])

    def _prescan_globals(self, body, fscope):
        stack = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Global):
                fscope.globals.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                fscope.nonlocals.update(node.names)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            stack.extend(ast.iter_child_nodes(node))

    def _visit_function(self, node, scope):
        for deco in node.decorator_list:
            self._visit(deco, scope)
        self._visit_defaults(node.args, scope)
        self._bind(scope, node.name, Binding("def", node, (), self._owner(scope)))
        fscope = Scope(node, self._function_scope(scope), "function")
        if scope.kind == "class":
            fscope.cls = scope.cls_info
            decos = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")
                     for d in node.decorator_list}
            if "staticmethod" in decos:
                fscope.method_kind = "static"
            elif "classmethod" in decos:
                fscope.method_kind = "class"
            positional = node.args.posonlyargs + node.args.args
            if fscope.method_kind != "static" and positional:
                fscope.self_name = positional[0].arg
        self.scopes[id(node)] = fscope
        self.funcs[id(node)] = node
        self._params(fscope, node.args)
        self._prescan_globals(node.body, fscope)
        for stmt in node.body:
            self._visit(stmt, fscope)

    def _visit_defaults(self, args, scope):
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self._visit(default, scope)

    def _visit(self, node, scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._visit_function(node, scope)
            return
        if isinstance(node, ast.Lambda):
            self._visit_defaults(node.args, scope)
            fscope = Scope(node, self._function_scope(scope), "function")
            self.scopes[id(node)] = fscope
            self.funcs[id(node)] = node
            self._params(fscope, node.args)
            self._visit(node.body, fscope)
            return
        if isinstance(node, ast.ClassDef):
            for expr in node.bases + [k.value for k in node.keywords] + node.decorator_list:
                self._visit(expr, scope)
            info = ClassInfo(node, self._function_scope(scope))
            self.classes[info.cid] = info
            cscope = Scope(node, self._function_scope(scope), "class")
            cscope.cls_info = info
            info.scope = cscope
            self._bind(scope, node.name, Binding("class", node, (), self._owner(scope)))
            for stmt in node.body:
                self._visit(stmt, cscope)
            return
        if isinstance(node, ast.Assign):
            self._visit(node.value, scope)
            for target in node.targets:
                self._bind_target(target, node.value, "value", scope)
                self._visit_target_parts(target, scope)
            return
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._visit(node.value, scope)
                self._bind_target(node.target, node.value, "value", scope)
            return
        if isinstance(node, ast.AugAssign):
            self._visit(node.value, scope)
            if isinstance(node.target, ast.Name):
                self._bind(scope, node.target.id,
                           Binding("aug", node.value, (), self._owner(scope)))
            elif isinstance(node.target, ast.Attribute):
                self._bind_self_attr(node.target, node.value, "aug", scope, ())
            return
        if isinstance(node, ast.NamedExpr):
            self._visit(node.value, scope)
            self._bind_target(node.target, node.value, "value", scope)
            return
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self._visit(node.iter, scope)
            self._bind_target(node.target, node.iter, "iter", scope)
            for stmt in node.body + node.orelse:
                self._visit(stmt, scope)
            return
        if isinstance(node, ast.comprehension):
            self._visit(node.iter, scope)
            self._bind_target(node.target, node.iter, "iter", scope)
            for cond in node.ifs:
                self._visit(cond, scope)
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self._visit(item.context_expr, scope)
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, item.context_expr, "with", scope)
            for stmt in node.body:
                self._visit(stmt, scope)
            return
        if isinstance(node, ast.ExceptHandler):
            if node.name:
                self._bind(scope, node.name, Binding("except", None, (), self._owner(scope)))
        elif isinstance(node, PATTERN_BINDERS):
            # Names bound by match patterns or type aliases: of unknown kind.
            name = getattr(node, "name", None) or getattr(node, "rest", None)
            if isinstance(name, ast.Name):
                name = name.id
            if isinstance(name, str):
                self._bind(scope, name, Binding("unknown", None, (), self._owner(scope)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                qual = alias.name if alias.asname else alias.name.split(".")[0]
                self._bind(scope, name, Binding("import", qual, (), self._owner(scope)))
            return
        elif isinstance(node, ast.ImportFrom):
            base = "." * (node.level or 0) + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    continue
                qual = base + "." + alias.name if base and not base.endswith(".") \
                    else base + alias.name
                self._bind(scope, alias.asname or alias.name,
                           Binding("import", qual, (), self._owner(scope)))
            return
        elif isinstance(node, ast.Call):
            self._record_mutation(node, scope)
        for child in ast.iter_child_nodes(node):
            self._visit(child, scope)

    def _visit_target_parts(self, target, scope):
        # Subscript and attribute targets evaluate sub-expressions (x[f(y)] = ...).
        for child in ast.iter_child_nodes(target):
            if not isinstance(child, (ast.Name, ast.Load, ast.Store)):
                self._visit(child, scope)

    def _record_mutation(self, call, scope):
        func = call.func
        if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) >= 3:
            fscope = self._self_base(call.args[0], scope)
            name = call.args[1]
            constant = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if fscope is not None:
                if constant:
                    fscope.cls.self_attrs.setdefault(name.value, []).append(
                        Binding("value", call.args[2], (), fscope.node))
                else:
                    fscope.cls.dyn_attrs.append(Binding("value", call.args[2], (), fscope.node))
            elif constant:
                self.foreign_attrs.setdefault(name.value, []).append(
                    Binding("value", call.args[2], (), self._owner(scope)))
            else:
                self.dynamic_writes.append(call)
            return
        if isinstance(func, ast.Attribute) and func.attr in ("update", "__setitem__",
                                                             "setdefault") and \
                isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__":
            self.dynamic_writes.append(call)
        if isinstance(func, ast.Name) and func.id in ("globals", "vars", "locals"):
            parent = self.parents.get(id(call))
            if isinstance(parent, ast.Attribute) or (
                    isinstance(parent, ast.Subscript) and not isinstance(parent.ctx, ast.Load)):
                self.dynamic_writes.append(call)
        if not isinstance(func, ast.Attribute):
            return
        attr = func.attr
        fscope = self._self_base(func.value, scope)
        if fscope is not None and attr in ("register_buffer", "register_parameter",
                                           "add_module", "register_module") \
                and len(call.args) >= 2:
            name = call.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                fscope.cls.self_attrs.setdefault(name.value, []).append(
                    Binding("value", call.args[1], (), fscope.node))
            else:
                fscope.cls.dyn_attrs.append(Binding("value", call.args[1], (), fscope.node))
            return
        if attr in MUTATORS and len(call.args) > MUTATORS[attr]:
            self._bind_element(func.value, call.args[MUTATORS[attr]], "elem", scope)
        elif attr == "extend" and call.args:
            self._bind_element(func.value, call.args[0], "elemiter", scope)
        elif attr in ("add_module", "register_module", "__setitem__", "update", "setdefault") \
                and len(call.args) >= 2:
            self._bind_element(func.value, call.args[1], "elem", scope)


# ======================================================================================
# Kinds: what a Python value can be, as far as the analysis can tell
#
# A kind is a small tuple; an expression evaluates to a frozenset of kinds (any of them).
#   ("tensor",)                     a tensor (or a tuple/list of tensors)
#   ("scalar",)                     a number, string, None, shape, dtype...
#   ("safe",)                       an object known to hold no kernel (stream, exception, ...)
#   ("unknown",)                    anything
#   ("module", qual)                an imported module or a member of one; builtins.<name>
#   ("ext", load id)                an extension module returned by load_inline/load
#   ("extfn", load id, name)        one of its functions
#   ("jit", backend, name, launch)  a @triton.jit (or other DSL) kernel; launch: k[grid]
#   ("rawk",) ("rawmod",) ("rawget",)  CuPy raw kernels
#   ("class", cid) ("inst", cid)    a class defined in the file / an instance of one
#   ("super", cid, self kind)
#   ("func", fid, bound self kind or None, parent context id)
#   ("nnmod", qual) ("nnattr", qual, attr)  a torch.nn module instance / its attribute
#   ("tmethod", name)               a bound tensor method
#   ("container", elements, sequential)  list/tuple/ModuleList; Sequential is sequential
#   ("tuple", (element kind sets...))
#   ("dict",)                       calls through dicts are unknown

T = ("tensor",)
S = ("scalar",)
SAFE = ("safe",)
U = ("unknown",)
FT, FS, FSAFE, FU = frozenset([T]), frozenset([S]), frozenset([SAFE]), frozenset([U])
EMPTY = frozenset()
MAX_KINDS = 24


def _depth(kind):
    if kind[0] == "container":
        return 1 + max((_depth(k) for k in kind[1]), default=0)
    if kind[0] == "tuple":
        return 1 + max((_depth(k) for ks in kind[1] for k in ks), default=0)
    return 0


def norm(kinds):
    kinds = frozenset(kinds)
    return FU if len(kinds) > MAX_KINDS else kinds


def container(elements, sequential=False):
    kind = ("container", norm(elements), bool(sequential))
    return frozenset([kind]) if _depth(kind) <= 3 else FU


def tuple_kind(element_sets):
    kind = ("tuple", tuple(norm(e) for e in element_sets))
    if len(kind[1]) > 16 or _depth(kind) > 3:
        return container(frozenset().union(*element_sets) if element_sets else EMPTY)
    return frozenset([kind])


def iter_kinds(kinds):
    if not kinds:
        return EMPTY        # not known yet (see Engine._compute_table)
    out = set()
    for kind in kinds:
        tag = kind[0]
        if tag == "container":
            out |= kind[1]
        elif tag == "tuple":
            for ks in kind[1]:
                out |= ks
        elif tag in ("tensor", "scalar", "safe"):
            out.add(kind)
        else:
            out.add(U)
    return norm(out) or FU


def unpack(kinds, path):
    for step in path:
        out = set()
        for kind in kinds:
            tag = kind[0]
            if tag == "tuple":
                if isinstance(step, int) and step < len(kind[1]):
                    out |= kind[1][step]
                else:
                    for ks in kind[1]:
                        out |= ks
            elif tag == "container":
                out.add(kind) if step == "*" else out.update(kind[1])
            elif tag in ("tensor", "scalar", "safe"):
                out.add(kind)
            else:
                out.add(U)
        if not kinds:
            return EMPTY
        kinds = norm(out) or FU
    return kinds


# ======================================================================================
# What PyTorch calls are: glue (no compute) or compute

TORCH_ALLOC = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like", "ones",
    "ones_like", "full", "full_like", "tensor", "as_tensor", "asarray", "from_numpy",
    "frombuffer", "arange", "range", "linspace", "logspace", "eye", "rand", "rand_like",
    "randn", "randn_like", "randint", "randint_like", "randperm", "scalar_tensor", "Tensor",
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "BoolTensor", "ByteTensor", "detach", "clone",
}
TORCH_VIEWS = {
    "reshape", "flatten", "unflatten", "permute", "transpose", "t", "adjoint", "squeeze",
    "unsqueeze", "narrow", "select", "split", "tensor_split", "chunk", "unbind", "movedim",
    "moveaxis", "swapaxes", "swapdims", "as_strided", "broadcast_to", "view_as_real",
    "view_as_complex", "atleast_1d", "atleast_2d", "atleast_3d", "hsplit", "vsplit", "dsplit",
    "squeeze_copy", "expand_copy",
}
TORCH_META = {
    "is_tensor", "is_storage", "is_floating_point", "is_complex", "numel", "result_type",
    "promote_types", "can_cast", "get_default_dtype", "get_default_device", "finfo", "iinfo",
    "broadcast_shapes", "typename", "is_grad_enabled", "is_inference_mode_enabled",
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision", "get_num_threads",
    "is_autocast_enabled", "initial_seed", "sym_int", "sym_float", "is_nonzero",
}
TORCH_MISC = {
    "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed", "seed",
    "get_rng_state", "set_rng_state", "set_default_dtype", "set_default_device",
    "set_printoptions", "set_num_threads", "use_deterministic_algorithms", "_assert",
    "set_float32_matmul_precision", "device", "dtype", "Size", "Generator", "autocast",
    "set_autocast_enabled", "cdiv",
}
TORCH_TRANSPARENT = {
    "torch.compile", "torch.jit.script", "torch.jit.trace", "torch.cuda.make_graphed_callables",
    "torch.vmap", "torch.func.vmap", "torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
    "torch.compiler.disable", "torch._dynamo.disable", "torch.library.custom_op",
    "torch.library.triton_op", "torch.library.wrap_triton",
}
# Submodules whose calls return nothing that can run code of the candidate's.
TORCH_INERT_SUBMODULES = {"cuda", "backends", "random", "testing", "profiler", "amp", "cpu",
                          "mps", "xpu", "accelerator", "version", "autograd", "library",
                          "overrides", "_logging", "types"}
TORCH_NOT_COMPUTE_SUBMODULES = {
    "cuda", "backends", "utils", "jit", "library", "testing", "random", "profiler", "_dynamo",
    "_inductor", "distributed", "multiprocessing", "amp", "cpu", "overrides", "fx", "compiler",
    "autograd", "mps", "xpu", "accelerator", "types", "serialization", "storage",
    "_utils", "version", "hub", "export", "cpp", "classes", "_logging", "ao",
}
TORCH_OP_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "_c10d_functional",
                       "c10d_functional", "_c10d_functional_autograd", "higher_order", "rngprims",
                       "inductor", "_nested_tensor", "debugprims", "profiler"}
TENSOR_GLUE_METHODS = {
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "permute", "transpose",
    "t", "contiguous", "unsqueeze", "squeeze", "unsqueeze_", "squeeze_", "transpose_", "t_",
    "expand", "expand_as", "narrow", "select", "split", "split_with_sizes", "tensor_split",
    "chunk", "unbind", "movedim", "moveaxis", "swapaxes", "swapdims", "as_strided", "unfold",
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "get_device", "to",
    "cuda", "cpu", "float", "double", "half", "bfloat16", "int", "long", "short", "bool",
    "byte", "char", "type", "type_as", "detach", "detach_", "clone", "copy_", "zero_", "fill_",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "new_empty_strided",
    "requires_grad_", "item", "tolist", "numpy", "untyped_storage", "storage", "pin_memory",
    "share_memory_", "record_stream", "is_pinned", "dim_order", "resize_", "resize_as_",
    "retain_grad", "__len__", "is_set_to", "is_shared", "set_", "nbytes", "itemsize",
    "is_same_size", "is_nonzero", "view_as_real", "view_as_complex", "as_subclass",
}
TENSOR_SCALAR_METHODS = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "data_ptr",
    "element_size", "is_contiguous", "is_floating_point", "is_complex", "get_device", "item",
    "tolist", "is_pinned", "dim_order", "is_set_to", "is_shared", "nbytes", "itemsize",
    "is_same_size", "is_nonzero", "__len__", "type", "untyped_storage", "storage", "numpy",
}
TENSOR_SCALAR_ATTRS = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "requires_grad",
    "is_leaf", "layout", "names", "is_sparse", "is_quantized", "is_mkldnn", "grad_fn",
    "is_nested", "itemsize", "nbytes", "output_nr", "_version",
}
TENSOR_TENSOR_ATTRS = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
CONTAINER_METHODS = {"append", "extend", "insert", "index", "count", "clear", "reverse", "sort",
                     "remove", "__len__", "__contains__", "pop", "get", "keys", "values", "items",
                     "setdefault", "update", "popitem", "copy", "add", "discard"}
INVOKING_TENSOR_METHODS = {"apply_", "map_", "map2_", "register_hook"}
NN_GLUE_MODULES = {"Identity", "Flatten", "Unflatten", "Dropout", "Dropout1d", "Dropout2d",
                   "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
NN_MODULE_METHODS = {
    "parameters", "named_parameters", "buffers", "named_buffers", "children",
    "named_children", "modules", "named_modules", "train", "eval", "to", "cuda", "cpu",
    "float", "double", "half", "bfloat16", "register_buffer", "register_parameter",
    "add_module", "register_module", "state_dict", "load_state_dict", "zero_grad",
    "requires_grad_", "extra_repr", "type", "get_parameter", "get_buffer", "get_submodule",
    "flatten_parameters", "reset_parameters", "__init__", "_get_name", "to_empty",
}
NN_INVOKING_METHODS = {"apply", "register_forward_hook", "register_forward_pre_hook",
                       "register_full_backward_hook", "register_backward_hook"}
# Methods whose name alone says "tensor compute" (used where the receiver is unknown).
TENSOR_COMPUTE_NAMES = set(NATIVE_COMPUTE_METHODS) | {
    "softmax", "matmul", "relu", "sigmoid", "tanh", "conv2d", "bmm", "baddbmm", "addmm",
    "mean", "sum", "var", "std", "layer_norm", "batch_norm", "group_norm", "instance_norm",
    "gelu", "silu", "mish", "hardswish", "hardsigmoid", "logsumexp", "cumsum", "einsum",
}

# Standard-library modules whose calls neither launch kernels nor return callables.
STDLIB_SAFE = {
    "math", "cmath", "time", "random", "os", "sys", "re", "string", "textwrap", "json",
    "warnings", "logging", "numbers", "statistics", "struct", "hashlib", "enum",
    "abc", "numpy", "platform", "datetime", "decimal", "fractions", "heapq", "bisect",
    "array", "pathlib", "shutil", "glob", "tempfile", "io", "hmac", "uuid", "base64",
    "binascii", "zlib", "pprint", "traceback", "dataclasses", "secrets", "locale",
}
# Standard-library modules whose calls do not launch kernels but may return callables.
STDLIB_OTHER = {
    "functools", "operator", "itertools", "collections", "contextlib", "types", "copy",
    "inspect", "weakref", "importlib", "pickle", "marshal", "gc", "threading",
    "multiprocessing", "concurrent", "asyncio", "subprocess", "ctypes", "signal", "atexit",
    "builtins", "socket", "urllib", "http", "queue", "sched", "runpy", "codecs", "ast",
    "typing",
}
CALLABLE_TAGS = ("func", "jit", "extfn", "rawk", "inst", "class", "nnmod", "module")
TRANSPARENT_QUALS = {"functools.partial", "copy.copy", "copy.deepcopy", "functools.wraps",
                     "functools.lru_cache", "functools.cache", "cutlass.cute.compile",
                     "cute.compile"}
LOAD_QUALS = {"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"}
BUILTIN_NAMES = set(dir(builtins))
REFERENCE_CLASS_NAMES = {"Model"}

# Decorators that keep a function what it is.
TRANSPARENT_DECORATORS = {
    "staticmethod", "classmethod", "property", "functools.wraps", "functools.lru_cache",
    "functools.cache", "functools.cached_property", "torch.no_grad", "torch.inference_mode",
    "torch.enable_grad", "torch.compile", "torch.jit.script", "torch.jit.ignore",
    "torch.jit.unused", "torch.jit.export", "torch.autocast", "torch.cuda.amp.autocast",
    "torch.amp.autocast", "torch.amp.custom_fwd", "torch.amp.custom_bwd",
    "torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd", "typing.overload",
    "abc.abstractmethod", "torch._dynamo.disable", "torch.compiler.disable",
    "torch.autograd.function.once_differentiable", "torch.library.custom_op",
    "torch._disable_dynamo", "torch.library.triton_op",
}
JIT_DECORATORS = {
    "triton.jit": "triton", "triton.language.jit": "triton", "triton.autotune": "triton",
    "triton.heuristics": "triton", "triton.runtime.jit.jit": "triton",
    "numba.cuda.jit": "numba", "cutlass.cute.jit": "cute", "cutlass.cute.kernel": "cute",
    "cute.jit": "cute", "cute.kernel": "cute", "tilelang.jit": "tilelang",
    "tilelang.language.prim_func": "tilelang", "tvm.script.tir.prim_func": "tilelang",
}


# ======================================================================================
# The engine: evaluation of kinds and classification of calls in reachable code


class Ctx:
    """A function analysed with given parameter kinds (a calling context)."""

    def __init__(self, cid, fnode, scope, params, parent):
        self.id = cid
        self.fnode = fnode
        self.scope = scope
        self.params = params
        self.parent = parent
        self.table = None
        self.computing = False
        self.ret = None
        self.ret_busy = False
        self.walked = False
        self.events = []
        self.callees = []
        self.call_cache = {}
        self.ev_cache = {}


class CallResult:
    """What one call may be: its result kinds and outcomes (kernel, torch, notk, unknown)."""

    __slots__ = ("kinds", "outcomes", "reasons", "callees", "ext_names", "launched", "aten",
                 "unknown_why")

    def __init__(self):
        self.kinds = set()
        self.outcomes = set()
        self.reasons = []
        self.callees = []
        self.ext_names = set()
        self.launched = set()
        self.aten = set()
        self.unknown_why = []

    def add(self, kinds, outcome, reason=None):
        self.kinds |= kinds
        self.outcomes.add(outcome)
        if reason and outcome == "torch":
            self.reasons.append(reason)
        if reason and outcome == "unknown":
            self.unknown_why.append(reason)

    def merge(self, other, keep_kinds=True):
        if keep_kinds:
            self.kinds |= other.kinds
        self.outcomes |= other.outcomes
        self.reasons += other.reasons
        self.callees += other.callees
        self.ext_names |= other.ext_names
        self.launched |= other.launched
        self.aten |= other.aten
        self.unknown_why += other.unknown_why


class Engine:
    """Kinds of expressions and classification of calls, per calling context.

    A function is analysed once per distinct set of argument kinds (a context, capped per
    function); its local names get the union of the kinds of all their bindings (flow-
    insensitive, computed to a fixpoint). walk() records, for every call in a context's body,
    whether it is a kernel call, PyTorch, plain Python or unknown, and which contexts it enters.
    """

    MAX_CONTEXTS_PER_FUNCTION = 10
    # Past this many contexts of one function, AnalysisLimit. Past the first limit, a function
    # still gets a context for each context of the function it is nested in and for each
    # instance or class it is given: with functions nested in one another, that is quadratic in
    # the nesting, and each context is gone over again. Sharing one generic context instead
    # would lose the kinds of instances and of the parent context's names, and with them what
    # the calls reach (a PyTorch call behind a helper given many instances would go unseen):
    # the analysis refuses rather than report less. (Honest code stays far below.)
    HARD_CONTEXTS_PER_FUNCTION = 40
    FIXPOINT_ROUNDS = 8

    def __init__(self, program, names, loads):
        self.program = program
        self.names = names
        self.loads = loads            # id(call) -> LoadInfo
        self.ctxs = []
        self.ctx_memo = {}
        self.ctx_count = {}
        self.generic = {}
        self.attr_busy = set()
        self.attr_memo = {}
        self._summary = {}            # ctx id -> (reaches a kernel event, a torch-only event)
        self._own = {}                # ctx id -> (kernel event, first torch-only result)
        self._reason_memo = {}        # root ctx ids -> reason (reach_torch_reason)
        self.module_ctx = self._new_ctx(program.tree, program.module_scope, {}, None)
        self.torch_ops_wrappers = self._torch_ops_wrappers()

    # --- order

    def ordered(self, kinds):
        """Kinds in an order that does not change from run to run.

        Sets iterate in a per-process order, and kinds hold ids of nodes: the ids are
        replaced by the nodes' walk order.
        """
        return sorted(kinds, key=self._kind_key)

    def _kind_key(self, kind):
        out = []
        for index, part in enumerate(kind):
            if isinstance(part, int) and index == 1 and kind[0] in (
                    "func", "class", "inst", "ext", "extfn", "super"):
                out.append(str(self.program.serial.get(part, part)).zfill(12))
            elif isinstance(part, tuple):
                out.append(self._kind_key(part))
            elif isinstance(part, frozenset):
                out.append(str([self._kind_key(k) for k in self.ordered(part)]))
            else:
                out.append(repr(part))
        return str(out)

    # --- contexts

    def _new_ctx(self, fnode, scope, params, parent):
        ctx = Ctx(len(self.ctxs), fnode, scope, params, parent)
        self.ctxs.append(ctx)
        return ctx

    def parent_ctx_for(self, fnode):
        """Context in which a function's free names are looked up (generic for nesting)."""
        scope = self.program.scopes[id(fnode)]
        parent_scope = scope.parent
        if parent_scope is None or parent_scope.kind == "module":
            return self.module_ctx
        return self.generic_ctx(parent_scope.node)

    def generic_ctx(self, fnode):
        """The function with unknown parameters (self bound for methods; tensors for forward)."""
        if fnode is self.program.tree:
            return self.module_ctx
        ctx = self.generic.get(id(fnode))
        if ctx is not None:
            return ctx
        scope = self.program.scopes[id(fnode)]
        params = {}
        names = self._param_names(fnode)
        is_forward = getattr(fnode, "name", "") == "forward" and scope.cls is not None
        for name in names:
            params[name] = FT if is_forward else FU
        if scope.cls is not None and scope.self_name:
            params[scope.self_name] = frozenset(
                [("class", scope.cls.cid)] if scope.method_kind == "class"
                else [("inst", scope.cls.cid)])
        ctx = self._new_ctx(fnode, scope, params, self.parent_ctx_for(fnode))
        self.generic[id(fnode)] = ctx
        return ctx

    @staticmethod
    def _param_names(fnode):
        args = fnode.args
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
        return names

    def call_ctx(self, fnode, bound, args, kwargs, parent):
        """Context for calling fnode; args None means unknown arguments."""
        fargs = fnode.args
        positional = fargs.posonlyargs + fargs.args
        params = {}
        start = 0
        if bound is not None and positional:
            params[positional[0].arg] = frozenset([bound])
            start = 1
        starred = args is None or any(is_star(a) for a in args)
        given = [] if args is None else [a for a in args if not is_star(a)]
        kwargs = kwargs or {}
        defaults = {}
        first_default = len(positional) - len(fargs.defaults)
        for index, default in enumerate(fargs.defaults):
            defaults[positional[first_default + index].arg] = default
        for arg, default in zip(fargs.kwonlyargs, fargs.kw_defaults):
            if default is not None:
                defaults[arg.arg] = default
        for index, arg in enumerate(positional[start:]):
            if index < len(given) and not starred:
                params[arg.arg] = given[index]
            elif arg.arg in kwargs:
                params[arg.arg] = kwargs[arg.arg]
            elif starred or None in kwargs:
                params[arg.arg] = FU
            elif arg.arg in defaults:
                params[arg.arg] = self.ev(defaults[arg.arg], parent)
            else:
                params[arg.arg] = FU
        for arg in fargs.kwonlyargs:
            if arg.arg in kwargs:
                params[arg.arg] = kwargs[arg.arg]
            elif arg.arg in defaults and None not in kwargs:
                params[arg.arg] = self.ev(defaults[arg.arg], parent)
            else:
                params[arg.arg] = FU
        if fargs.vararg is not None:
            extra = given[len(positional) - start:] if not starred else [FU]
            params[fargs.vararg.arg] = container(frozenset().union(*extra) if extra else EMPTY)
        if fargs.kwarg is not None:
            params[fargs.kwarg.arg] = frozenset([("dict",)])
        return self._ctx_for(fnode, params, parent)

    def _ctx_for(self, fnode, params, parent):
        key = (id(fnode), parent.id, tuple(sorted((k, v) for k, v in params.items())))
        ctx = self.ctx_memo.get(key)
        if ctx is not None:
            return ctx
        count = self.ctx_count.get(id(fnode), 0)
        if count >= self.HARD_CONTEXTS_PER_FUNCTION:
            raise AnalysisLimit("%s is analysed in more than %d calling contexts"
                                % (getattr(fnode, "name", "a function"),
                                   self.HARD_CONTEXTS_PER_FUNCTION))
        if count >= self.MAX_CONTEXTS_PER_FUNCTION:
            # Too many contexts: one where every parameter is unknown (except a bound self).
            params = {k: (v if len(v) == 1 and next(iter(v))[0] in ("inst", "class") else FU)
                      for k, v in params.items()}
            key = (id(fnode), parent.id, tuple(sorted((k, v) for k, v in params.items())))
            ctx = self.ctx_memo.get(key)
            if ctx is not None:
                return ctx
        self.ctx_count[id(fnode)] = count + 1
        ctx = self._new_ctx(fnode, self.program.scopes[id(fnode)], params, parent)
        self.ctx_memo[key] = ctx
        return ctx

    # --- names

    def lookup(self, name, ctx):
        current = ctx
        while current is not None:
            scope = current.scope
            if scope.kind == "function" and name in scope.globals:
                current = self.module_ctx
                continue
            if name in current.params or name in scope.bindings:
                return self.local(current, name)
            current = current.parent
        if name in BUILTIN_NAMES:
            return frozenset([("module", "builtins." + name)])
        return FU

    def local(self, ctx, name):
        if ctx.table is None:
            self._compute_table(ctx)
        kinds = ctx.table.get(name)
        if kinds is None:
            return FU
        if not kinds and not ctx.computing:
            return FU
        return kinds

    def _compute_table(self, ctx):
        scope = ctx.scope
        ctx.table = {name: ctx.params.get(name, EMPTY) for name in scope.bindings}
        for name, kinds in ctx.params.items():
            ctx.table[name] = kinds
        ctx.computing = True
        changed = True
        rounds = 0
        element_binds = {name: self.program.element_bindings(scope, name)
                         for name in scope.bindings}
        while changed and rounds < self.FIXPOINT_ROUNDS:
            changed = False
            rounds += 1
            for name, binds in scope.bindings.items():
                kinds = set(ctx.params.get(name, EMPTY))
                elems = set()
                for bind in binds:
                    kinds |= self._binding(bind, ctx)
                for bind in element_binds[name]:
                    elems |= self._binding(bind, ctx)
                kinds = self._add_elements(kinds, elems) if elems else kinds
                kinds = norm(kinds)
                if kinds != ctx.table.get(name):
                    ctx.table[name] = kinds
                    changed = True
        if changed:
            for name in scope.bindings:
                ctx.table[name] = norm(ctx.table[name] | FU)
        ctx.computing = False
        for name, kinds in ctx.table.items():
            if not kinds:
                ctx.table[name] = FU
        ctx.call_cache.clear()
        ctx.ev_cache.clear()

    @staticmethod
    def _add_elements(kinds, elems):
        out = set()
        for kind in kinds:
            if kind[0] == "container":
                out |= container(kind[1] | elems, kind[2])
            elif kind[0] == "tuple":
                out |= container(frozenset().union(*kind[1]) | elems)
            else:
                out.add(kind)
        return out

    def _binding(self, bind, ctx):
        if bind.owner is not ctx.fnode:
            ctx = self.generic_ctx(bind.owner)
        kind = bind.kind
        if kind == "value":
            return unpack(self.ev(bind.node, ctx), bind.path)
        if kind == "aug":
            value = self.ev(bind.node, ctx)
            if not value:
                return EMPTY
            if T in value:
                return FT
            return value if any(k[0] in ("container", "tuple") for k in value) else \
                (FS if value <= {S, SAFE} else FU)
        if kind == "iter":
            return unpack(iter_kinds(self.ev(bind.node, ctx)), bind.path)
        if kind == "with":
            value = self.ev(bind.node, ctx)
            if not value:
                return EMPTY
            return FSAFE if value <= {SAFE, S} else FU
        if kind == "import":
            return frozenset([("module", bind.node)])
        if kind == "def":
            return self.def_kinds(bind.node, ctx)
        if kind == "class":
            return frozenset([("class", id(bind.node))])
        if kind == "except":
            return FSAFE
        if kind == "elem":
            return self.ev(bind.node, ctx)
        if kind == "elemiter":
            return iter_kinds(self.ev(bind.node, ctx))
        return FU

    # --- functions and decorators

    def decorator_class(self, fnode):
        """('jit', backend) / ('plain', None) / ('property', None) / ('unknown', None)."""
        kind = ("plain", None)
        for deco in fnode.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            qual = self.names.qual(target)
            if qual is None and isinstance(target, ast.Name) and target.id in BUILTIN_NAMES:
                qual = target.id
            if qual in JIT_DECORATORS:
                return ("jit", JIT_DECORATORS[qual])
            if qual == "property" or (qual or "").endswith("cached_property"):
                kind = ("property", None)
            elif qual in TRANSPARENT_DECORATORS:
                continue
            elif isinstance(target, ast.Attribute) and target.attr in ("setter", "getter",
                                                                        "deleter"):
                kind = ("property", None)
            else:
                return ("unknown", None)
        return kind

    def def_kinds(self, fnode, ctx):
        deco = self.decorator_class(fnode)
        if deco[0] == "jit":
            return frozenset([("jit", deco[1], fnode.name, False)])
        if deco[0] == "unknown":
            return FU
        return frozenset([("func", id(fnode), None, ctx.id)])

    def return_kinds(self, ctx):
        if ctx.ret is not None:
            return ctx.ret
        if ctx.ret_busy:
            return FU
        ctx.ret_busy = True
        fnode = ctx.fnode
        if isinstance(fnode, ast.Lambda):
            kinds = self.ev(fnode.body, ctx)
        else:
            kinds = set()
            generator = False
            for node in body_nodes(fnode):
                if isinstance(node, ast.Return):
                    kinds |= self.ev(node.value, ctx) if node.value is not None else FS
                elif isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                    generator = True
            if not always_returns(fnode.body):
                kinds |= FS                 # falls off the end: None
            kinds = FU if generator or isinstance(fnode, ast.AsyncFunctionDef) else norm(kinds)
        ctx.ret_busy = False
        ctx.ret = kinds
        return kinds

    # --- classes

    def mro(self, cid):
        order, seen = [], set()

        def visit(current):
            if current in seen:
                return
            seen.add(current)
            order.append(current)
            for base in self.base_kinds(current):
                if base[0] == "class":
                    visit(base[1])
        visit(cid)
        return [self.program.classes[c] for c in order]

    def base_kinds(self, cid):
        info = self.program.classes[cid]
        ctx = self.generic_ctx(info.outer.node)
        out = []
        for base in info.node.bases:
            kinds = self.ev(base, ctx)
            out.extend(kinds if len(kinds) == 1 else [U])
        return out

    def external_bases(self, cid):
        """Qualified names of the bases of the class chain that are not defined in the file."""
        quals = []
        for info in self.mro(cid):
            for kind in self.base_kinds(info.cid):
                if kind[0] == "module":
                    quals.append(kind[1])
                elif kind[0] != "class":
                    quals.append("?")
        return quals

    def is_nn_class(self, cid):
        return any(q.startswith("torch.nn.") for q in self.external_bases(cid))

    def nn_base(self, cid):
        """The torch.nn base that provides forward (Module if nothing more specific)."""
        quals = [q for q in self.external_bases(cid) if q.startswith("torch.nn.")]
        specific = [q for q in quals if not is_nn_module_qual(q)]
        return specific[0] if specific else ("torch.nn.Module" if quals else None)

    def is_autograd_function(self, cid):
        return any(q in ("torch.autograd.Function", "torch.autograd.function.Function")
                   for q in self.external_bases(cid))

    def find_method(self, cid, name, skip_first=False):
        chain = self.mro(cid)
        for info in chain[1:] if skip_first else chain:
            if name in info.methods:
                return info, info.methods[name]
        return None, None

    def method_kinds(self, info, fnode, self_kind):
        deco = self.decorator_class(fnode)
        parent = self.parent_ctx_for(fnode)
        if deco[0] == "jit":
            return frozenset([("jit", deco[1], fnode.name, False)])
        if deco[0] == "unknown":
            return FU
        scope = self.program.scopes[id(fnode)]
        if deco[0] == "property":
            if self_kind is None:
                return FSAFE
            return self.return_kinds(self.call_ctx(fnode, self_kind, [], {}, parent))
        if scope.method_kind == "static":
            return frozenset([("func", id(fnode), None, parent.id)])
        if scope.method_kind == "class":
            return frozenset([("func", id(fnode), ("class", info.cid), parent.id)])
        return frozenset([("func", id(fnode), self_kind, parent.id)])

    def inst_attr(self, cid, attr):
        key = ("inst", cid, attr)
        if key in self.attr_memo:
            return self.attr_memo[key]
        if key in self.attr_busy:
            return FU
        self.attr_busy.add(key)
        try:
            kinds = norm(self._inst_attr(cid, attr) | self.foreign_attr(attr))
        finally:
            self.attr_busy.discard(key)
        self.attr_memo[key] = kinds
        return kinds

    def foreign_attr(self, attr):
        """Kinds stored as attr on objects other than self (obj.attr = v, cls.attr = v)."""
        kinds = set()
        for bind in self.program.foreign_attrs.get(attr, []):
            kinds |= self._binding(bind, self.generic_ctx(bind.owner))
        return frozenset(kinds)

    def _inst_attr(self, cid, attr):
        chain = self.mro(cid)
        if any("__getattribute__" in info.methods for info in chain):
            return FU
        binds = [b for info in chain for b in info.self_attrs.get(attr, [])]
        if binds:
            kinds = set()
            for bind in binds:
                kinds |= self._binding(bind, self.generic_ctx(bind.owner))
            elems = set()
            for info in chain:
                for bind in info.self_elems.get(attr, []):
                    elems |= self._binding(bind, self.generic_ctx(bind.owner))
            return norm(self._add_elements(kinds, elems) if elems else kinds)
        for info in chain:
            if attr in info.methods:
                return self.method_kinds(info, info.methods[attr], ("inst", cid))
            binds = info.scope.bindings.get(attr)
            if binds:
                ctx = self.generic_ctx(info.outer.node)
                kinds = set().union(*[self._binding(b, ctx) for b in binds])
                return norm(self._bind_to_instance(kinds, cid))
        dynamic = [b for info in chain for b in info.dyn_attrs]
        if dynamic or any("__getattr__" in info.methods for info in chain):
            return FU
        return self.external_attr(cid, attr)

    def _bind_to_instance(self, kinds, cid):
        """A plain function stored in a class body becomes a bound method on an instance."""
        out = set()
        for kind in kinds:
            if kind[0] == "func" and kind[2] is None:
                fnode = self.program.funcs.get(kind[1])
                decorated = isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    self.decorator_class(fnode)[0] != "plain"
                if fnode is not None and not decorated:
                    kind = ("func", kind[1], ("inst", cid), kind[3])
            out.add(kind)
        return out

    def external_attr(self, cid, attr):
        """An attribute that only a base class not defined in the file can provide."""
        base = self.nn_base(cid)
        if base is None:
            return FU
        if attr in ("training",):
            return FS
        if not is_nn_module_qual(base) and is_tensor_attr_name(attr):
            return FT
        return frozenset([("nnattr", base, attr)])

    def class_attr(self, cid, attr):
        key = ("class", cid, attr)
        if key in self.attr_memo:
            return self.attr_memo[key]
        if key in self.attr_busy:
            return FU
        self.attr_busy.add(key)
        try:
            # cls.x = v in a classmethod is recorded with the instance attributes.
            stored = set()
            for info in self.mro(cid):
                for bind in info.self_attrs.get(attr, []):
                    stored |= self._binding(bind, self.generic_ctx(bind.owner))
            kinds = norm(self._class_attr(cid, attr) | self.foreign_attr(attr) | stored)
        finally:
            self.attr_busy.discard(key)
        self.attr_memo[key] = kinds
        return kinds

    def _class_attr(self, cid, attr):
        chain = self.mro(cid)
        if attr == "apply" and self.is_autograd_function(cid):
            info, fnode = self.find_method(cid, "forward")
            if fnode is not None:
                return frozenset([("func", id(fnode), SAFE, self.parent_ctx_for(fnode).id)])
            return FU
        for info in chain:
            if attr in info.methods:
                fnode = info.methods[attr]
                scope = self.program.scopes[id(fnode)]
                if scope.method_kind == "class":
                    return self.method_kinds(info, fnode, ("class", cid))
                deco = self.decorator_class(fnode)
                if deco[0] == "unknown":
                    return FU
                if deco[0] == "jit":
                    return frozenset([("jit", deco[1], fnode.name, False)])
                return frozenset([("func", id(fnode), None, self.parent_ctx_for(fnode).id)])
            binds = info.scope.bindings.get(attr)
            if binds:
                ctx = self.generic_ctx(info.outer.node)
                return norm(set().union(*[self._binding(b, ctx) for b in binds]))
        base = self.nn_base(cid)
        if base is not None:
            return frozenset([("nnattr", base, attr)])
        return FU

    def super_attr(self, cid, self_kind, attr):
        info, fnode = self.find_method(cid, attr, skip_first=True)
        if fnode is not None:
            return self.method_kinds(info, fnode, self_kind)
        base = self.nn_base(cid)
        if base is not None:
            return frozenset([("nnattr", base, attr)])
        if attr == "__init__":
            return frozenset([("module", "builtins.object")])
        return FU

    # --- expressions

    def ev(self, node, ctx):
        # Once a context's names are settled, a node's kinds there do not change: cached.
        settled = ctx.table is not None and not ctx.computing
        if settled:
            cached = ctx.ev_cache.get(id(node))
            if cached is not None:
                return cached
        method = getattr(self, "_ev_" + type(node).__name__, None)
        kinds = FU if method is None else method(node, ctx)
        if settled and ctx.table is not None and not ctx.computing:
            ctx.ev_cache[id(node)] = kinds
        return kinds

    def _ev_Constant(self, node, ctx):
        return FS

    _ev_JoinedStr = _ev_FormattedValue = _ev_Slice = _ev_Constant

    def _ev_Name(self, node, ctx):
        return self.lookup(node.id, ctx)

    def _ev_Attribute(self, node, ctx):
        return self.attr_kinds(self.ev(node.value, ctx), node.attr)

    def _ev_Call(self, node, ctx):
        kinds = frozenset(self.call(node, ctx).kinds)
        return kinds if kinds or ctx.computing else FU

    def _ev_Subscript(self, node, ctx):
        return self.subscript_kinds(self.ev(node.value, ctx), node.slice)

    def _ev_BinOp(self, node, ctx):
        left, right = self.ev(node.left, ctx), self.ev(node.right, ctx)
        if not left or not right:
            return EMPTY
        if T in left or T in right:
            return FT
        if left | right <= {S, SAFE}:
            return FS
        if isinstance(node.op, ast.Add) and all(k[0] in ("container", "tuple")
                                                for k in left | right):
            return container(iter_kinds(left) | iter_kinds(right))
        if isinstance(node.op, ast.Mult) and any(k[0] in ("container", "tuple") for k in left):
            return container(iter_kinds(left))
        if isinstance(node.op, ast.Mod) and S in left:
            return FS
        return FU

    def _ev_UnaryOp(self, node, ctx):
        operand = self.ev(node.operand, ctx)
        if isinstance(node.op, ast.Not):
            return FS
        if not operand:
            return EMPTY
        return FT if T in operand else (FS if operand <= {S, SAFE} else FU)

    def _ev_BoolOp(self, node, ctx):
        return norm(frozenset().union(*[self.ev(v, ctx) for v in node.values]))

    def _ev_Compare(self, node, ctx):
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return FS
        operands = [self.ev(node.left, ctx)] + [self.ev(c, ctx) for c in node.comparators]
        return FT if any(T in o for o in operands) else FS

    def _ev_IfExp(self, node, ctx):
        return norm(self.ev(node.body, ctx) | self.ev(node.orelse, ctx))

    def _ev_List(self, node, ctx):
        parts = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                return container(frozenset().union(
                    *[iter_kinds(self.ev(e.value, ctx)) if isinstance(e, ast.Starred)
                      else self.ev(e, ctx) for e in node.elts]))
            parts.append(self.ev(elt, ctx))
        return tuple_kind(parts)

    _ev_Tuple = _ev_List

    def _ev_Set(self, node, ctx):
        return container(frozenset().union(*[self.ev(e, ctx) for e in node.elts]))

    def _ev_Dict(self, node, ctx):
        return frozenset([("dict",)])

    _ev_DictComp = _ev_Dict

    def _ev_Lambda(self, node, ctx):
        return frozenset([("func", id(node), None, ctx.id)])

    def _ev_ListComp(self, node, ctx):
        return container(self.ev(node.elt, ctx))

    _ev_GeneratorExp = _ev_SetComp = _ev_ListComp

    def _ev_NamedExpr(self, node, ctx):
        return self.ev(node.value, ctx)

    def _ev_Starred(self, node, ctx):
        return self.ev(node.value, ctx)

    def attr_kinds(self, kinds, attr):
        if not kinds:
            return EMPTY
        out = set()
        for kind in self.ordered(kinds):
            out |= self.attr_one(kind, attr)
        return norm(out) or FU

    def attr_one(self, kind, attr):
        tag = kind[0]
        if tag == "tensor":
            if attr in TENSOR_SCALAR_ATTRS:
                return FS
            if attr in TENSOR_TENSOR_ATTRS:
                return FT
            return frozenset([("tmethod", attr)])
        if tag in ("scalar", "safe", "nnattr", "extfn", "func", "tmethod"):
            return FSAFE
        if tag == "module":
            return frozenset([("module", short_qual(kind[1] + "." + attr))])
        if tag == "ext":
            return frozenset([("extfn", kind[1], attr)])
        if tag == "jit":
            if attr in ("run", "warmup", "__getitem__"):
                return frozenset([("jit", kind[1], kind[2], True)])
            return FSAFE
        if tag == "class":
            return self.class_attr(kind[1], attr)
        if tag == "inst":
            return self.inst_attr(kind[1], attr)
        if tag == "super":
            return self.super_attr(kind[1], kind[2], attr)
        if tag == "nnmod":
            if is_tensor_attr_name(attr):
                return FT
            return frozenset([("nnattr", kind[1], attr)])
        if tag in ("container", "tuple", "dict"):
            # Methods of lists and dicts call nothing; what they return may be anything stored.
            if attr in CONTAINER_METHODS:
                return frozenset([("cmethod", attr)])
            return FU
        if tag == "rawmod":
            return frozenset([("rawget",)]) if attr == "get_function" else FSAFE
        return FU

    def subscript_kinds(self, kinds, index):
        if not kinds:
            return EMPTY
        out = set()
        for kind in kinds:
            tag = kind[0]
            if tag in ("tensor", "scalar", "safe"):
                out.add(kind)
            elif tag == "nnattr":
                out.add(SAFE)
            elif tag == "container":
                out |= frozenset([kind]) if isinstance(index, ast.Slice) else kind[1]
            elif tag == "tuple":
                if isinstance(index, ast.Constant) and isinstance(index.value, int) \
                        and -len(kind[1]) <= index.value < len(kind[1]):
                    out |= kind[1][index.value]
                elif isinstance(index, ast.Slice):
                    out |= container(frozenset().union(*kind[1]) if kind[1] else EMPTY)
                else:
                    out |= frozenset().union(*kind[1]) if kind[1] else FU
            elif tag == "jit":
                out.add(("jit", kind[1], kind[2], True))
            elif tag == "module" and kind[1].startswith(("typing.", "builtins.")):
                out.add(SAFE)
            else:
                out.add(U)
        return norm(out) or FU

    # --- calls

    def call(self, node, ctx):
        if not ctx.computing:
            cached = ctx.call_cache.get(id(node))
            if cached is not None:
                return cached
        result = CallResult()
        callee = self.ev(node.func, ctx)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.append(("*", self.ev(arg.value, ctx)))
            else:
                args.append(self.ev(arg, ctx))
        kwargs = {}
        for keyword in node.keywords:
            kwargs[keyword.arg] = self.ev(keyword.value, ctx)
        values = [callee] + [a[1] if is_star(a) else a for a in args] + list(kwargs.values())
        if ctx.computing and not all(values):
            return result       # an operand is not known yet: nothing to say in this round
        for kind in self.ordered(callee):
            self.dispatch(kind, node, ctx, args, kwargs, result)
        if not callee:
            result.add(FU, "unknown", "call of an unknown value")
        result.kinds = set(norm(result.kinds))
        if not ctx.computing:
            ctx.call_cache[id(node)] = result
        return result

    def dispatch(self, kind, node, ctx, args, kwargs, res):
        """Classify the call of one possible callee kind; args None = unknown arguments."""
        tag = kind[0]
        if tag == "module":
            self.call_module(kind[1], node, ctx, args, kwargs, res)
        elif tag == "tmethod":
            self.call_tensor_method(kind[1], args, res)
        elif tag == "ext":
            res.add(FU, "unknown", "call of an extension module")
        elif tag == "extfn":
            self.call_extension(kind[1], kind[2], res)
        elif tag == "jit":
            res.add(FSAFE, "kernel")
            res.launched.add((kind[1], kind[2]))
        elif tag == "rawk":
            res.add(FSAFE, "kernel")
        elif tag == "cmethod":
            res.add(FS if kind[1] in ("index", "count", "__len__", "__contains__") else FU,
                    "notk")
        elif tag == "rawget":
            res.add(frozenset([("rawk",)]), "notk")
        elif tag == "func":
            self.call_function(kind, args, kwargs, res)
        elif tag == "class":
            self.call_class(kind[1], args, kwargs, res)
        elif tag == "inst":
            self.call_instance(kind[1], node, ctx, args, kwargs, res)
        elif tag == "nnmod":
            self.call_nn_module(kind[1], res)
        elif tag == "nnattr":
            self.call_nn_attr(kind[1], kind[2], node, ctx, args, kwargs, res)
        elif tag == "container" and kind[2]:
            if not kind[1]:
                res.add(first_arg(args) or FU, "notk")
            for index, element in enumerate(self.ordered(kind[1])):
                self.dispatch(element, node, ctx, args if index == 0 else [FT], {}, res)
        elif tag in ("tensor", "scalar", "safe"):
            res.add(FSAFE, "notk")
        else:
            res.add(FU, "unknown", "call of a value of unknown origin")

    def call_function(self, kind, args, kwargs, res):
        _, fid, bound, parent_id = kind
        fnode = self.program.funcs.get(fid)
        if fnode is None:
            res.add(FU, "unknown", "call of an unknown function")
            return
        ctx = self.call_ctx(fnode, bound, args, kwargs, self.ctxs[parent_id])
        res.callees.append(ctx)
        res.add(self.return_kinds(ctx), "notk")

    def call_class(self, cid, args, kwargs, res):
        if self.find_method(cid, "__new__")[1] is not None:
            res.add(FU, "unknown", "class with __new__")
            return
        instance = frozenset([("inst", cid)])
        info, init = self.find_method(cid, "__init__")
        if init is not None:
            kinds = self.method_kinds(info, init, ("inst", cid))
            for kind in self.ordered(kinds):
                if kind[0] == "func":
                    init_result = CallResult()
                    self.call_function(kind, args, kwargs, init_result)
                    res.callees += init_result.callees
                else:
                    res.add(FU, "unknown", "constructor of unknown kind")
            res.add(instance, "notk")
            return
        externals = self.external_bases(cid)
        if all(q.startswith("torch.nn.") or q.startswith("torch.autograd.")
               or q == "builtins.object" for q in externals):
            res.add(instance, "notk")
        else:
            res.add(instance, "unknown", "constructor inherited from an unknown base")

    def call_instance(self, cid, node, ctx, args, kwargs, res):
        info, call = self.find_method(cid, "__call__")
        if call is not None:
            for kind in self.ordered(self.method_kinds(info, call, ("inst", cid))):
                self.dispatch(kind, node, ctx, args, kwargs, res)
            return
        if self.is_nn_class(cid):
            for kind in self.ordered(self.inst_attr(cid, "forward")):
                self.dispatch(kind, node, ctx, args, kwargs, res)
            return
        res.add(FU, "unknown", "call of an instance without __call__")

    def call_extension(self, load_id, name, res):
        load = self.loads.get(load_id)
        res.ext_names.add((load_id, name))
        if load is not None and load.wrapper:
            res.add(FT, "notk")
            res.aten.add(load.label)
        else:
            res.add(FT, "kernel")

    def call_nn_module(self, qual, res):
        last = qual.rsplit(".", 1)[-1]
        if last in NN_GLUE_MODULES:
            res.add(FT, "notk")
        elif is_nn_module_qual(qual):
            res.add(FU, "notk")
        else:
            res.add(FT, "torch", "nn.%s module" % last)

    def call_nn_attr(self, qual, attr, node, ctx, args, kwargs, res):
        last = qual.rsplit(".", 1)[-1]
        if attr in ("forward", "__call__", "_conv_forward"):
            if is_nn_module_qual(qual) or last in NN_GLUE_MODULES:
                res.add(FU, "notk")
            else:
                res.add(FT, "torch", "nn.%s.%s" % (last, attr))
        elif attr in NN_INVOKING_METHODS:
            res.add(FSAFE, "notk")
            self.invoke_callables(args, kwargs, res)
        else:
            res.add(FSAFE if attr in NN_MODULE_METHODS else FU, "notk")

    def call_tensor_method(self, name, args, res):
        if name in INVOKING_TENSOR_METHODS:
            res.add(FT, "notk")
            self.invoke_callables(args, {}, res)
        elif name in TENSOR_GLUE_METHODS:
            res.add(FS if name in TENSOR_SCALAR_METHODS else FT, "notk")
        else:
            res.add(FT, "torch", "tensor method .%s()" % name)

    def callables_in(self, args, kwargs):
        """The callable kinds among arguments (and inside lists of them)."""
        out = []
        for kinds in list(args or []) + list((kwargs or {}).values()):
            if is_star(kinds):
                kinds = iter_kinds(kinds[1])
            for kind in self.ordered(kinds or EMPTY):
                inner = [kind]
                if kind[0] in ("container", "tuple"):
                    inner = self.ordered(iter_kinds(frozenset([kind])))
                for callee in inner:
                    if callee[0] in CALLABLE_TAGS or (callee[0] == "container" and callee[2]):
                        out.append(callee)
        return out

    def invoke_callables(self, args, kwargs, res):
        """A library call that receives callables may call them: treat them as called."""
        for callee in self.callables_in(args, kwargs):
            sub = CallResult()
            self.dispatch(callee, None, self.module_ctx, None, None, sub)
            sub.outcomes.discard("torch")
            sub.reasons = []
            res.merge(sub, keep_kinds=False)

    def call_module(self, qual, node, ctx, args, kwargs, res):
        root = qual.split(".")[0]
        if qual.startswith("builtins."):
            self.call_builtin(qual[len("builtins."):], node, ctx, args, kwargs, res)
        elif qual in LOAD_QUALS:
            res.add(frozenset([("ext", id(node))]) if node is not None else FU, "notk")
        elif root == "torch":
            self.call_torch(qual, node, ctx, args, kwargs, res)
        elif qual in TRANSPARENT_QUALS:
            res.add(first_arg(args) or FU, "notk")
        elif root == "triton":
            if qual in ("triton.compile",):
                res.add(FU, "unknown", "triton.compile")
            else:
                res.add(FSAFE, "notk")
        elif root in ("thunderkittens", "tk"):
            res.add(FT, "kernel")
            res.launched.add(("thunderkittens", qual))
        elif root == "cupy":
            last = qual.rsplit(".", 1)[-1]
            if last in ("RawKernel", "ElementwiseKernel", "ReductionKernel"):
                res.add(frozenset([("rawk",)]), "notk")
            elif last == "RawModule":
                res.add(frozenset([("rawmod",)]), "notk")
            else:
                res.add(FU, "unknown", qual)
        elif root in STDLIB_SAFE:
            # Given callables, even these may hand one back (random.choice): then unknown.
            res.add(FU if self.callables_in(args, kwargs) else FSAFE, "notk")
            self.invoke_callables(args, kwargs, res)
        elif root in STDLIB_OTHER:
            if qual == "functools.reduce" or qual.startswith("itertools."):
                self.invoke_callables(args, kwargs, res)
            res.add(FU, "notk")
        else:
            res.add(FU, "unknown", "call of %s" % qual)

    def call_builtin(self, name, node, ctx, args, kwargs, res):
        args = args or []
        known = [iter_kinds(a[1]) if is_star(a) else a for a in args]
        if name == "super":
            res.add(self.super_kinds(node, ctx, args), "notk")
        elif name == "getattr":
            constant = node is not None and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            if constant and first_arg(args) is not None:
                kinds = self.attr_kinds(args[0], node.args[1].value)
                if len(args) > 2 and not is_star(args[2]):
                    kinds = norm(kinds | args[2])
                res.add(kinds, "notk")
            else:
                res.add(FU, "notk")
        elif name in ("eval", "exec", "compile", "__import__", "breakpoint"):
            res.add(FU, "unknown", "%s()" % name)
        elif name in ("sum", "abs", "pow", "round", "divmod"):
            tensors = any(T in a or T in iter_kinds(a) for a in known)
            if tensors:
                res.add(FT, "torch", "builtin %s() on tensors" % name)
            else:
                res.add(FS, "notk")
        elif name in ("min", "max"):
            kinds = set()
            for a in known:
                kinds |= iter_kinds(a) if len(known) == 1 else a
            res.add(norm(kinds) or FU, "notk")
        elif name in ("list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"):
            res.add(container(iter_kinds(known[0])) if known else container(EMPTY), "notk")
            if name == "sorted":
                self.invoke_callables([], kwargs, res)
        elif name == "enumerate":
            elements = iter_kinds(known[0]) if known else FU
            res.add(container(tuple_kind([FS, elements])), "notk")
        elif name == "zip":
            res.add(container(tuple_kind([iter_kinds(a) for a in known])), "notk")
        elif name == "next":
            res.add(iter_kinds(known[0]) if known else FU, "notk")
        elif name in ("map", "filter"):
            self.invoke_callables(args[:1], {}, res)
            res.add(container(FU), "notk")
        elif name == "dict":
            res.add(frozenset([("dict",)]), "notk")
        elif name == "type":
            res.add(FU, "notk")
        elif name in ("len", "int", "float", "bool", "str", "repr", "hash", "id", "isinstance",
                      "issubclass", "hasattr", "callable", "ord", "chr", "format", "bin", "hex",
                      "oct", "range", "slice", "any", "all", "ascii"):
            res.add(FS, "notk")
        elif name in ("property", "staticmethod", "classmethod", "object"):
            res.add(FU, "notk")
        else:
            res.add(FSAFE, "notk")

    def super_kinds(self, node, ctx, args):
        scope = ctx.scope
        cid = scope.cls.cid if scope.cls is not None else None
        self_kinds = ctx.params.get(scope.self_name) if scope.self_name else None
        if node is not None and len(node.args) == 2 and first_arg(args) is not None \
                and not is_star(args[1]):
            classes = [k for k in args[0] if k[0] == "class"]
            cid = classes[0][1] if len(classes) == 1 else None
            self_kinds = args[1]
        if cid is None or not self_kinds or len(self_kinds) != 1:
            return FU
        return frozenset([("super", cid, next(iter(self_kinds)))])

    def call_torch(self, qual, node, ctx, args, kwargs, res):
        parts = qual.split(".")
        if qual.startswith("torch.ops."):
            self.call_torch_op(qual, parts, res)
            return
        if qual.startswith("torch.Tensor."):
            self.call_tensor_method(parts[2] if len(parts) > 2 else "", args, res)
            return
        if qual in TORCH_TRANSPARENT:
            res.add(first_arg(args) or FU, "notk")
            return
        # A PyTorch function given callables may call them (checkpoint, functional_call,
        # cond, jit.fork...): they count as called, whatever the function is.
        self.invoke_callables(args, kwargs, res)
        if qual.startswith("torch.nn."):
            self.call_torch_nn(qual, parts, args, res)
        elif len(parts) > 2 and parts[1] in TORCH_NOT_COMPUTE_SUBMODULES:
            self.call_torch_submodule(qual, parts, res)
        elif len(parts) > 1 and parts[1] == "_C":
            res.add(FU, "unknown", qual)
        elif len(parts) == 2 and (parts[1] in TORCH_ALLOC or parts[1] in TORCH_VIEWS):
            res.add(FT, "notk")
        elif len(parts) == 2 and parts[1] in TORCH_META:
            res.add(FS, "notk")
        elif len(parts) == 2 and (parts[1] in TORCH_MISC or parts[1][:1].isupper()):
            res.add(FSAFE, "notk")
        else:
            res.add(FT, "torch", qual)

    def call_torch_op(self, qual, parts, res):
        """torch.ops.<namespace>.<op>: ATen/prims are PyTorch, other namespaces custom ops."""
        if len(parts) < 4:
            res.add(FSAFE, "notk")          # torch.ops.load_library and the like
            return
        namespace, op = parts[2], parts[3]
        if namespace in TORCH_OP_NAMESPACES:
            res.add(FT, "torch", qual)
        elif self.torch_ops_wrappers.get(namespace):
            res.add(FT, "notk")
            res.aten.add(self.torch_ops_wrappers[namespace])
            res.ext_names.add(("torch.ops." + namespace, op))
        else:
            res.add(FT, "kernel")
            res.ext_names.add(("torch.ops." + namespace, op))

    def call_torch_submodule(self, qual, parts, res):
        """torch.cuda, torch.utils, torch.jit...: no compute, but not all of them are inert."""
        sub, name = parts[1], parts[2]
        if qual.startswith("torch.cuda.jiterator"):
            res.add(frozenset([("rawk",)]), "notk")      # compiles a CUDA kernel
        elif sub == "autograd" and name in ("grad", "backward", "functional"):
            res.add(FT, "torch", qual)
        elif qual.startswith(("torch.utils.checkpoint", "torch.utils.dlpack")):
            res.add(FT, "notk")
        elif sub in TORCH_INERT_SUBMODULES:
            res.add(FSAFE, "notk")
        else:
            # Loads or builds code (torch.hub, torch.jit.load, torch.classes, torch.export...).
            res.add(FU, "unknown", qual)

    def call_torch_nn(self, qual, parts, args, res):
        last = parts[-1]
        if qual.startswith("torch.nn.functional."):
            res.add(FT, "torch", "F." + last)
        elif last in ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"):
            res.add(FT, "notk")
        elif last == "Sequential":
            elements = set()
            for arg in args or []:
                elements |= iter_kinds(arg[1]) if is_star(arg) else arg
            if any(k[0] == "dict" or k == U for k in elements):
                res.add(container(FU, True), "notk")
            else:
                res.add(container(elements, True), "notk")
        elif last in ("ModuleList", "ParameterList"):
            first = first_arg(args) if args else EMPTY
            res.add(container(iter_kinds(first) if first else FU), "notk")
        elif last in ("ModuleDict", "ParameterDict"):
            res.add(frozenset([("dict",)]), "notk")
        elif len(parts) > 2 and parts[2] == "init":
            res.add(FSAFE, "notk")
        elif len(parts) > 2 and parts[2] == "utils":
            res.add(FU, "notk")
            self.invoke_callables(args, {}, res)
        elif last[:1].isupper():
            res.add(frozenset([("nnmod", qual)]), "notk")
        else:
            res.add(FU, "unknown", qual)

    def _torch_ops_wrappers(self):
        """torch.ops namespaces registered only by extensions that just call ATen."""
        status = {}
        for load in self.loads.values():
            for unit in load.units:
                for namespace in torch_library_namespaces(unit.code):
                    wrapper = load.wrapper and status.get(namespace, True)
                    status[namespace] = load.label if wrapper else None
        return {k: v for k, v in status.items() if v}

    # --- walking reachable code

    def walk(self, ctx):
        if ctx.walked:
            return
        ctx.walked = True
        self.local(ctx, "__kbench_none__")
        nodes = [ctx.fnode.body] if isinstance(ctx.fnode, ast.Lambda) else body_nodes(ctx.fnode)
        for node in nodes if isinstance(ctx.fnode, ast.FunctionDef) or \
                isinstance(ctx.fnode, ast.AsyncFunctionDef) else expr_nodes(ctx.fnode.body):
            self.walk_node(node, ctx)

    def walk_node(self, node, ctx):
        if isinstance(node, ast.Call):
            result = self.call(node, ctx)
            ctx.events.append((node, result))
            ctx.callees.extend(result.callees)
        elif isinstance(node, ast.BinOp):
            if T in self.ev(node.left, ctx) or T in self.ev(node.right, ctx):
                self.op_event(node, ctx, "tensor operator " + op_symbol(node.op))
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            if T in self.ev(node.operand, ctx):
                self.op_event(node, ctx, "tensor operator " + op_symbol(node.op))
        elif isinstance(node, ast.Compare):
            if not all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                operands = [node.left] + node.comparators
                if any(T in self.ev(o, ctx) for o in operands):
                    self.op_event(node, ctx, "tensor comparison")
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, (ast.Name, ast.Attribute)) and \
                    (T in self.ev(node.value, ctx) or
                     (isinstance(node.target, ast.Name) and T in self.lookup(node.target.id, ctx))):
                self.op_event(node, ctx, "in-place tensor operator " + op_symbol(node.op) + "=")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            for kind in self.ordered(self.ev(node.value, ctx)):
                if kind[0] == "inst":
                    info, fnode = self.find_method(kind[1], node.attr)
                    if fnode is not None and self.decorator_class(fnode)[0] == "property" \
                            and not any(node.attr in i.self_attrs for i in self.mro(kind[1])):
                        ctx.callees.append(self.call_ctx(fnode, kind, [], {},
                                                         self.parent_ctx_for(fnode)))

    def op_event(self, node, ctx, reason):
        result = CallResult()
        result.add(FT, "torch", reason)
        ctx.events.append((node, result))

    def reach(self, roots):
        """All contexts reachable from roots (walked), in discovery order."""
        seen, order, queue = set(), [], collections.deque(roots)
        while queue:
            ctx = queue.popleft()
            if ctx.id in seen:
                continue
            seen.add(ctx.id)
            order.append(ctx)
            self.walk(ctx)
            queue.extend(ctx.callees)
        return order

    # What reach(roots) finds, for the calls of each except clause (try_rules): going over
    # reach(roots) anew for each of them is quadratic in a file of many try statements that
    # call into a long chain of functions. A context's events and callees are final once it is
    # walked, and a context walked (always by reach, which walks what it finds) has everything
    # it reaches walked: so what a context reaches is summarized once.

    REASON_STEPS = 1024     # steps to find the first torch event in reach order (see below)

    def reach_torch_reason(self, roots):
        """Reason of the first torch-only event in reach(roots), when reach(roots) has such an
        event and no kernel event; else None.

        As [res for c in self.reach(roots) for _, res in c.events if res.outcomes ==
        {"torch"}][0].reasons[0] when that list is not empty and no event of reach(roots) has a
        "kernel" outcome. Whether there is a reason is exact; the reason is looked for in
        reach order within REASON_STEPS steps (a generic one past them: never in honest code).
        """
        self._walk_new(roots)
        self._summarize(roots)
        summary = self._summary
        kernel = any(summary[root.id][0] for root in roots)
        torch = any(summary[root.id][1] for root in roots)
        if kernel or not torch:
            return None
        key = tuple(root.id for root in roots)
        reason = self._reason_memo.get(key)
        if reason is None:
            reason = self._reason_memo[key] = self._first_torch_reason(roots)
        return reason

    def _walk_new(self, roots):
        """Walks what reach(roots) walks, in the same order (contexts already walked reach only
        walked contexts: they are not gone over again)."""
        seen, queue = set(), collections.deque(roots)
        while queue:
            ctx = queue.popleft()
            if ctx.id in seen:
                continue
            seen.add(ctx.id)
            if ctx.walked:
                continue
            self.walk(ctx)
            queue.extend(ctx.callees)

    def _own_events(self, ctx):
        """(has a kernel event, its first torch-only event's result or None) of ctx alone."""
        own = self._own.get(ctx.id)
        if own is None:
            kernel, first = False, None
            for _, res in ctx.events:
                if "kernel" in res.outcomes:
                    kernel = True
                if first is None and res.outcomes == {"torch"}:
                    first = res
            own = self._own[ctx.id] = (kernel, first)
        return own

    def _summarize(self, roots):
        """(a kernel event, a torch-only event) in what each context reachable from roots
        reaches, into self._summary: Tarjan's strongly connected components, iteratively."""
        summary = self._summary
        index, low, stack, on_stack = {}, {}, [], set()
        for root in roots:
            if root.id in summary or root.id in index:
                continue
            index[root.id] = low[root.id] = len(index)
            stack.append(root)
            on_stack.add(root.id)
            work = [(root, iter(root.callees))]
            while work:
                ctx, callees = work[-1]
                for callee in callees:
                    if callee.id in summary:
                        continue
                    if callee.id not in index:
                        index[callee.id] = low[callee.id] = len(index)
                        stack.append(callee)
                        on_stack.add(callee.id)
                        work.append((callee, iter(callee.callees)))
                        break
                    if callee.id in on_stack:
                        low[ctx.id] = min(low[ctx.id], index[callee.id])
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent.id] = min(low[parent.id], low[ctx.id])
                    if low[ctx.id] == index[ctx.id]:
                        members = []
                        while True:
                            member = stack.pop()
                            on_stack.discard(member.id)
                            members.append(member)
                            if member is ctx:
                                break
                        kernel = torch = False
                        for member in members:
                            own_kernel, own_torch = self._own_events(member)
                            kernel = kernel or own_kernel
                            torch = torch or own_torch is not None
                            for callee in member.callees:
                                done = summary.get(callee.id)
                                if done is not None:
                                    kernel = kernel or done[0]
                                    torch = torch or done[1]
                        for member in members:
                            summary[member.id] = (kernel, torch)

    def _first_torch_reason(self, roots):
        steps = 0
        queued = set()
        queue = collections.deque()
        for root in roots:
            if root.id not in queued:
                queued.add(root.id)
                queue.append(root)
        while queue and steps < self.REASON_STEPS:
            ctx = queue.popleft()
            first = self._own_events(ctx)[1]
            if first is not None:
                return first.reasons[0]
            for callee in ctx.callees:
                steps += 1
                if steps >= self.REASON_STEPS:
                    break
                if callee.id not in queued:
                    queued.add(callee.id)
                    queue.append(callee)
        return "PyTorch ops in the functions it calls"


def is_star(arg):
    return isinstance(arg, tuple)


def first_arg(args):
    """Kinds of the first positional argument when it is known (not a *starred one)."""
    if args and not is_star(args[0]):
        return args[0]
    return None


def is_nn_module_qual(qual):
    return qual in ("torch.nn.Module", "torch.nn.modules.module.Module")


def is_tensor_attr_name(attr):
    return "weight" in attr or "bias" in attr or attr.startswith("running_") or \
        attr in ("num_batches_tracked", "in_proj_weight", "in_proj_bias")


def op_symbol(op):
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|",
            ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.USub: "-", ast.UAdd: "+",
            ast.Invert: "~"}.get(type(op), "?")


def always_returns(body):
    """True when a statement list cannot end without return or raise."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return always_returns(last.body) and always_returns(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return always_returns(last.body)
    if isinstance(last, ast.Try):
        if always_returns(last.finalbody):
            return True
        return always_returns(last.body + last.orelse) and \
            all(always_returns(h.body) for h in last.handlers)
    return False


def always_raises(body):
    """True when a statement list always ends in raise."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return always_raises(last.body) and always_raises(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return always_raises(last.body)
    return False


def body_nodes(fnode):
    """Nodes of a function's body, not entering nested functions, lambdas or classes."""
    stack = list(reversed(fnode.body))
    out = []
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(reversed(node.decorator_list))
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def expr_nodes(expr):
    stack = [expr]
    out = []
    while stack:
        node = stack.pop()
        out.append(node)
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


# ======================================================================================
# The analysis


# Findings after which the data flow cannot be trusted to show that no kernel is called.
UNSETTLING_RULES = {"monkeypatch", "dynamic_code", "tensor_subclass", "introspection",
                    "native_access"}


class LoadInfo:
    """A load_inline/load call: its native sources, exposed functions, ATen-wrapper status."""

    def __init__(self, node, label):
        self.node = node
        self.label = label
        self.units = []
        self.complete = True
        self.functions = []          # (name, line)
        self.wrapper = False


class Analysis:
    """One candidate: parses it, collects its native sources, and runs every rule.

    backend is recorded in the no_backend reason only: what a file uses is read from the file.
    """

    def __init__(self, source, backend, precision):
        self.source = source
        self.backend = backend or ""
        self.precision = precision or "fp32"
        self.lines = split_lines(source)
        self.report = Report(self.lines)
        self.markers = []
        self.kernels = {"cuda": [], "triton": [], "extension_functions": []}
        self.parsed = False
        self.require_model_new = False  # analyze(..., require_model_new)
        self._ctxs_by_function = {}     # id(function) -> its contexts (see _try)
        self._ctxs_indexed = 0          # how many of engine.ctxs are in it

    # --- driver

    def run(self):
        try:
            self.tree = ast.parse(self.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as error:
            line = getattr(error, "lineno", 0) or 0
            self.report.add("unparsable", line, "%s: %s" % (type(error).__name__,
                                                           getattr(error, "msg", error)))
            return self.result()
        self.parsed = True
        if self.require_model_new and not names_model_new(self.tree):
            self.report.add("no_model_new", 0, "the candidate defines no ModelNew (it never "
                            "names it): define class ModelNew(nn.Module) with the reference's "
                            "interface")
            return self.result()
        self.names = ImportMap(self.tree)
        self.program = Program(self.tree)
        self.strings = StringResolver(self.program, self.names, self.lines)
        self.loads = {}
        self.units = []
        self.native_chars = 0
        self.native_units = 0
        self.engine = None
        self.reach = None
        # An error in a phase is a bug of the analyzer: it propagates (the command exits 1 with a
        # traceback), so that the candidate is reported unanalyzable rather than passed unseen.
        for phase in (self.collect_native, self.python_rules, self.native_rules,
                      self.model_rules, self.try_rules, self.backend_rule):
            phase()
        return self.result()

    def result(self):
        return {"findings": self.report.findings(), "kernels": self.kernels,
                "markers": self.markers, "parsed": self.parsed}

    def add(self, rule, node_or_line, reason):
        line = node_or_line if isinstance(node_or_line, int) else \
            getattr(node_or_line, "lineno", 0)
        self.report.add(rule, line, reason)

    def marker(self, name):
        if name not in self.markers:
            self.markers.append(name)

    # --- native sources

    def collect_native(self):
        covered = set()
        for node in walk_all(self.tree):
            if isinstance(node, ast.Call):
                qual = self.names.qual(node.func) or ""
                if qual in LOAD_QUALS:
                    self._collect_load(node, qual)
                elif qual.startswith("cupy.") and qual.rsplit(".", 1)[-1] in (
                        "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel"):
                    code = node.args[0] if node.args else keyword(node, "code")
                    if code is not None:
                        self._add_unit(code, node, None)
        for load in self.loads.values():
            for unit in load.units:
                covered |= unit.node_ids
        # Other strings that are C++/CUDA source. Only assigned ones: a bare string statement
        # (a docstring, commented-out code) cannot be compiled.
        for node in walk_all(self.tree):
            value = None
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value
            if value is None or not self._stringish(value):
                continue
            scope = self.program.scope_of_owner(self.program.enclosing_function(node))
            resolved = self.strings.resolve(value, scope)
            if not resolved:
                continue
            self.strings.charge(sum(len(p[0]) for p in resolved[0]))
            text = "".join(p[0] for p in resolved[0])
            module_level = scope is self.program.module_scope
            markers = ("__global__", "#include", "PYBIND11_MODULE", "TORCH_LIBRARY")
            if not any(m in text for m in markers) and not (
                    module_level and ("torch::" in text or "at::" in text)):
                continue
            ids = {p[3] for p in resolved[0] if p[3] is not None}
            if ids and ids <= covered:
                continue
            covered |= ids
            self._new_unit(resolved[0], resolved[1])
        listed = {kind: set(names) for kind, names in self.kernels.items()}

        def list_kernel(kind, name):
            # (A set beside each list: a list's own 'in' is quadratic in a file of many kernels.)
            if name not in listed[kind]:
                listed[kind].add(name)
                self.kernels[kind].append(name)

        for unit in self.units:
            for name, _, is_def in global_functions(unit.code):
                if is_def and HOLE not in name:
                    list_kernel("cuda", name)
            for name, _ in pybind_functions(unit.code):
                list_kernel("extension_functions", name)
        for load in self.loads.values():
            for name, _ in load.functions:
                list_kernel("extension_functions", name)
            load.wrapper = native_is_aten_wrapper(load.units)
        for node in walk_all(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    jit_backend(node, self.names) == "triton":
                list_kernel("triton", node.name)

    @staticmethod
    def _stringish(node):
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp):
            operands = flatten_add(node)
            if len(operands) == 1:
                return Analysis._stringish(node.left)
            return any(Analysis._stringish(o) for o in operands)
        if isinstance(node, ast.Call):
            return any(Analysis._stringish(a) for a in node.args) or (
                isinstance(node.func, ast.Attribute) and Analysis._stringish(node.func.value))
        return False

    def _collect_load(self, node, qual):
        label = keyword(node, "name")
        if isinstance(label, ast.Constant) and isinstance(label.value, str):
            label = label.value
        elif node.args and isinstance(node.args[0], ast.Constant):
            label = str(node.args[0].value)
        else:
            label = "extension at line %d" % node.lineno
        load = LoadInfo(node, label)
        self.loads[id(node)] = load
        scope = self.program.scope_of_owner(self.program.enclosing_function(node))
        if qual.endswith(".load"):
            load.complete = False       # sources are files: nothing to read here
            return
        sources = [keyword(node, "cpp_sources"), keyword(node, "cuda_sources"),
                   keyword(node, "sycl_sources")]
        functions = keyword(node, "functions")
        if len(node.args) > 1:
            sources[0] = node.args[1]
        if len(node.args) > 2:
            sources[1] = node.args[2]
        for extra in node.args[3:5]:
            if functions is None and self._looks_like_function_list(extra):
                functions = extra
            else:
                sources.append(extra)
        for expr in sources:
            if expr is not None:
                unit = self._add_unit(expr, node, load)
                if unit is None:
                    load.complete = False
        if functions is not None:
            load.functions = self._function_names(functions, scope)

    def _add_unit(self, expr, call, load):
        scope = self.program.scope_of_owner(self.program.enclosing_function(call))
        if isinstance(expr, ast.Constant) and expr.value is None:
            return True
        resolved = self.strings.resolve(expr, scope)
        if not resolved:
            return None
        unit = self._new_unit(resolved[0], resolved[1], listed=False)
        if load is not None:
            load.units.append(unit)
            load.complete = load.complete and resolved[1]
        self.units.append(unit)
        return unit

    def _new_unit(self, pieces, complete, listed=True):
        """A NativeUnit, counted against MAX_NATIVE_TEXT and MAX_NATIVE_UNITS (AnalysisLimit
        past either).

        Every unit is scanned in full, and units can share their text (many strings built from
        the same big one): without a limit the work would grow with their number times their
        size. Each unit also costs a fixed amount of work, however small its text (tens of
        thousands of short strings that each hold a kernel would take the analyzer minutes).
        """
        self.native_units += 1
        if self.native_units > MAX_NATIVE_UNITS:
            raise AnalysisLimit("the file holds more than %d native sources" % MAX_NATIVE_UNITS)
        self.native_chars += sum(len(p[0]) for p in pieces)
        if self.native_chars > MAX_NATIVE_TEXT:
            raise AnalysisLimit("the native sources come to more than %d characters"
                                % MAX_NATIVE_TEXT)
        unit = NativeUnit(pieces, complete)
        if listed:
            self.units.append(unit)
        return unit

    def _looks_like_function_list(self, node):
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                       and e.value.isidentifier() for e in node.elts)
        return False

    def _function_names(self, node, scope, depth=0):
        if depth > 5:
            return []
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [(node.value, node.lineno)] if node.value.isidentifier() else []
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = []
            for elt in node.elts:
                out += self._function_names(elt, scope, depth + 1)
            return out
        if isinstance(node, ast.Dict):
            return [(k.value, k.lineno) for k in node.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        if isinstance(node, ast.Name):
            current = scope
            while current is not None:
                binds = current.bindings.get(node.id)
                if binds:
                    out = []
                    for bind in binds:
                        if bind.kind == "value" and not bind.path:
                            out += self._function_names(bind.node, scope, depth + 1)
                    return out
                current = current.parent
        return []

    # --- native rules

    def native_rules(self):
        fp32 = self.precision == "fp32"
        for unit in self.units:
            # A match adds nothing that the same rule, line and reason did not add already: a
            # text with a match on every line is only one add per line.
            added = set()

            def add(rule, offset, reason):
                key = (rule, unit.line_of(offset), reason)
                if key not in added:
                    added.add(key)
                    self.add(*key)

            for rule, patterns in NATIVE_PATTERNS.items():
                for pattern, reason in patterns:
                    for offset in native_matches(pattern, unit.code):
                        add(rule, offset, "native code " + reason)
            if fp32:
                for pattern, reason in NATIVE_PRECISION:
                    for offset in native_matches(pattern, unit.code):
                        add("precision_downgrade", offset,
                            "native code " + reason + " in an fp32 problem")
            for offset, text in aten_compute_calls(unit.bare):
                add("torch_compute", offset, "native code calls the ATen op %s" % text)
        self._native_unreachable()

    def _native_unreachable(self):
        headers = {}
        for unit in self.units:
            for name, offset, is_def in global_functions(unit.code):
                headers.setdefault(name, []).append((unit, offset, is_def))
        defined = {name for name, places in headers.items()
                   if HOLE not in name and any(is_def for _, _, is_def in places)}
        # Where each name stands as a word (r"\bname\b"), one pass over each text for all,
        # gathered by name (going over every unit for each name is quadratic in a file of many
        # units that each define a kernel).
        words = {}
        for unit in self.units:
            for name, offsets in word_offsets(unit.bare, defined).items():
                words.setdefault(name, []).extend((id(unit), offset) for offset in offsets)
        for name, places in headers.items():
            if name not in defined:
                continue
            header_offsets = {(id(u), o) for u, o, _ in places}
            used = any(place not in header_offsets for place in words.get(name, ()))
            if not used:
                unit, offset, _ = next(p for p in places if p[2])
                self.add("unreachable_kernel", unit.line_of(offset),
                         "__global__ function %s is launched nowhere in the native sources"
                         % name)

    # --- whole-file Python rules

    def python_rules(self):
        PythonRules(self).run()

    # --- rules about ModelNew

    def model_rules(self):
        self.engine = Engine(self.program, self.names, self.loads)
        engine = self.engine
        classes = self._model_classes()
        self._pass_inheritance(classes)
        if not classes:
            return
        roots, blocked = [], []
        for info in classes:
            found = self._roots(info)
            if found is None:
                return                      # no forward: the load fails anyway
            r, b = found
            roots += r
            blocked += b
        if self._hooks_registered():
            blocked.append("forward hooks are registered")
        # Code that rewires what names and attributes mean makes "certainly no kernel" unsure.
        seen = {rule for rule, _ in self.report.items}
        for rule in sorted(seen & UNSETTLING_RULES):
            blocked.append("the file has %s findings" % rule)
        if self.program.dynamic_writes:
            blocked.append("attributes or globals are written by computed names")
        contexts = engine.reach(roots)
        self.reach = contexts
        events = [(ctx, node, res) for ctx in contexts for node, res in ctx.events]
        for ctx, node, res in events:
            if res.outcomes == {"torch"}:
                self.add("torch_compute", node, "%s in code reachable from ModelNew.forward"
                         % (res.reasons[0] if res.reasons else "PyTorch op"))
        kernel = any("kernel" in res.outcomes for _, _, res in events)
        unknown = blocked or any("unknown" in res.outcomes for _, _, res in events)
        if not kernel and not unknown:
            self._no_kernel_call(classes, events)
        if not unknown:
            self._unreachable_python(events)

    def _model_classes(self):
        """The ModelNew classes that may be the one loaded (the last of plain definitions)."""
        binds = self.program.module_scope.bindings.get("ModelNew", [])
        if not binds or any(bind.kind != "class" for bind in binds):
            return []
        if all(bind.node in self.tree.body for bind in binds):
            binds = [max(binds, key=lambda bind: bind.node.lineno)]
        return [self.program.classes[id(bind.node)] for bind in binds]

    def _roots(self, info):
        """(root contexts, reasons the analysis is incomplete), or None without a forward."""
        engine = self.engine
        blocked = []
        if info.node.decorator_list:
            blocked.append("ModelNew is decorated")
        for node in walk_all(self.tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) \
                    else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and \
                            isinstance(target.value, ast.Name) and \
                            target.value.id == "ModelNew":
                        blocked.append("ModelNew's attributes are reassigned")
        roots = []
        owner, call = engine.find_method(info.cid, "__call__")
        entries = []
        if call is not None:
            entries.append(engine.method_kinds(owner, call, ("inst", info.cid)))
        forward = engine.inst_attr(info.cid, "forward")
        entries.append(forward)
        if all(k[0] == "nnattr" and is_nn_module_qual(k[1]) for k in forward) and call is None:
            return None
        for kinds in entries:
            for kind in self.engine.ordered(kinds):
                if kind[0] == "func":
                    fnode = self.program.funcs[kind[1]]
                    roots.append(engine._ctx_for(fnode, self._root_params(fnode, kind[2]),
                                                 engine.ctxs[kind[3]]))
                elif kind[0] == "nnattr" and not is_nn_module_qual(kind[1]):
                    fake = engine._new_ctx(self.tree, self.program.module_scope, {}, None)
                    fake.walked = True
                    res = CallResult()
                    res.add(FT, "torch", "forward inherited from %s" % kind[1])
                    fake.events.append((info.node, res))
                    roots.append(fake)
                else:
                    blocked.append("forward of unknown kind")
        return roots, blocked

    def _root_params(self, fnode, bound):
        engine = self.engine
        args = fnode.args
        positional = args.posonlyargs + args.args
        params = {}
        first_default = len(positional) - len(args.defaults)
        parent = engine.parent_ctx_for(fnode)
        for index, arg in enumerate(positional):
            if index == 0 and bound is not None:
                params[arg.arg] = frozenset([bound])
                continue
            kinds = FT
            if scalar_annotation(arg.annotation):
                kinds = FS
            if index >= first_default:
                kinds = norm(kinds | engine.ev(args.defaults[index - first_default], parent))
            params[arg.arg] = kinds
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            params[arg.arg] = FS if scalar_annotation(arg.annotation) else FT
            if default is not None:
                params[arg.arg] = norm(params[arg.arg] | engine.ev(default, parent))
        if args.vararg is not None:
            params[args.vararg.arg] = container(FT)
        if args.kwarg is not None:
            params[args.kwarg.arg] = frozenset([("dict",)])
        return params

    def _hooks_registered(self):
        for node in walk_all(self.tree):
            if isinstance(node, ast.Attribute) and node.attr in (
                    "register_forward_hook", "register_forward_pre_hook",
                    "register_module_forward_hook", "register_module_forward_pre_hook"):
                return True
        return False

    def _no_kernel_call(self, classes, events):
        forward = None
        for info in classes:
            owner, fnode = self.engine.find_method(info.cid, "forward")
            if fnode is not None:
                forward = fnode
                break
        line = forward.lineno if forward is not None else classes[0].node.lineno
        aten = sorted({name for _, _, res in events for name in res.aten})
        torch_examples = ["%s (line %d)" % (res.reasons[0], node.lineno)
                          for _, node, res in events if res.reasons][:3]
        reason = "no custom kernel is called from ModelNew.forward"
        if aten:
            reason += "; extension %s only calls ATen (it launches no kernel and has no loop)" \
                % ", ".join(aten)
        if torch_examples:
            reason += "; it computes with PyTorch: " + ", ".join(torch_examples)
        elif not events:
            reason += "; it calls nothing"
        self.add("no_kernel_call", line, reason)

    def _unreachable_python(self, events):
        """Extension functions and Triton kernels that forward's code never calls.

        Only run when every call reached from forward was resolved.
        """
        called = set()
        launched = set()
        for _, _, res in events:
            called |= {name for _, name in res.ext_names}
            launched |= {name for _, name in res.launched}
        seen = set()
        for load in self.loads.values():
            names = list(load.functions)
            for unit in load.units:
                names += [(n, unit.line_of(o)) for n, o in pybind_functions(unit.code)]
            for name, line in names:
                if name not in called and name not in seen:
                    seen.add(name)
                    self.add("unreachable_kernel", line,
                             "extension function %s is not called from code reachable "
                             "from ModelNew.forward" % name)
        jit_called = self._jit_internal_calls()
        for fnode in self.program.funcs.values():
            if not isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            deco = self.engine.decorator_class(fnode)
            if deco[0] == "jit" and fnode.name not in launched and \
                    fnode.name not in jit_called:
                self.add("unreachable_kernel", fnode.lineno,
                         "%s kernel %s is launched nowhere from code reachable from "
                         "ModelNew.forward" % (deco[1], fnode.name))

    def _jit_internal_calls(self):
        called = set()
        for fnode in self.program.funcs.values():
            if isinstance(fnode, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    self.engine.decorator_class(fnode)[0] == "jit":
                for node in ast.walk(fnode):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                        called.add(node.func.id)
        return called

    def _pass_inheritance(self, classes):
        engine = self.engine
        for info in classes:
            bases = engine.base_kinds(info.cid)
            foreign = [b for b in bases if not (b[0] == "module" and is_nn_module_qual(b[1]))]
            if not foreign:
                continue
            own = info.methods.get("forward")
            if own is not None and not trivial_forward(own):
                continue
            provider = self._inherited_forward_provider(info)
            if provider == "kernel":
                continue
            self.add("pass_inheritance", own.lineno if own is not None else info.node.lineno,
                     "ModelNew inherits %s and %s" % (
                         ", ".join(describe_kind(engine, b) for b in foreign),
                         "does not define forward" if own is None
                         else "its forward only passes or delegates to the parent"))
        # A forward ModelNew runs (its own or an in-file base's) that returns the parent's:
        # super().forward(...) or Base.forward(self, ...). Helper modules that do it are
        # PyTorch compute, not a reference in disguise.
        chain = []
        for info in classes:
            chain += [c for c in engine.mro(info.cid) if c not in chain]
        for cinfo in chain:
            forward = cinfo.methods.get("forward")
            if forward is None:
                continue
            bases = engine.base_kinds(cinfo.cid)
            if all(b[0] == "module" and is_nn_module_qual(b[1]) for b in bases):
                continue
            for node in body_nodes(forward):
                if isinstance(node, ast.Return) and node.value is not None and \
                        delegates_to_parent(node.value, cinfo):
                    self.add("pass_inheritance", node,
                             "%s.forward returns the parent's forward" % cinfo.name)

    def _inherited_forward_provider(self, info):
        """'kernel' when the forward ModelNew runs (inherited) may call a kernel."""
        engine = self.engine
        owner, fnode = engine.find_method(info.cid, "forward", skip_first=True)
        if fnode is None:
            return "torch"
        ctx = engine._ctx_for(fnode, self._root_params(fnode, ("inst", info.cid)),
                              engine.parent_ctx_for(fnode))
        contexts = engine.reach([ctx])
        for c in contexts:
            for _, res in c.events:
                if "kernel" in res.outcomes:
                    return "kernel"
        return "torch"

    # --- try statements

    def try_rules(self):
        if self.engine is None:
            self.engine = Engine(self.program, self.names, self.loads)
        try_types = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
        for node in walk_all(self.tree):
            if isinstance(node, try_types):
                self._try(node)
            elif isinstance(node, ast.Call):
                qual = self.names.qual(node.func) or ""
                if qual == "contextlib.suppress":
                    self.add("try_except", node, "contextlib.suppress swallows exceptions")

    def _try(self, node):
        owner = self.program.enclosing_function(node)
        engine = self.engine
        if owner is self.tree:
            contexts = [engine.module_ctx]
        else:
            # The contexts reached from forward know the arguments; the generic one does not.
            # (Indexed by function as they are made: a pass over all of them for each try
            # statement is quadratic.)
            for ctx in engine.ctxs[self._ctxs_indexed:]:
                self._ctxs_by_function.setdefault(id(ctx.fnode), []).append(ctx)
            self._ctxs_indexed = len(engine.ctxs)
            contexts = [c for c in self._ctxs_by_function.get(id(owner), ()) if c.walked]
            contexts.append(engine.generic_ctx(owner))
        for ctx in contexts:
            if self._try_in(node, ctx):
                return
        if node.handlers:
            self.add("try_except", node.handlers[0], "try/except around %s" %
                     describe_try(node))

    def _try_in(self, node, ctx):
        """Reports a fallback of the try statement as evaluated in ctx (True if one)."""
        for handler in node.handlers:
            # A handler that always raises gives no result: whatever it computes, it is no
            # fallback (e.g. a message with the offending shapes).
            why = None if always_raises(handler.body) else self._fallback(handler.body, ctx)
            if why:
                self.add("try_fallback", handler, "the except handler " + why)
                return True
        if node.orelse:
            why = self._fallback(node.orelse, ctx, returns=False)
            if why:
                self.add("try_fallback", self._clause_line(node.orelse, "else"),
                         "the else clause " + why)
                return True
        if node.finalbody:
            why = self._fallback(node.finalbody, ctx)
            if why:
                self.add("try_fallback", self._clause_line(node.finalbody, "finally"),
                         "the finally clause " + why)
                return True
        return False

    def _clause_line(self, body, keyword_name):
        line = body[0].lineno
        for candidate in range(line, max(0, line - 20), -1):
            text = self.lines[candidate - 1].strip() if candidate - 1 < len(self.lines) else ""
            if text.startswith(keyword_name):
                return candidate
        return line

    def _fallback(self, body, ctx, returns=True):
        """Why a clause is a fallback (computes with PyTorch, calls the reference...)."""
        engine = self.engine
        for stmt in body:
            for node in [stmt] + [n for n in body_nodes_stmt(stmt)]:
                if returns and isinstance(node, ast.Return) and node.value is not None \
                        and T in engine.ev(node.value, ctx):
                    return "returns a tensor instead of the kernel's result"
                if isinstance(node, ast.Call):
                    why = self._fallback_call(node, ctx)
                    if why:
                        return why
                if isinstance(node, ast.BinOp) and (T in engine.ev(node.left, ctx)
                                                    or T in engine.ev(node.right, ctx)):
                    return "computes with PyTorch (tensor operator %s)" % op_symbol(node.op)
        return None

    def _fallback_call(self, node, ctx):
        engine = self.engine
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward" and \
                isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and \
                func.value.func.id == "super":
            return "calls super().forward"
        callee = engine.ev(func, ctx)
        for kind in self.engine.ordered(callee):
            if kind[0] in ("class", "inst") and \
                    self.program.classes[kind[1]].name in REFERENCE_CLASS_NAMES:
                return "calls the reference %s" % self.program.classes[kind[1]].name
            if kind[0] == "func":
                fnode = self.program.funcs.get(kind[1])
                scope = self.program.scopes.get(kind[1])
                if fnode is not None and scope is not None and scope.cls is not None and \
                        scope.cls.name in REFERENCE_CLASS_NAMES:
                    return "calls the reference %s" % scope.cls.name
        result = engine.call(node, ctx)
        if result.outcomes == {"torch"}:
            return "computes with PyTorch (%s)" % (result.reasons[0] if result.reasons
                                                   else "PyTorch op")
        if result.callees:
            reason = engine.reach_torch_reason(result.callees)
            if reason is not None:
                return "calls %s, which computes with PyTorch (%s)" % (call_name(node), reason)
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_COMPUTE_NAMES and \
                engine.ev(func.value, ctx) == FU:
            return "computes with what looks like a tensor method (.%s())" % func.attr
        return None

    # --- no_backend

    def backend_rule(self):
        for node in walk_all(self.tree):
            quals = []
            if isinstance(node, ast.Import):
                quals = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                quals = [base + "." + a.name for a in node.names if a.name != "*"]
            elif isinstance(node, (ast.Attribute, ast.Name)):
                qual = self.names.qual(node)
                quals = [qual] if qual else []
            for qual in quals:
                marker = backend_marker(qual)
                if marker:
                    self.marker(marker)
        if not self.markers:
            expected = " for a %s candidate" % self.backend if self.backend else ""
            self.add("no_backend", 0, "no kernel backend is imported or used%s "
                     "(torch.utils.cpp_extension, triton, thunderkittens, cutlass/cute, "
                     "tilelang, cupy RawKernel, numba.cuda)" % expected)


def jit_backend(fnode, names):
    """The kernel DSL a function's decorators compile it with, or None."""
    for deco in fnode.decorator_list:
        qual = names.qual(deco.func if isinstance(deco, ast.Call) else deco)
        if qual in JIT_DECORATORS:
            return JIT_DECORATORS[qual]
    return None


def is_self_name(node):
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def disabled(call):
    """A call given enabled=False (autocast(..., enabled=False) keeps full precision)."""
    value = keyword(call, "enabled")
    return isinstance(value, ast.Constant) and value.value is False


def keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def scalar_annotation(annotation):
    if annotation is None:
        return False
    if isinstance(annotation, ast.Name):
        return annotation.id in ("int", "float", "bool", "str", "tuple", "list")
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value in ("int", "float", "bool", "str")
    return False


def body_nodes_stmt(stmt):
    stack = list(ast.iter_child_nodes(stmt))
    out = []
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def call_name(node):
    func = node.func
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts)) or "a function"


def describe_kind(engine, kind):
    if kind[0] == "class":
        return engine.program.classes[kind[1]].name
    if kind[0] == "module":
        return kind[1]
    return "a base of unknown origin"


def describe_try(node):
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                return "an import"
            if isinstance(sub, ast.Call):
                return call_name(sub) + "(...)"
    return "a block"


def trivial_forward(fnode):
    """Only a docstring, pass, ..., raise, or a return of the parent's forward."""
    body = list(fnode.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    if not body:
        return True
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and stmt.value.value is Ellipsis:
        return True
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return delegates_to_parent(stmt.value, None)
    return False


def delegates_to_parent(expr, cinfo):
    """super().forward(...), super(X, self).forward(...), Base.forward(self, ...)."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("forward", "__call__")):
        return False
    target = expr.func.value
    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and \
            target.func.id == "super":
        return True
    if isinstance(target, ast.Name) and expr.args and isinstance(expr.args[0], ast.Name) \
            and expr.args[0].id == "self":
        if cinfo is None:
            return True
        return any(isinstance(b, ast.Name) and b.id == target.id for b in cinfo.node.bases)
    return False


def backend_marker(qual):
    if not qual:
        return None
    root = qual.split(".")[0]
    if qual.startswith("torch.utils.cpp_extension"):
        if qual.endswith("load_inline"):
            return "load_inline"
        return "cpp_extension"
    if root == "triton":
        return "triton"
    if qual.startswith("torch.cuda.jiterator"):
        return "jiterator"
    if root in ("thunderkittens", "tk"):
        return "thunderkittens"
    if root == "cutlass":
        return "cute" if ".cute" in qual else "cutlass"
    if root == "cute":
        return "cute"
    if root == "tilelang":
        return "tilelang"
    if root == "cupy" and qual.rsplit(".", 1)[-1] in ("RawKernel", "RawModule",
                                                       "ElementwiseKernel", "ReductionKernel"):
        return "cupy"
    if qual.startswith("numba.cuda"):
        return "numba.cuda"
    return None


# ======================================================================================
# Whole-file Python rules (module-level code runs at import, so everything counts)

IMPORT_RULES = [
    ("concurrency", ("threading", "_thread", "multiprocessing", "concurrent", "asyncio",
                     "signal", "torch.multiprocessing", "sched", "_posixsubprocess"),
     "imports %s (threads or processes)"),
    ("subprocess", ("subprocess", "pty", "commands"), "imports %s (runs programs)"),
    ("network", ("socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "aiohttp",
                 "ftplib", "smtplib", "xmlrpc", "websocket", "websockets", "telnetlib",
                 "poplib", "imaplib", "socketserver", "zmq", "paramiko", "grpc"),
     "imports %s (network)"),
    ("file_access", ("glob", "mmap", "fileinput", "gzip", "bz2", "lzma", "zipfile", "tarfile",
                     "sqlite3", "dbm", "shelve", "logging.handlers"),
     "imports %s (file access)"),
    ("native_access", ("ctypes", "_ctypes", "cffi", "numpy.ctypeslib"),
     "imports %s (native access)"),
    ("introspection", ("gc", "inspect", "atexit", "builtins", "__builtin__", "tracemalloc"),
     "imports %s (introspection)"),
    ("dynamic_code", ("runpy", "marshal", "code", "codeop"), "imports %s (dynamic code)"),
    ("tensor_subclass", ("torch.utils._python_dispatch", "torch.overrides", "torch._subclasses"),
     "imports %s (tensor subclass / dispatch machinery)"),
]

QUAL_RULES = [
    ("stream", ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream",
                "torch.cuda.set_stream", "torch.cuda.CUDAGraph", "torch.cuda.graph",
                "torch.cuda.graphs", "torch.cuda.make_graphed_callables", "torch.cuda.streams",
                "torch.cuda.StreamContext", "torch.Stream", "torch.cuda.set_per_process_stream"),
     "uses %s (stream or graph)"),
    ("concurrency", ("os.fork", "os.forkpty", "os.spawn*", "os.posix_spawn*",
                     "os.register_at_fork", "torch.jit.fork", "torch.jit._fork", "os.kill",
                     "os.killpg"),
     "uses %s (processes)"),
    ("subprocess", ("os.system", "os.popen", "os.exec*", "os.startfile", "platform.popen"),
     "uses %s (runs programs)"),
    ("file_access", ("os.open", "os.read", "os.write", "os.remove", "os.unlink", "os.rename",
                     "os.replace", "os.listdir", "os.scandir", "os.walk", "os.rmdir",
                     "os.removedirs", "os.truncate", "os.fdopen", "os.link", "os.symlink",
                     "os.sendfile", "os.pread", "os.pwrite", "io.open", "io.FileIO",
                     "codecs.open", "shutil.copy*", "shutil.move", "shutil.rmtree",
                     "shutil.unpack_archive", "shutil.make_archive", "glob.glob", "glob.iglob",
                     "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile", "tempfile.mkstemp",
                     "tempfile.SpooledTemporaryFile", "torch.load", "torch.save",
                     "torch.from_file", "numpy.load", "numpy.save", "numpy.savez*",
                     "numpy.fromfile", "numpy.loadtxt", "numpy.savetxt", "numpy.memmap",
                     "numpy.genfromtxt", "builtins.open", "linecache", "logging.FileHandler",
                     "logging.basicConfig", "os.posix_fallocate",
                     "os.ftruncate", "os.mkfifo", "os.mknod"),
     "uses %s (file access)"),
    ("native_access", ("torch.cuda.cudart", "torch.ops.load_library",
                       "torch.classes.load_library", "importlib.util.spec_from_file_location",
                       "importlib.machinery", "importlib.util.module_from_spec",
                       "torch.cuda._lazy_call"),
     "uses %s (native access)"),
    ("introspection", ("sys._getframe", "sys.settrace", "sys.setprofile", "sys.modules",
                       "sys._current_frames", "sys.addaudithook", "sys.call_tracing",
                       "weakref.finalize", "threading.settrace", "threading.setprofile"),
     "uses %s (introspection)"),
    ("dynamic_code", ("importlib.import_module", "importlib.__import__", "importlib.reload",
                      "pickle.load", "pickle.loads", "pickle.Unpickler", "marshal.load",
                      "marshal.loads", "dill.load", "dill.loads", "cloudpickle.load",
                      "cloudpickle.loads", "shelve.open", "types.FunctionType",
                      "types.CodeType", "types.LambdaType", "torch.jit.CompilationUnit"),
     "uses %s (code the analyzer cannot see)"),
    ("tensor_subclass", ("torch.utils._python_dispatch", "torch.overrides",
                         "torch._C._disabled_torch_function_impl",
                         "torch._C.DisableTorchFunction", "torch._C.DisableTorchFunctionSubclass",
                         "torch._C._DisableTorchDispatch", "torch.Tensor._make_subclass",
                         "torch.Tensor._make_wrapper_subclass", "torch._subclasses"),
     "uses %s (tensor subclass / dispatch override)"),
]
FRAME_ATTRS = {"f_back", "f_locals", "f_globals", "f_code", "f_builtins", "tb_frame",
               "gi_frame", "cr_frame", "ag_frame", "__globals__", "__subclasses__", "__code__",
               "__closure__", "__builtins__", "_getframe"}
SUBCLASS_ATTRS = {"_make_subclass", "_make_wrapper_subclass", "__torch_function__",
                  "__torch_dispatch__", "as_subclass"}
HALF_DTYPES = {"torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn",
               "torch.float8_e5m2", "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz",
               "triton.language.float16", "triton.language.bfloat16",
               "triton.language.float8e4nv", "triton.language.float8e5", "numpy.float16",
               "torch.HalfTensor", "torch.BFloat16Tensor", "torch.cuda.HalfTensor",
               "torch.cuda.BFloat16Tensor"}
TENSOR_BASES = {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase",
                "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                "torch._tensor.Tensor"}
PRECISION_FLAGS = {"allow_tf32", "allow_fp16_reduced_precision_reduction",
                   "allow_bf16_reduced_precision_reduction"}


class PythonRules:
    """Rules over the whole file's syntax tree that need no data flow."""

    def __init__(self, analysis):
        self.a = analysis
        self.names = analysis.names
        self.tree = analysis.tree
        self.native_ids = set()
        for unit in analysis.units:
            self.native_ids |= unit.node_ids
        self.local_defs = self._module_defined_names()
        self.path_names = set()

    def _module_defined_names(self):
        defined = set()
        for node in walk_all(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
        return defined

    def add(self, rule, node, reason):
        self.a.add(rule, node, reason)

    def builtin(self, node):
        """Name of a builtin that node refers to (not shadowed or imported), else None."""
        if isinstance(node, ast.Name) and node.id in BUILTIN_NAMES and \
                node.id not in self.local_defs and self.names.root(node.id) is None:
            return node.id
        return None

    def qual(self, node):
        qual = self.names.qual(node)
        if qual is None:
            name = self.builtin(node)
            if name:
                return "builtins." + name
        return qual

    def run(self):
        self._path_names()
        for node in walk_all(self.tree):
            kind = type(node).__name__
            handler = getattr(self, "_" + kind, None)
            if handler is not None:
                handler(node)

    # --- imports

    def _check_import(self, node, module):
        for rule, modules, reason in IMPORT_RULES:
            if qual_matches(module, modules):
                self.add(rule, node, reason % module)
        for rule, patterns, reason in QUAL_RULES:
            if qual_matches(module, patterns):
                self.add(rule, node, reason % module)
        if qual_matches(module, ("torch.cuda.amp", "torch.amp", "torch.cpu.amp")) and \
                self.a.precision == "fp32":
            self.add("precision_downgrade", node, "imports %s (automatic mixed precision)"
                     % module)

    def _Import(self, node):
        for alias in node.names:
            self._check_import(node, alias.name)

    def _ImportFrom(self, node):
        base = node.module or ""
        if node.level:
            return
        self._check_import(node, base)
        for alias in node.names:
            self._check_import(node, base + "." + alias.name)

    # --- references

    def _inner_part(self, node):
        """node is the x of x.y: the longer chain is checked instead (prefixes match)."""
        parent = self.a.program.parents.get(id(node))
        return isinstance(parent, ast.Attribute) and parent.value is node

    def _Attribute(self, node):
        if node.attr in FRAME_ATTRS:
            self.add("introspection", node, "accesses .%s" % node.attr)
        if node.attr in SUBCLASS_ATTRS:
            self.add("tensor_subclass", node, "uses .%s" % node.attr)
        qual = self.names.qual(node)
        if qual and not self._inner_part(node):
            self._check_qual(node, qual)

    def _Name(self, node):
        if node.id == "__builtins__":
            self.add("introspection", node, "uses __builtins__")
        if node.id in ("TorchDispatchMode", "TorchFunctionMode"):
            self.add("tensor_subclass", node, "uses %s" % node.id)
        if isinstance(node.ctx, ast.Load):
            qual = self.names.qual(node)
            if qual and qual != node.id and not self._inner_part(node):
                self._check_qual(node, qual)
            name = self.builtin(node)
            if name in ("eval", "exec", "compile", "__import__"):
                self.add("dynamic_code", node, "uses %s" % name)

    def _check_qual(self, node, qual):
        for rule, patterns, reason in QUAL_RULES:
            if qual_matches(qual, patterns):
                self.add(rule, node, reason % qual)
        for rule, modules, reason in IMPORT_RULES:
            if rule in ("concurrency", "subprocess", "network", "native_access",
                        "introspection") and qual_matches(qual, modules):
                self.add(rule, node, "uses %s" % qual)
        parent = self.a.program.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        if qual.startswith("torch._C.") and called and not qual.startswith("torch._C._"):
            self.add("native_access", node, "calls the private %s" % qual)
        if qual.startswith("torch._C._") and not qual_matches(qual, (
                "torch._C._TensorBase", "torch._C._disabled_torch_function_impl",
                "torch._C._DisableTorchDispatch")):
            self.add("native_access", node, "uses the private %s" % qual)
        if qual.endswith((".TorchDispatchMode", ".TorchFunctionMode")):
            self.add("tensor_subclass", node, "uses %s" % qual)
        if self.a.precision == "fp32":
            if qual_matches(qual, ("torch.autocast", "torch.cuda.amp", "torch.amp",
                                   "torch.cpu.amp", "torch.HalfTensor", "torch.BFloat16Tensor",
                                   "torch.cuda.HalfTensor", "torch.cuda.BFloat16Tensor")) \
                    and not (called and disabled(parent)):
                self.add("precision_downgrade", node, "uses %s" % qual)

    def _Constant(self, node):
        if isinstance(node.value, str) and id(node) not in self.native_ids:
            for needle in ("/proc/", "/dev/shm"):
                if needle in node.value:
                    self.add("file_access", node, "a string names %s" % needle)
                    break

    # --- definitions

    def _ClassDef(self, node):
        for base in node.bases:
            qual = self.names.qual(base)
            if qual in TENSOR_BASES:
                self.add("tensor_subclass", node, "class %s subclasses %s" % (node.name, qual))

    def _FunctionDef(self, node):
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.add("tensor_subclass", node, "defines %s" % node.name)

    _AsyncFunctionDef = _FunctionDef

    # --- calls

    def _Call(self, node):
        func = node.func
        name = self.builtin(func)
        if name == "open":
            self.add("file_access", node, "calls open()")
        elif name in ("getattr", "setattr", "delattr") and node.args:
            self._attr_call(node, name)
        elif name == "vars" and node.args and not (isinstance(node.args[0], ast.Name)
                                                    and node.args[0].id == "self"):
            self.add("introspection", node, "calls vars() on another object")
        elif name in ("globals", "locals"):
            self._globals_call(node, name)
        if isinstance(func, ast.Attribute):
            self._method_call(node, func)
        qual = self.names.qual(func) or ""
        if qual.startswith("torch.library.") or qual == "torch.library":
            if any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                   and re.match(r"^(aten|prims)(::|$)", a.value) for a in node.args):
                self.add("monkeypatch", node, "registers an implementation of an aten operator")
        if self.a.precision == "fp32":
            self._precision_call(node, qual)

    def _attr_call(self, node, name):
        target = node.args[0]
        qual = self.names.qual(target)
        is_module = qual is not None or self._class_from_module(target)
        if name == "getattr":
            if is_module and len(node.args) >= 2 and not (
                    isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                self.add("dynamic_code", node, "getattr on %s with a computed name"
                         % (qual or "a module"))
            return
        if is_module:
            self.add("monkeypatch", node, "%s() on %s" % (name, qual or "a class of a module"))
        elif isinstance(target, ast.Call) and self.builtin(target.func) in ("globals", "locals"):
            self.add("introspection", node, "%s() on %s()" % (name, target.func.id))

    def _class_from_module(self, node):
        # type(x) / x.__class__ of an object other than self: usually a torch class.
        if isinstance(node, ast.Call) and self.builtin(node.func) == "type" and node.args:
            return not is_self_name(node.args[0])
        return isinstance(node, ast.Attribute) and node.attr == "__class__" and \
            not is_self_name(node.value)

    def _globals_call(self, node, name):
        parent = self.a.program.parents.get(id(node))
        # Reading globals() (e.g. a name test) is fine; writing through it is not.
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, (ast.Store, ast.Del)):
            self.add("introspection", node, "writes through %s()" % name)
        elif isinstance(parent, ast.Attribute) and parent.attr in ("update", "__setitem__",
                                                                    "setdefault", "pop",
                                                                    "__delitem__", "clear"):
            self.add("introspection", node, "modifies %s()" % name)
        elif isinstance(parent, ast.Call) and parent is not node:
            self.add("introspection", node, "passes %s() to a call" % name)

    def _method_call(self, node, func):
        attr = func.attr
        if attr in ("read_text", "read_bytes", "write_text", "write_bytes"):
            self.add("file_access", node, "calls .%s()" % attr)
        elif attr in ("open", "unlink", "touch", "iterdir", "rmdir", "rename", "glob", "rglob",
                      "mkdir", "replace") and self._is_path(func.value):
            if attr != "mkdir":
                self.add("file_access", node, "calls Path.%s()" % attr)
        if attr in ("update", "__setitem__", "setdefault") and \
                isinstance(func.value, ast.Attribute) and func.value.attr == "__dict__":
            if self.names.qual(func.value.value) or self._class_from_module(func.value.value):
                self.add("monkeypatch", node, "modifies the __dict__ of a module or class")

    def _path_names(self):
        for node in walk_all(self.tree):
            if isinstance(node, ast.Assign) and self._is_path(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.path_names.add(target.id)

    def _is_path(self, node):
        if isinstance(node, ast.Call):
            qual = self.names.qual(node.func) or ""
            if qual in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "resolve", "absolute", "with_suffix", "with_name", "joinpath", "expanduser"):
                return self._is_path(node.func.value)
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self._is_path(node.left)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return self._is_path(node.value)
        return isinstance(node, ast.Name) and node.id in self.path_names

    def _precision_call(self, node, qual):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("half", "bfloat16") and \
                not node.args and not self.names.qual(func):
            self.add("precision_downgrade", node, "casts with .%s()" % func.attr)
        if isinstance(func, ast.Attribute) and func.attr in ("to", "type", "type_as", "view"):
            for arg in node.args:
                if self._half(arg):
                    self.add("precision_downgrade", node, "casts to %s" % self._half(arg))
        for kw in node.keywords:
            if kw.arg == "dtype" and self._half(kw.value):
                self.add("precision_downgrade", node, "uses dtype=%s" % self._half(kw.value))
            if kw.arg == "allow_tf32" and not (isinstance(kw.value, ast.Constant)
                                               and not kw.value.value):
                self.add("precision_downgrade", node, "allows TF32 (allow_tf32=...)")
            if kw.arg == "input_precision" and isinstance(kw.value, ast.Constant) and \
                    kw.value.value == "tf32":
                self.add("precision_downgrade", node, "uses input_precision='tf32'")
        if qual == "torch.set_float32_matmul_precision" and node.args and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value in ("high",
                                                                                  "medium"):
            self.add("precision_downgrade", node, "sets float32 matmul precision to %r"
                     % node.args[0].value)

    def _half(self, node):
        qual = self.names.qual(node)
        if qual in HALF_DTYPES:
            return qual
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.search(r"HalfTensor|BFloat16Tensor|float16|bfloat16", node.value):
            return node.value
        return None

    # --- assignments

    def _Assign(self, node):
        for target in node.targets:
            self._assign_target(target, node.value, node)

    def _AugAssign(self, node):
        self._assign_target(node.target, node.value, node)

    def _AnnAssign(self, node):
        if node.value is not None:
            self._assign_target(node.target, node.value, node)

    def _Delete(self, node):
        for target in node.targets:
            self._assign_target(target, None, node)

    def _assign_target(self, target, value, stmt):
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._assign_target(elt, None, stmt)
            return
        if isinstance(target, ast.Starred):
            self._assign_target(target.value, None, stmt)
            return
        if isinstance(target, ast.Attribute):
            qual = self.names.qual(target)
            if qual is not None:
                self._module_attr_assign(qual, target, value, stmt)
            elif isinstance(target.value, ast.Name) and target.value.id == "__builtins__":
                self.add("monkeypatch", stmt, "assigns __builtins__.%s" % target.attr)
            elif target.attr == "__class__":
                self.add("tensor_subclass", stmt, "assigns __class__ of an object")
            elif self._class_from_module(target.value):
                self.add("monkeypatch", stmt, "assigns .%s on the class of an object"
                         % target.attr)
        elif isinstance(target, ast.Subscript):
            base = target.value
            qual = self.names.qual(base) or ""
            if isinstance(base, ast.Name) and base.id == "__builtins__":
                self.add("monkeypatch", stmt, "assigns into __builtins__")
            elif qual == "sys.modules":
                self.add("monkeypatch", stmt, "assigns into sys.modules")
            elif isinstance(base, ast.Attribute) and base.attr == "__dict__" and \
                    (self.names.qual(base.value) or self._class_from_module(base.value)):
                self.add("monkeypatch", stmt, "assigns into the __dict__ of a module or class")
            elif isinstance(base, ast.Call) and self.builtin(base.func) == "vars" and \
                    base.args and self.names.qual(base.args[0]):
                self.add("monkeypatch", stmt, "assigns into vars() of a module")

    def _module_attr_assign(self, qual, target, value, stmt):
        if qual.startswith("torch.backends."):
            # Backend settings: only reduced-precision flags matter.
            last = qual.rsplit(".", 1)[-1]
            if self.a.precision != "fp32":
                return
            truthy = value is not None and not (isinstance(value, ast.Constant)
                                                and not value.value)
            if last in PRECISION_FLAGS and truthy:
                self.add("precision_downgrade", stmt, "sets %s" % qual)
            elif last == "fp32_precision" and isinstance(value, ast.Constant) and \
                    value.value in ("tf32", "bf16"):
                self.add("precision_downgrade", stmt, "sets %s to %r" % (qual, value.value))
            return
        if qual.startswith("os.environ"):
            return
        verb = "deletes" if value is None and isinstance(stmt, ast.Delete) else "assigns"
        self.add("monkeypatch", stmt, "%s %s" % (verb, qual))

    # --- try/except handled by Analysis.try_rules


# ======================================================================================
# Entry points


def analyze(source, backend="", precision="fp32", require_model_new=False):
    """Static findings for a candidate's source text (see the module docstring).

    require_model_new: a source that never names ModelNew gets no_model_new alone (the command
    line's, for whole candidates; fragments analyzed in tests need not define it)."""
    if not isinstance(source, str):
        source = ""
    old_limit = sys.getrecursionlimit()
    if old_limit < 5000:
        sys.setrecursionlimit(5000)
    try:
        analysis = Analysis(source, backend, precision)
        analysis.require_model_new = require_model_new
        return analysis.run()
    finally:
        sys.setrecursionlimit(old_limit)


def run_with_deep_stack(function):
    """function() in a thread with a large stack: deeply nested code recurses deeply."""
    box = {}

    def target():
        try:
            box["value"] = function()
        except BaseException as error:      # re-raised in the calling thread
            box["error"] = error

    try:
        previous = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):
        return function()
    try:
        worker = threading.Thread(target=target)
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous)
    if "error" in box:
        raise box["error"]
    return box["value"]


def main(argv):
    if "--rules" in argv[1:]:
        sys.stdout.write(json.dumps(RULES, indent=2, sort_keys=True) + "\n")
        return 0
    try:
        request = json.loads(sys.stdin.read())
    except (ValueError, UnicodeDecodeError) as error:
        sys.stderr.write("static_rules: stdin is not JSON: %s\n" % error)
        return 2
    if not isinstance(request, dict):
        sys.stderr.write("static_rules: stdin must be a JSON object\n")
        return 2
    source = request.get("source")
    source = source if isinstance(source, str) else ""
    backend = str(request.get("backend") or "")
    precision = str(request.get("precision") or "fp32")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), DEEP_RECURSION_LIMIT))
    try:
        result = run_with_deep_stack(lambda: analyze(source, backend, precision, True))
    except AnalysisLimit as error:
        sys.stderr.write("static_rules: the source cannot be analyzed in time: %s\n" % error)
        return 1
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
