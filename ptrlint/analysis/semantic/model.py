"""The semantic model of one module: scopes, bindings and keys, built by the one traversal.

:class:`SemanticModel` holds every table the traversal fills (bindings of names and ``self``
attributes, appends, element stores, creations, casts, ctypes calls, unsafe uses, calls) and
answers the questions about names: which scope a name resolves in, what it imports, which storage
location (:data:`~.records.Key`) an expression denotes, what a value aliases. Names are recorded
with *provisional* keys (the scope where the name is used) because a name's binding scope is only
known once the whole function has been seen; :meth:`SemanticModel.rekey` maps them to canonical
keys. Which class an expression is an instance of is :mod:`.types`' question (``model.types``);
how an assignment is taken apart into bindings is :mod:`.assignments`'.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, TypeVar, cast

from ...names import PASSTHROUGH_METHODS, VIEW_ATTRIBUTES, numpy_twin
from ..boundary import ModuleContext
from ..options import AnalysisOptions
from .records import (
    Binding,
    Cast,
    Creation,
    CreationKey,
    CtypesCall,
    FunctionNode,
    Key,
    MemberKey,
    NameKey,
    ObjectAttributeKey,
    PendingNameKey,
    ScalarWrite,
    UnionFind,
)
from .scopes import LiteScope
from .syntax import CREATION_LAST_NAMES, attr_name, entry_name, is_slice_subscript, raw_view_of
from .types import TypeResolver

_T = TypeVar("_T")


class SemanticModel:
    """Tables and name resolution of one module (see the module docstring)."""

    def __init__(self, options: AnalysisOptions, context: ModuleContext | None = None) -> None:
        self.options = options
        self.context = context or ModuleContext()
        self.view = self.context.view
        self.class_qualnames: dict[int, str] = {}  # id(class) -> "Outer.Inner" (module-level classes and their nests)
        self.alias_classes = UnionFind()
        self.bindings: dict[Key, list[Binding]] = {}
        self.adds: dict[Key, list[Binding]] = {}  # append/extend/insert/+=
        self.stores: dict[Key, list[Binding]] = {}  # setitem, copy_, fill_ (flow evidence)
        self.annotations: dict[Key, list[ast.expr]] = {}
        self.creations: list[Creation] = []
        self.casts: list[Cast] = []
        self.ctypes_calls: list[CtypesCall] = []
        self.scalar_writes: list[ScalarWrite] = []
        self.returns: dict[int, list[ast.expr]] = {}
        self.self_params: dict[Key, int] = {}  # canonical key of a method's first parameter -> class id
        self.cls_params: dict[Key, int] = {}  # canonical key of a classmethod's first parameter -> class id
        self.class_methods: dict[int, dict[str, FunctionNode]] = {}
        self.class_names: dict[Key, int] = {}  # canonical key of a class name -> class id
        self.functions: dict[NameKey, FunctionNode] = {}  # module functions and methods, by their name
        self.function_scopes: dict[int, int] = {}  # id(function) -> id of its scope (parameter keys)
        self.creation_by_id: dict[int, Creation] = {}
        self.targets: dict[int, tuple[str, ast.AST]] = {}  # creation call id -> (target name, node)
        self.module_scope = LiteScope("module", None)
        self.node_scope: dict[int, LiteScope] = {}  # id(Name node) -> scope it appears in
        self.finalized = False
        self.scope = self.module_scope
        self.scopes: dict[int, LiteScope] = {id(self.module_scope): self.module_scope}
        self.calls: list[ast.Call] = []  # calls with arguments: candidates for parameter flow
        self.binops: list[ast.BinOp] = []  # `+`, `-`, `*`: candidates for PTR007
        self.gathers: list[tuple[str, ast.expr, ast.expr, ast.Call]] = []  # (collective, out, source, call)
        self.valued_calls: set[int] = set()  # ids of calls whose `.value` is read (`c_int64(p).value`)
        self.narrowed: set[int] = set()  # ids of expressions converted at once to a narrow dtype
        self.class_nodes: dict[int, ast.ClassDef] = {}
        self.method_class: dict[int, int] = {}  # id(method) -> id(class)
        self.method_kinds: dict[int, str] = {}  # id(method) -> "instance" | "class" | "static"
        self.module_constants: dict[str, ast.expr] = {}  # module-level NAME = <expr> bound once
        self.patches: list[tuple[ast.Attribute, ast.expr]] = []  # module-level `torch.empty = _empty`
        self.imports_numpy = False
        self.edges: list[tuple[Key, Key]] = []  # aliasing recorded during the traversal
        # (location, creation): a creation stored into a name or attribute. Directional: what is written
        # through the location reaches the creation, but two creations stored into one location (a
        # dataclass field filled all over the module, a name reassigned) never alias each other.
        self._pending: dict[tuple[int, str], PendingNameKey] = {}  # (id of the read scope, name) -> its key
        self._resolved: dict[PendingNameKey, NameKey] = {}  # once the walk is done
        self.flows: list[tuple[Key, CreationKey]] = []  # (location, creation stored in it)
        self.type_memo: dict[Key, int | str | None] | None = None
        self.types = TypeResolver(self)

    def release(self) -> None:
        """Drop the type resolver, which points back at this model (see ``ModuleFacts.release``)."""
        del self.types

    def push(self, kind: str) -> LiteScope:
        scope = LiteScope(kind, self.scope)
        self.scopes[id(scope)] = scope
        self.scope = scope
        return scope

    def pop(self, node: ast.AST | None = None) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent

    def bind_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.scope.bind(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind_target(element)
        elif isinstance(target, ast.Starred):
            self.bind_target(target.value)

    def scope_of(self, node: ast.AST) -> LiteScope:
        return self.node_scope.get(id(node), self.scope if not self.finalized else self.module_scope)

    def qualified_names(self, node: ast.AST) -> set[str]:
        """Import/builtin qualified names of a Name or dotted Attribute (empty for locals)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return set()
        scope = self.scope_of(node)
        base = scope.qualified(node.id)
        if base is None:
            alias = self.module_constants.get(node.id)  # `_empty = torch.empty` at module level: its alias
            if (
                alias is None
                or not isinstance(alias, (ast.Name, ast.Attribute))
                or scope.resolve(node.id) is not self.module_scope
            ):
                return set()
            return (
                {".".join([q, *reversed(parts)]) for q in self.qualified_names(alias)} if alias is not node else set()
            )
        qname = ".".join([base, *reversed(parts)])
        twin = numpy_twin(qname)  # `cupy.uintp` is numpy's `uintp`: cupy mirrors numpy's array API
        return {qname, twin} if twin is not None else {qname}

    def name_key(self, node: ast.Name) -> NameKey | PendingNameKey:
        # One key object per read scope and name, built once: the model asks for hundreds of thousands
        # on a large module, and a key costs ten times a plain tuple to build (records.py).
        read = (id(self.scope_of(node)), node.id)
        pending = self._pending.get(read)
        if pending is None:
            pending = self._pending[read] = PendingNameKey(*read)
        return cast(NameKey, self.canonical(pending)) if self.finalized else pending  # a pending key resolves

    def resolved(self, pending: PendingNameKey) -> NameKey:
        """The key of a name once every binding is known: the scope that binds it."""
        key = self._resolved.get(pending)
        if key is None:
            key = self._resolved[pending] = NameKey(id(self.scopes[pending.scope].resolve(pending.name)), pending.name)
        return key

    def key_of(self, node: ast.AST) -> Key | None:
        if isinstance(node, ast.Name):
            return self.name_key(node)
        if isinstance(node, ast.Attribute):
            base = self.key_of(node.value)
            if base is None:
                return None
            return self.attribute_key(base, node.attr)
        if isinstance(node, ast.Call) and self.is_creation_call(node):
            return CreationKey(id(node))
        entry = entry_name(node)
        if entry is not None:  # `d["ptrs"]`: one entry of a dict, a location of its own
            base = self.key_of(node.value)  # type: ignore[attr-defined]
            return self.attribute_key(base, entry) if base is not None else None
        return None

    def attribute_key(self, base: Key, attr: str) -> Key:
        """``self.x`` and ``obj.x`` where ``obj`` is known to be an instance of a module class share a key."""
        class_id: int | str | None = self.self_params.get(base)
        if class_id is None and self.type_memo is not None:
            class_id = self.types.type_of(base)
        if class_id is not None:
            return MemberKey(class_id, attr)
        return ObjectAttributeKey(base, attr)

    def canonical(self, key: Key) -> Key:
        if isinstance(key, PendingNameKey):
            return self.resolved(key)
        if isinstance(key, ObjectAttributeKey):
            return self.attribute_key(self.canonical(key.base), key.attr)
        return key

    def is_creation_call(self, node: ast.Call) -> bool:
        if self.finalized:
            return id(node) in self.creation_by_id
        last = attr_name(node.func)  # by name until imports are known; finalize() decides
        return last in CREATION_LAST_NAMES or last in self.options.buffer_factories

    def alias_root(self, expr: ast.expr, through_index: bool = False) -> ast.expr:
        """Strip views, slices and value-preserving calls: ``self.buf[:n].numpy()`` -> ``self.buf``."""
        while True:
            if (
                isinstance(expr, ast.Subscript)
                and entry_name(expr) is None
                and (through_index or is_slice_subscript(expr))
            ):
                expr = expr.value
            elif isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
                expr = expr.value
            elif (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr in PASSTHROUGH_METHODS
                and expr.func.attr not in ("tolist", "item")
            ):
                expr = expr.func.value
            elif isinstance(expr, ast.Call) and raw_view_of(expr) is not None:
                expr = raw_view_of(expr)  # type: ignore[assignment]
            elif (
                isinstance(expr, ast.Call)
                and len(expr.args) == 1
                and not expr.keywords
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr == "from_numpy"
                and "torch.from_numpy" in self.qualified_names(expr.func)
            ):
                expr = expr.args[0]  # `torch.from_numpy(a)` shares `a`'s memory
            else:
                return expr

    def alias_key(self, expr: ast.expr, through_index: bool = False) -> Key | None:
        return self.key_of(self.alias_root(expr, through_index))

    @staticmethod
    def add(table: dict[Key, list[_T]], key: Key | None, item: _T) -> None:
        if key is not None:
            table.setdefault(key, []).append(item)

    def mark_target(self, value: ast.expr, target: ast.AST, name: str | None = None) -> None:
        """Remember the assigned name of the creation call inside ``value`` (name evidence)."""
        inner = self.alias_root(value)
        if not isinstance(inner, ast.Call):
            return
        if name is None:
            if isinstance(target, ast.Name):
                name = target.id
            elif isinstance(target, ast.Attribute):
                name = target.attr
            else:
                return
        self.targets.setdefault(id(inner), (name, target))

    def link(self, location: Key, source: Key | None) -> None:
        if source is None:
            return
        if isinstance(source, CreationKey):
            self.flows.append((location, source))
        else:
            self.edges.append((location, source))

    def rekey(self, canonical: Callable[[Key], Key]) -> bool:
        changed = False
        for table in (self.bindings, self.adds, self.stores, self.annotations):
            rekeyed: dict[Key, list[Any]] = {}  # Binding or ast.expr items, as the table holds
            for key, items in table.items():
                new = canonical(key)
                changed = changed or new != key
                rekeyed.setdefault(new, []).extend(items)
            table.clear()
            table.update(rekeyed)
        edges = [(canonical(a), canonical(b)) for a, b in self.edges]
        flows = [(canonical(a), b) for a, b in self.flows]
        changed = changed or edges != self.edges or flows != self.flows
        self.edges, self.flows = edges, flows
        return changed

    def settle(self) -> None:
        """After the traversal: type attribute keys (iterating, since types come from bindings that
        may themselves be such attributes), then build the alias classes."""
        for _ in range(4):
            self.type_memo = {}
            if not self.rekey(self.canonical):
                break
        self.type_memo = {}
        for a, b in self.edges:
            self.alias_classes.union(a, b)
        for key in (*self.bindings, *self.adds, *self.stores, *(loc for loc, _ in self.flows)):
            self.alias_classes.find(key)
