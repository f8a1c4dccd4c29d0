"""Python string literals and the strings a candidate puts together (StringResolver): where
the native sources handed to load_inline/load come from, and on which lines each of their
characters sits.
"""

import ast
import re
import textwrap

from .rules import AnalysisLimit


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
