"""Helpers over the candidate's syntax tree and lines, used across the analysis."""

import ast
import re


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
