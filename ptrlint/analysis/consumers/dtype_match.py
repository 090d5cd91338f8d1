"""Readers that require the table's dtype to match another tensor's (issue 55).

torch refuses to mix uint64 with int64 in several places a pointer table goes: an index store
(``dest[slots] = table`` is ``index_put``: "Index put requires the source and destination dtypes
match"), ``index_copy_``, ``masked_scatter_``, ``scatter_`` and ``put_`` (the source must have
``self``'s dtype), and ``torch.cat``/``stack``/``where`` (uint64 does not promote with int64). A table
that meets one of these beside an int64 tensor must keep its int64 dtype, so its fix is the
bit-preserving one. A table stored into a Python dict or list is not copied: the container is
followed to where it is read or unpacked.
"""

from __future__ import annotations

import ast

from ..semantic.syntax import is_slice_subscript
from .consumer_parts import ConsumersPart
from .uses import COMBINING_FUNCTIONS, Trail, Use, UseKind

# Calls that build a Python dict or list (a table stored into one is held, not copied).
CONTAINER_CONSTRUCTORS = frozenset(
    {"builtins.dict", "builtins.list", "collections.defaultdict", "collections.OrderedDict"}
)
_UNSIGNED = ("torch.uint64", "numpy.uint64")


def _short(expr: ast.AST, fallback: str = "another buffer") -> str:
    text = ast.unparse(expr)
    return text if len(text) < 40 else fallback


class DtypeMatch(ConsumersPart):
    """Stores, methods and combinations that require the table to share another tensor's dtype."""

    def stored_into(self, target: ast.Subscript, node: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        """``dest[...] = table``. Into a Python dict or list the table is held (the container is
        followed); by slice, or into a numpy array, it is copied and converted; by an index tensor or
        list it is torch's ``index_put``, which requires the two dtypes to match, so the table keeps its
        dtype unless ``dest`` is known to be uint64."""
        if self._python_container(target.value):
            return self.search.container_uses(target.value, trail, visited)
        if trail.numpy or is_slice_subscript(target) or isinstance(target.slice, ast.Constant):
            return [Use(UseKind.READY, node, "copied into another buffer")]
        if self.facts.tensors.is_signed_numpy_array(target.value) or self._unsigned(target.value):
            return [Use(UseKind.READY, node, "copied into another buffer")]
        return [
            Use(
                UseKind.INT64,
                node,
                f"stored by index into `{_short(target.value)}`, whose dtype must match (torch's index_put)",
                trail.after,
            )
        ]

    def source_of(self, call: ast.Call, func: ast.Attribute, after: bool) -> Use:
        """``dest.index_copy_(dim, index, table)`` and the like: the source must have ``dest``'s dtype."""
        receiver = _short(func.value)
        return Use(
            UseKind.INT64,
            call,
            f"the source of `{receiver}.{func.attr}()`, whose dtype must match `{receiver}`'s (torch requires it)",
            after,
        )

    def combined_with(self, call: ast.Call, expr: ast.AST, qnames: set[str]) -> str | None:
        """Another tensor a combining function (``torch.cat``, ``torch.where``) puts beside the table,
        whose dtype the table must share: the first other element of the list, or ``where``'s other
        operand (a constant, or the same table again, is no partner)."""
        if not qnames & COMBINING_FUNCTIONS:
            return None
        mine = self.model.alias_key(expr) if isinstance(expr, ast.expr) else None
        root = self.facts.root(mine) if mine is not None else None
        if "torch.where" in qnames:
            others = [a for a in call.args[1:3] if a is not expr]
        else:
            container = call.args[0] if call.args else None
            if not isinstance(container, (ast.List, ast.Tuple)):
                return None
            others = [e for e in container.elts if e is not expr]
        for other in others:
            if isinstance(other, ast.Constant):
                continue
            key = self.model.alias_key(other)
            if key is not None and root is not None and self.facts.root(key) == root:
                continue
            return _short(other)
        return None

    def _unsigned(self, dest: ast.expr) -> bool:
        """``dest`` is a buffer this module creates with a uint64 dtype."""
        key = self.model.alias_key(dest)
        if key is None:
            return False
        root = self.facts.root(key)
        creations = [
            self.model.creation_by_id[k.call]
            for k in self.facts.stored.get(root, [])
            if k.call in self.model.creation_by_id
        ]
        return bool(creations) and all(
            c.dtype is not None and self.model.types.dtype_qname(c.dtype) in _UNSIGNED for c in creations
        )

    def _python_container(self, dest: ast.expr) -> bool:
        """``dest`` is bound only to Python dicts or lists (a literal, a comprehension, ``dict()``)."""
        key = self.model.key_of(dest)
        bindings = self.model.bindings.get(key, []) if key is not None else []
        return bool(bindings) and all(b.how == "expr" and self._container_expr(b.expr) for b in bindings)

    def _container_expr(self, expr: ast.expr) -> bool:
        if isinstance(expr, (ast.Dict, ast.List, ast.DictComp, ast.ListComp)):
            return True
        return (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, (ast.Name, ast.Attribute))
            and bool(self.model.qualified_names(expr.func) & CONTAINER_CONSTRUCTORS)
        )
