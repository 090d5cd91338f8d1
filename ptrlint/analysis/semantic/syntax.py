"""Small helpers over ast shapes, and the call-name tables the collection and the call
classification share. Pure functions of a node; no state."""

from __future__ import annotations

import ast

from ...names import CREATION_CALLS, UNSAFE_FUNCTIONS

# Fields that never hold child nodes (identifiers, numbers, flags, a Constant's value, expression contexts).
NOT_CHILDREN = frozenset(
    {
        "id",
        "attr",
        "name",
        "arg",
        "asname",
        "module",
        "level",
        "kind",
        "type_comment",
        "is_async",
        "conversion",
        "simple",
        "ctx",
    }
)


class _ChildFields(dict[type, tuple[str, ...]]):
    """Node class -> the fields that may hold child nodes, derived on first lookup."""

    def __missing__(self, cls: type) -> tuple[str, ...]:
        fields: tuple[str, ...] = () if cls is ast.Constant else tuple(f for f in cls._fields if f not in NOT_CHILDREN)  # type: ignore[attr-defined]
        self[cls] = fields
        return fields


CHILD_FIELDS = _ChildFields()


def attr_name(node: ast.AST) -> str | None:
    """The last name of a Name or Attribute (``torch.zeros`` -> "zeros")."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def string_value(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def entry_name(node: ast.AST) -> str | None:
    """``d["ptrs"]``: a subscript by a constant string names an entry of its own (``"[ptrs]"``), a
    storage location apart from the other entries of the same dict, never an element of it."""
    if isinstance(node, ast.Subscript):
        key = string_value(node.slice)
        if key is not None:
            return f"[{key}]"
    return None


def ctypes_fields(node: ast.ClassDef) -> dict[str, ast.expr]:
    """``_fields_ = [("src", c_int64), ...]`` in a class body: {name: type}, in order."""
    fields: dict[str, ast.expr] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and any(attr_name(t) == "_fields_" for t in stmt.targets):
            value = stmt.value
            if isinstance(value, (ast.List, ast.Tuple)):
                for item in value.elts:
                    if isinstance(item, (ast.Tuple, ast.List)) and len(item.elts) >= 2:
                        name = string_value(item.elts[0])
                        if name is not None:
                            fields[name] = item.elts[1]
    return fields


def is_slice_subscript(node: ast.Subscript) -> bool:
    index = node.slice
    if isinstance(index, ast.Slice):
        return True
    return isinstance(index, ast.Tuple) and bool(index.elts) and all(isinstance(e, ast.Slice) for e in index.elts)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def positional(call: ast.Call) -> list[ast.expr]:
    return [a for a in call.args if not isinstance(a, ast.Starred)]


def bind_arguments(
    function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, bound_first: bool = False
) -> list[tuple[str, ast.expr]]:
    """(parameter name, argument) pairs of a call of ``function``; ``bound_first``: its first parameter
    (``self``/``cls``) is bound by the call."""
    args = function.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if bound_first and params:
        params = params[1:]
    pairs = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
    accepted = set(params) | {a.arg for a in args.kwonlyargs}
    pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in accepted]
    return pairs


def unstarred(node: ast.expr) -> ast.expr:
    return node.value if isinstance(node, ast.Starred) else node


def annotation_expr(annotation: ast.AST) -> ast.AST | None:
    """An annotation as an expression: a string annotation (``"torch.Tensor"``) parsed, None if it
    does not parse."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    return annotation


def dotted(node: ast.AST) -> str:
    """``a.b.c`` as text for Name/Attribute chains; "" otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def raw_view_of(call: ast.Call) -> ast.expr | None:
    """``ctypes.cast(buf.data_ptr(), POINTER(c_int64))`` is a raw view of ``buf``: writes through it land in ``buf``."""
    if attr_name(call.func) != "cast" or not call.args:
        return None
    first = call.args[0]
    if (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "data_ptr"
        and not first.args
        and not first.keywords
    ):
        return first.func.value
    return None


CREATION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in CREATION_CALLS)
UNSAFE_FUNCTION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in UNSAFE_FUNCTIONS)
LIKE_SOURCE_KEYWORDS = ("input", "a", "prototype")
RAISES_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})
