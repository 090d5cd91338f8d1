"""What a dict holds: its entries (``d["ptrs"]``) and the comprehensions bound to it, for a read of one
entry under a computed key (``ptrs[name]``), of its values or of its keys."""

from __future__ import annotations

import ast
from typing import Protocol

from ..semantic.model import SemanticModel
from ..semantic.records import Key, ObjectAttributeKey
from .fixpoint import Evaluator
from .lattice import Origin, Value, strongest


class KeyValues(Protocol):
    """What a dict's entries are read through (:class:`~.flow.Flow`)."""

    def root(self, key: Key) -> Key: ...

    def key_value(self, key: Key | None) -> Value | None: ...


class Dicts:
    """The dicts of one module (``facts.flow.dicts``)."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator, flow: KeyValues) -> None:
        self.model, self.evaluator, self.flow = model, evaluator, flow
        self._entries: dict[Key, list[Key]] | None = None  # dict root -> its entry keys

    def entries(self, expr: ast.AST) -> list[Key]:
        """The entry keys (``d["ptrs"]``, ``d["lens"]``) of the dict ``expr`` evaluates to."""
        if self._entries is None:
            self._entries = {}
            model = self.model
            for table in (model.bindings, model.adds, model.stores):
                for key in table:
                    if isinstance(key, ObjectAttributeKey) and key.attr.startswith("["):
                        self._entries.setdefault(self.flow.root(key.base), []).append(key)
        found = self.model.key_of(expr)
        return self._entries.get(self.flow.root(found), []) if found is not None else []

    def dict_part(self, expr: ast.AST, keys: bool) -> Value | None:
        """The values (or keys) of the dict ``expr`` holds, joined: its entries (``d["ptrs"]``) and the
        comprehensions bound to it (``{name: t.data_ptr() for name, t in ...}``)."""
        values: list[Value | None] = [] if keys else [self.flow.key_value(e) for e in self.entries(expr)]
        values += [self.evaluator.value(d.key if keys else d.value) for d in self.comprehensions(expr)]
        key = self.model.key_of(expr)
        for binding in self.model.bindings.get(key, []) if key is not None and keys else []:
            if binding.how == "expr" and isinstance(binding.expr, ast.Dict):
                values.extend(self.evaluator.value(k) for k in binding.expr.keys if k is not None)
        return strongest(values)

    def comprehensions(self, expr: ast.AST) -> list[ast.DictComp]:
        key = self.model.key_of(expr)
        return [
            b.expr
            for b in (self.model.bindings.get(key, []) if key is not None else [])
            if b.how == "expr" and isinstance(b.expr, ast.DictComp)
        ]

    def any_entry(self, expr: ast.AST) -> Value | None:
        """Any one of the entries of the dict ``expr`` (``ptrs[name]`` with a computed key)."""
        values = [self.flow.key_value(e) for e in self.entries(expr)]
        values += [self.evaluator.value(d.value) for d in self.comprehensions(expr)]
        best = strongest(values)
        if best is not None and best.origin is Origin.INDEX and any(v is None for v in values):
            return None  # contrary evidence only when every entry is an index
        return best
