"""The analysis of one candidate (Analysis): it parses the source, collects its native
sources, follows ModelNew.forward with the engine and runs every rule; analyze() is the
entry point.
"""

import ast
import sys

from .calls import CallResult
from .engine import Engine
from .kinds import (
    FS, FT, FU, JIT_DECORATORS, LOAD_QUALS, REFERENCE_CLASS_NAMES, T, TENSOR_COMPUTE_NAMES,
    container, norm,
)
from .native import (
    NATIVE_PATTERNS, NATIVE_PRECISION, NativeUnit, aten_compute_calls, global_functions,
    native_is_aten_wrapper, native_matches, pybind_functions, word_offsets,
)
from .program import ImportMap, Program
from .python_rules import PythonRules
from .rules import MAX_NATIVE_TEXT, MAX_NATIVE_UNITS, AnalysisLimit, Report
from .strings import HOLE, StringResolver, flatten_add
from .syntax import (
    always_raises, body_nodes, is_nn_module_qual, keyword, names_model_new, op_symbol, split_lines,
    walk_all,
)


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
