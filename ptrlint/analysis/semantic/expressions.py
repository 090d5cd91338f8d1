"""Per-expression collection: what each expression kind records into the semantic model (the
traversal and dispatch are :mod:`.collector`')."""

from __future__ import annotations

import ast

from ...names import CAST_METHODS, ELEMENT_TYPE_NAMES, FOLLOWED_COLLECTIVES, NEW_METHODS
from .assignments import bind
from .records import Binding, ScalarWrite
from .syntax import CREATION_LAST_NAMES, UNSAFE_FUNCTION_LAST_NAMES, attr_name, positional
from .traversal import Traversal


def visit_Name(walk: Traversal, node: ast.Name) -> None:
    walk.model.node_scope[id(node)] = walk.model.scope


def visit_Lambda(walk: Traversal, node: ast.Lambda) -> None:
    scope = walk.model.push("function")
    for param in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
        scope.bind(param.arg)


def visit_comprehension_scope(walk: Traversal, node: ast.AST) -> None:
    walk.model.push("comprehension")


def visit_NamedExpr(walk: Traversal, node: ast.NamedExpr) -> None:
    scope = walk.model.scope
    while scope.kind == "comprehension" and scope.parent is not None:
        scope = scope.parent  # a walrus in a comprehension binds in the enclosing scope
    scope.bind(node.target.id)
    bind(walk.model, node.target, Binding("expr", node.value, node))


def visit_comprehension(walk: Traversal, node: ast.comprehension) -> None:
    walk.model.bind_target(node.target)
    bind(walk.model, node.target, Binding("elem", node.iter, node.target))


def visit_Attribute(walk: Traversal, node: ast.Attribute) -> None:
    if node.attr == "value" and node.value.__class__ is ast.Call:
        walk.model.valued_calls.add(id(node.value))


def visit_BinOp(walk: Traversal, node: ast.BinOp) -> None:
    if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        walk.model.binops.append(node)


def visit_keyword(walk: Traversal, node: ast.keyword) -> None:
    if node.arg is not None and node.arg != "dtype":
        walk.model.mark_target(node.value, node, node.arg)


def visit_Call(walk: Traversal, node: ast.Call) -> None:
    func = node.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    last = attr_name(func)
    receiver = func.value if isinstance(func, ast.Attribute) else None
    args = positional(node)

    if receiver is not None and method in ("append", "extend", "insert", "add"):
        if args:
            how = "elem-of" if method == "extend" else "expr"
            walk.model.add(walk.model.adds, walk.model.key_of(receiver), Binding(how, args[-1], node))
    if receiver is not None and method == "copy_" and args:
        walk.model.add(walk.model.stores, walk.model.alias_key(receiver), Binding("seq", args[0], node))
    if receiver is not None and method == "fill_" and args:
        walk.model.add(walk.model.stores, walk.model.alias_key(receiver), Binding("expr", args[0], node))
        walk.model.scalar_writes.append(ScalarWrite(func, receiver, args[0], "fill_"))
    if node.args or node.keywords:
        walk.model.calls.append(node)
    raising = walk.raises > 0
    if receiver is not None and method in CAST_METHODS:
        walk.pending_calls.append((node, walk.model.scope, raising))
        return
    if last is None:  # `kernel[grid](table, tl.int64)`: only the element-type consumer check applies
        if any(attr_name(a) in ELEMENT_TYPE_NAMES for a in (*node.args, *(k.value for k in node.keywords))):
            walk.pending_calls.append((node, walk.model.scope, raising))
        return
    if last in CREATION_LAST_NAMES or last in walk.model.options.buffer_factories or last in NEW_METHODS:
        walk.pending_calls.append((node, walk.model.scope, raising))
    elif (
        last in UNSAFE_FUNCTION_LAST_NAMES
        or last.startswith("c_")
        or last in ("int64", "intp", "longlong", "int_", "int32")
        or last in FOLLOWED_COLLECTIVES
        or (isinstance(func, ast.Name) and (func.id[:1].isupper() or func.id == "cls" or bool(node.keywords)))
        or (isinstance(func, ast.Attribute) and func.attr[:1].isupper() and bool(node.args))  # `mod.Cls(x, y)`
        or any(attr_name(a) in ELEMENT_TYPE_NAMES for a in (*node.args, *(k.value for k in node.keywords)))
    ):
        walk.pending_calls.append((node, walk.model.scope, raising))


def leave_scope(walk: Traversal, node: ast.AST) -> None:
    """Leaving a lambda or a comprehension: back to the enclosing scope."""
    walk.model.pop()
