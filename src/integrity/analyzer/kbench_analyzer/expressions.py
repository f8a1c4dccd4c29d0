"""The engine's evaluation of expressions to kinds (the Expressions part of Engine)."""

import ast

from .kinds import (
    CONTAINER_METHODS, EMPTY, FS, FSAFE, FT, FU, S, SAFE, T, TENSOR_SCALAR_ATTRS,
    TENSOR_TENSOR_ATTRS, U, container, iter_kinds, norm, tuple_kind,
)
from .program import short_qual
from .syntax import is_tensor_attr_name


class Expressions:
    """Kinds of expressions: names, attributes, subscripts, operators, literals.

    A part of Engine (engine.py), which inherits it: its methods use the engine's
    state and methods through self.
    """

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
