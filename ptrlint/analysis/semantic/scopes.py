"""A lightweight model of Python scopes, built during the single fact-collecting traversal (on ast).

libcst's ScopeProvider answers the same questions (which scope binds a name, what an imported
name's qualified name is) but costs about three times the parse; this model costs a set insert
per binding. Names resolve the way Python resolves them: a name assigned anywhere in a function
is local to it (so resolution waits until the traversal has seen every binding), class scopes
are invisible to the functions nested in them, and ``global``/``nonlocal`` are honoured.
"""

from __future__ import annotations

import builtins

_BUILTINS = frozenset(dir(builtins))


class LiteScope:
    __slots__ = ("kind", "parent", "assigned", "imports", "globals", "nonlocals")

    def __init__(self, kind: str, parent: LiteScope | None) -> None:
        self.kind = kind  # "module" | "class" | "function" | "comprehension"
        self.parent = parent
        self.assigned: set[str] = set()
        self.imports: dict[str, str] = {}  # local name -> qualified name of what was imported
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()

    @property
    def module(self) -> LiteScope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def bind(self, name: str) -> None:
        (self.module if name in self.globals else self).assigned.add(name)

    def bind_import(self, name: str, qualified: str) -> None:
        target = self.module if name in self.globals else self
        target.assigned.add(name)
        target.imports[name] = qualified

    def resolve(self, name: str) -> LiteScope:
        """The scope whose binding ``name`` refers to here (the module when nothing binds it)."""
        if name in self.globals:
            return self.module
        if name in self.assigned and name not in self.nonlocals:
            return self
        scope = self.parent
        while scope is not None:
            if scope.kind == "class":  # class bodies are not enclosing scopes for nested code
                scope = scope.parent
                continue
            if name in scope.globals:
                return scope.module
            if name in scope.assigned and name not in scope.nonlocals:
                return scope
            scope = scope.parent
        return self.module

    def is_bound(self, name: str) -> bool:
        return name in self.resolve(name).assigned

    def qualified(self, name: str) -> str | None:
        """``torch`` -> "torch", ``i64`` (from torch import int64 as i64) -> "torch.int64",
        ``int`` -> "builtins.int"; None for local names."""
        owner = self.resolve(name)
        if name in owner.imports:
            return owner.imports[name]
        if name not in owner.assigned and name in _BUILTINS:
            return f"builtins.{name}"
        return None


def resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """``from ..x import y`` inside ``module``: the absolute module ``..x`` names."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    target = ".".join([*base, *([name] if name else [])])
    return target or None
