"""ctypes storage typed signed (or narrow) that receives addresses: the slots of PTR006 beyond
``c_int64(p)`` calls.

- pointer views: ``ctypes.cast(a, ctypes.POINTER(ctypes.c_int64))[i] = t.data_ptr()``;
- arrays: ``(ctypes.c_int64 * n).from_address(a)`` (or ``from_buffer``, or ``(c_int64 * n)()``)
  whose elements are assigned addresses, and ``(c_int64 * n)(*ptrs)`` built from them;
- fields of ``ctypes.Structure``/``Union`` classes declared ``c_int64``/``c_long``/... in
  ``_fields_`` that receive addresses (``args.src = p``, ``Args(src=p)``, ``Args(p, ...)``).

Each slot is reported at the element or field *type*, where the fix (``c_uint64``) goes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ...names import CTYPES_NARROW, CTYPES_SIGNED64
from ..semantic.records import MemberKey
from ..semantic.scopes import LiteScope
from ..semantic.syntax import ctypes_fields
from .lattice import Kind, Value

if TYPE_CHECKING:
    from .facts import ModuleFacts

_STRUCTURE_BASES = frozenset(
    {
        "ctypes.Structure",
        "ctypes.Union",
        "ctypes.BigEndianStructure",
        "ctypes.LittleEndianStructure",
        "ctypes.BigEndianUnion",
        "ctypes.LittleEndianUnion",
    }
)
_ARRAY_CONSTRUCTORS = frozenset({"from_address", "from_buffer", "from_buffer_copy"})
MAX_DEPTH = 4
_T = TypeVar("_T")


@dataclass(frozen=True)
class CtypesSlot:
    """A ctypes type (``type_node``) whose storage receives a pointer value."""

    type_node: ast.expr  # `ctypes.c_int64` / `c_int64`: where the fix goes
    ctype: str  # "c_int64"
    what: str  # "ctypes pointer view", "ctypes array", "field `src` of `CopyArgs`"
    value: Value  # the pointer value written (its evidence)
    scope: LiteScope | None
    field: str | None = None  # a struct field: its name (read back as `x.field`)
    owner: int | None = None  # a struct field: the id of its Structure class
    container: ast.AST | None = None  # an array or pointer view: the expression written through


class CtypesSlots:
    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.model = facts.model

    def slots(self) -> Iterator[CtypesSlot]:
        if not any(q == "ctypes" or q.startswith("ctypes.") for q in self.model.module_scope.imports.values()):
            return  # no ctypes type can be named without importing ctypes (at module level, as everyone does)
        seen: set[int] = set()
        for slot in (*self._element_writes(), *self._array_initialisers(), *self._struct_fields()):
            if id(slot.type_node) not in seen:
                seen.add(id(slot.type_node))
                yield slot

    # ----- types -----------------------------------------------------------------------------------
    def ctype_of(self, node: ast.AST) -> str | None:
        """``c_int64`` when ``node`` names a signed or narrow ctypes integer type, else None."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        for qname in self.model.qualified_names(node):
            module, _, name = qname.rpartition(".")
            if module == "ctypes" and (name in CTYPES_SIGNED64 or name in CTYPES_NARROW):
                return name
        return None

    def element_type(self, expr: ast.AST, depth: int = 0) -> ast.expr | None:
        """The element type of ``POINTER(T)`` or of an array type ``T * n`` (through names)."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call) and "ctypes.POINTER" in self._qnames(expr.func) and expr.args:
            return expr.args[0] if self.ctype_of(expr.args[0]) else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            for side in (expr.left, expr.right):
                if self.ctype_of(side):
                    return side
            return None
        return self._through_bindings(expr, lambda e: self.element_type(e, depth + 1))

    def container_type(self, expr: ast.AST, depth: int = 0) -> tuple[ast.expr, str] | None:
        """(element type, kind) of a pointer view or array the expression evaluates to."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            func = expr.func
            if "ctypes.cast" in self._qnames(func) and len(expr.args) >= 2:
                element = self.element_type(expr.args[1])
                return (element, "ctypes pointer view") if element is not None else None
            if isinstance(func, ast.Attribute) and func.attr in _ARRAY_CONSTRUCTORS:
                element = self.element_type(func.value)
                return (element, "ctypes array") if element is not None else None
            element = self.element_type(func)
            return (element, "ctypes array") if element is not None else None
        return self._through_bindings(expr, lambda e: self.container_type(e, depth + 1))

    # ----- writes ----------------------------------------------------------------------------------
    def _element_writes(self) -> Iterator[CtypesSlot]:
        for write in self.model.scalar_writes:
            if write.how != "setitem" or write.in_raises:
                continue
            found = self.container_type(write.tensor)
            value = self._pointer(write.value)
            if found is not None and value is not None:
                yield self._slot(found[0], found[1], value, container=write.tensor)

    def _array_initialisers(self) -> Iterator[CtypesSlot]:
        for call in self.model.calls:  # `(c_int64 * n)(*ptrs)`, `(c_int64 * 2)(a.data_ptr(), b.data_ptr())`
            if isinstance(call.func, ast.Attribute) and call.func.attr in _ARRAY_CONSTRUCTORS:
                continue
            element = self.element_type(call.func) if not isinstance(call.func, ast.Call) else None
            if element is None or not isinstance(call.func, (ast.BinOp, ast.Name, ast.Attribute)):
                continue
            for arg in call.args:
                value = self._pointer(
                    arg.value if isinstance(arg, ast.Starred) else arg, seq=isinstance(arg, ast.Starred)
                )
                if value is not None:
                    yield self._slot(element, "ctypes array", value, container=call)
                    break

    def _struct_fields(self) -> Iterator[CtypesSlot]:
        for class_id, fields in self.struct_fields().items():
            name = self.model.class_nodes[class_id].name
            for field, type_node in fields.items():
                if self.ctype_of(type_node) is None:
                    continue
                value = self.facts.class_value(self.facts.root(MemberKey(class_id, field)), writes_only=False)
                if value is not None and value.is_pointer and value.kind is Kind.SCALAR and value.evidence:
                    yield self._slot(type_node, f"field `{field}` of `{name}`", value, field=field, owner=class_id)

    def struct_fields(self) -> dict[int, dict[str, ast.expr]]:
        """``_fields_`` of the module's ctypes Structure/Union classes: class id -> {field: type}."""
        out: dict[int, dict[str, ast.expr]] = {}
        for class_id, node in self.model.class_nodes.items():
            if not any(self._qnames(base) & _STRUCTURE_BASES for base in node.bases):
                continue
            out[class_id] = ctypes_fields(node)
        return out

    # ----- helpers ---------------------------------------------------------------------------------
    def _pointer(self, expr: ast.AST, seq: bool = False) -> Value | None:
        value = self.facts.kind(expr)
        if value is None or value.kind is not (Kind.SEQ if seq else Kind.SCALAR):
            return None
        return value

    def _slot(
        self,
        type_node: ast.expr,
        what: str,
        value: Value,
        field: str | None = None,
        container: ast.AST | None = None,
        owner: int | None = None,
    ) -> CtypesSlot:
        return CtypesSlot(
            type_node,
            self.ctype_of(type_node) or "",
            what,
            value,
            self.model.scope_of(type_node),
            field,
            owner,
            container,
        )

    def _qnames(self, node: ast.AST) -> set[str]:
        return self.model.qualified_names(node) if isinstance(node, (ast.Name, ast.Attribute)) else set()

    def _through_bindings(self, expr: ast.AST, resolve: Callable[[ast.expr], _T | None]) -> _T | None:
        key = self.model.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if key is None:
            return None
        for binding in self.model.bindings.get(key, []):
            if binding.how == "expr":
                found = resolve(binding.expr)
                if found is not None:
                    return found
        if isinstance(expr, ast.Name):  # a module-level alias (`IntPtr = POINTER(c_int64)`) seen from a function
            bound = self.model.module_constants.get(expr.id)
            if bound is not None and self.model.scope_of(expr).resolve(expr.id) is self.model.module_scope:
                return resolve(bound)
        return None
