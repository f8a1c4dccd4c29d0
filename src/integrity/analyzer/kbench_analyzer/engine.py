"""The engine: evaluation of kinds and classification of calls in reachable code.

Engine is split over three modules: this one (contexts, names, functions, classes, and the
walk over reachable code), expressions.py (the kinds of expressions) and calls.py (what a
call is: a kernel, PyTorch, plain Python or unknown).
"""

import ast
import collections

from .calls import CallResult, Calls
from .expressions import Expressions
from .kinds import (
    BUILTIN_NAMES, EMPTY, FS, FSAFE, FT, FU, JIT_DECORATORS, S, SAFE, T, TRANSPARENT_DECORATORS, U,
    container, iter_kinds, norm, unpack,
)
from .rules import AnalysisLimit
from .syntax import (
    always_returns, body_nodes, expr_nodes, is_nn_module_qual, is_star, is_tensor_attr_name,
    op_symbol,
)


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


class Engine(Expressions, Calls):
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
