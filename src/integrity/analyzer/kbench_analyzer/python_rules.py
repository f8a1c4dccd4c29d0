"""Whole-file Python rules (PythonRules): imports, qualified names and statements anywhere in
the file (module-level code runs at import, so everything counts).
"""

import ast
import re

from .kinds import BUILTIN_NAMES
from .program import qual_matches
from .syntax import disabled, is_self_name, walk_all


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
