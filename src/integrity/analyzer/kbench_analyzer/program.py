"""Names and program structure: imports and aliases of imported modules (ImportMap), and the
scopes, bindings and classes of the candidate (Program).
"""

import ast

from .syntax import walk_all


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
