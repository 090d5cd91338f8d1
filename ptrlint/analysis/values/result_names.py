"""Name evidence of what a function returns, for its callers in this module and, through the
project summaries, in others: a returned variable named like an address table, a return
annotation naming an address type, or a docstring whose "Returns" says addresses (a getter's own
name is read where it is called, for every callee alike).
Used only where nothing is known of the returned values themselves (issue 42)."""

from __future__ import annotations

import ast
import re
from typing import Callable

from ...pointer_names import NamePatterns
from ..semantic.records import FunctionNode
from ..semantic.syntax import attr_name
from .lattice import Kind, Origin, Value


def named_result(
    names: NamePatterns,
    function: FunctionNode,
    returned: list[ast.expr],
    index: int | None,
    int_alias: Callable[[str], bool],
) -> Value | None:
    """Name evidence of what a function returns, for its callers (in this module and, through the
    summaries, in others): a returned variable named like an address table (``return pointers``), a
    return annotation naming an address type, or a docstring whose "Returns" says addresses."""
    if any(_not_an_address(ret) for ret in returned) or _not_an_address(function.returns):
        return None  # generated code, a message, a flag: whatever the names say
    for ret in returned:
        name = attr_name(ret) if isinstance(ret, (ast.Name, ast.Attribute)) else None
        if name is not None and names.is_pointer_name(name):
            table = names.is_table_name(name)
            return Value(
                Kind.SEQ if table else Kind.SCALAR,
                Origin.NAMED,
                ((ret, f"returns `{name}`, named like {'an address table' if table else 'an address'}"),),
                table_name=table,
            )
    if index is not None:
        return None  # a getter's own name is read where it is called (analysis/values/transfer.py), as for any callee
    annotated = annotated_addresses(names, function.returns, int_alias)
    if annotated is not None:
        return Value(
            Kind.SEQ if annotated else Kind.SCALAR,
            Origin.NAMED,
            ((returned[0], f"`{function.name}()` is annotated as returning addresses"),),
            table_name=annotated,
        )
    said = _returns_addresses(ast.get_docstring(function, clean=False) or "")
    if said is not None:
        return Value(
            Kind.SEQ if said else Kind.SCALAR,
            Origin.NAMED,
            ((returned[0], f"the docstring of `{function.name}()` says it returns addresses"),),
            table_name=said,
        )
    return None


def annotated_addresses(
    names: NamePatterns, annotation: ast.expr | None, int_alias: Callable[[str], bool]
) -> bool | None:
    """A return annotation naming an integer address type of the module (``DevicePtr = NewType("DevicePtr",
    int)``; ``-> DevicePtr``, ``-> list[DevicePtr]``): True for a container of them, False for one, None
    otherwise. A DSL's pointer class (``cute.Pointer``, a kernel-side object) is not an address."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in _CONTAINERS:
        inner = annotation.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return True if any(annotated_addresses(names, item, int_alias) is not None for item in items) else None
    name = annotation.id if isinstance(annotation, ast.Name) else None
    if name is None or not int_alias(name):
        return None
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    if names.is_pointer_name(snake):
        return names.is_table_name(snake)
    return None


_CONTAINERS = frozenset({"list", "List", "tuple", "Tuple", "Sequence", "MutableSequence", "Iterable", "set", "Set"})
_RETURNS = re.compile(r"\breturns?\b([^.;:]*)", re.IGNORECASE)
_ADDRESS_WORDS = re.compile(r"\b(address(?:es)?|pointers?)\b", re.IGNORECASE)
# before the address word: what the result is not (a count, a flag), or a clause about something else
_NOT_ADDRESSES = re.compile(
    r"\b(?:number|count|size|offsets?|index|indices|length|whether|strides?|bytes|true|false"
    r"|about|for|on|that|which|with|containing|if|when|whose|from|into|by)\b",
    re.IGNORECASE,
)
_MODIFIES = re.compile(r"[ \t]+(?!to\b|of\b|in\b|at\b|as\b|and\b|or\b)[A-Za-z_]")  # `pointer args`: an adjective


def _not_an_address(node: ast.expr | None) -> bool:
    """A returned expression or return annotation that is not an integer: a string, an f-string, a
    flag, ``None``; ``str``/``bool``/``None`` annotations."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant):
        return node.value is None or isinstance(node.value, (str, bool, bytes))
    if isinstance(node, ast.Name):
        return node.id in ("str", "bool", "bytes")
    return False


def _returns_addresses(doc: str) -> bool | None:
    """Whether a docstring's "Returns ..." clause says the result is addresses: True for many
    (``addresses``, ``pointers``), False for one, None when it does not say so."""
    for clause in _RETURNS.finditer(doc):
        text = clause.group(1)
        word = _ADDRESS_WORDS.search(text)
        if word is None or _NOT_ADDRESSES.search(text[: word.start()]) or _MODIFIES.match(text, word.end()):
            continue  # "the number of pointers", "information about pointers", "pointer args"
        return word.group(1).lower() in ("addresses", "pointers")
    return None
