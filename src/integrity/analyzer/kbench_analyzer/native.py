"""Native (C++/CUDA) sources: comments and literals (cxx_tokens, strip_cxx), the functions
they define and launch (cuda_functions), the ATen calls they make (aten_compute_calls), and
the patterns of the native rules (NATIVE_PATTERNS, NATIVE_PRECISION). Every scanner here
takes time linear (or n log n) in the text.
"""

import bisect
import re


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
