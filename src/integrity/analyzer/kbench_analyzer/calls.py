"""The engine's classification of calls (the Calls part of Engine): functions, classes and
instances of the file, extensions and kernels, torch.nn modules, tensor methods, builtins,
the standard library and torch.
"""

import ast

from .kinds import (
    CALLABLE_TAGS, EMPTY, FS, FSAFE, FT, FU, INVOKING_TENSOR_METHODS, LOAD_QUALS, NN_GLUE_MODULES,
    NN_INVOKING_METHODS, NN_MODULE_METHODS, STDLIB_OTHER, STDLIB_SAFE, T, TENSOR_GLUE_METHODS,
    TENSOR_SCALAR_METHODS, TORCH_ALLOC, TORCH_INERT_SUBMODULES, TORCH_META, TORCH_MISC,
    TORCH_NOT_COMPUTE_SUBMODULES, TORCH_OP_NAMESPACES, TORCH_TRANSPARENT, TORCH_VIEWS,
    TRANSPARENT_QUALS, U, container, iter_kinds, norm, tuple_kind,
)
from .native import torch_library_namespaces
from .syntax import first_arg, is_nn_module_qual, is_star


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


class Calls:
    """What a call is (a kernel, PyTorch, plain Python or unknown) and what it returns.

    A part of Engine (engine.py), which inherits it: its methods use the engine's
    state and methods through self.
    """

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
