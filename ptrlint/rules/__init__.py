"""The rule registry: every rule module of this package, found by listing it. A rule is a ``Rule``
subclass with a ``code``, defined in a module of its own here (``_``-prefixed modules are shared parts,
``base`` the protocol); adding the module is all it takes (``ptrlint/catalog.py`` notices a new or
changed rule by the package's fingerprint). Codes are stable; the registry test checks the invariants."""

from __future__ import annotations

import importlib
import pkgutil

from .base import Rule


def _discover() -> tuple[type[Rule], ...]:
    found: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, Rule)
            and value.__module__ == module.__name__
            and isinstance(getattr(value, "code", None), str)
        )
    return tuple(sorted(found, key=lambda rule: rule.code))


ALL_RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule"]
