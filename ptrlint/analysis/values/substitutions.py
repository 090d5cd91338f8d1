"""Factory wrappers that substitute a signed dtype for the unsigned one their callers ask for
(analysis/semantic/factories.py): the buffers they make for pointer tables are signed. Each substitution
is reported once, where it is written, with the evidence of the callers whose tables it makes:
the calls of this module, and (through the project index) those of other modules, which their
summaries record as requests (``external_writes`` of ``pkg.mod.factory.()``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..semantic.calls import unsigned64
from ..semantic.factories import factory_signature
from ..semantic.records import Creation, FunctionNode, NameKey
from .lattice import Evidence, Location, Value

if TYPE_CHECKING:
    from .facts import ModuleFacts

REQUEST = "()"  # the pseudo attribute under which summaries record requests of a factory


@dataclass(frozen=True)
class Substitution:
    function: FunctionNode
    dtype: ast.expr  # the signed dtype put in place of the requested one
    evidence: Evidence  # the callers whose pointer tables it makes signed


def asks_unsigned(facts: ModuleFacts, creation: Creation) -> bool:
    """The call asks for an unsigned 64-bit dtype (what a substituting factory replaces)."""
    return creation.dtype is not None and unsigned64(facts.model, creation.dtype)


def substitutions(facts: ModuleFacts) -> Iterator[Substitution]:
    model = facts.model
    callers: dict[int, list[Creation]] = {}
    for creation in model.creations:
        if creation.qname.startswith("factory:") and creation.factory is None and creation.substitutes:
            function = model.types.function_called(creation.call.func)
            if function is not None:
                callers.setdefault(id(function), []).append(creation)
    value: ast.expr | Value | None  # a patch's replacement, then a caller's pointer-holding value
    for (
        target,
        value,
    ) in model.patches:  # `torch.empty = _empty`: this module's `torch.empty(...)` calls are its callers
        key = model.name_key(value) if isinstance(value, ast.Name) else None
        function = model.functions.get(key) if isinstance(key, NameKey) else None
        patched = model.qualified_names(target)
        if function is not None and patched:
            callers.setdefault(id(function), []).extend(
                cr for cr in model.creations if cr.qname in patched and cr.call.func is not value
            )
    for key, function in model.functions.items():
        if key.scope != id(model.module_scope):
            continue
        found = factory_signature(model, function)
        if found is None or found[1] is None:
            continue
        evidence: list[tuple[ast.AST | Location, str]] = []
        for creation in callers.get(id(function), []):
            value = facts.pointer_holding(creation)
            if value is not None and asks_unsigned(facts, creation):
                evidence.append(
                    (
                        creation.call,
                        f"asks for `{creation.dtype and ast.unparse(creation.dtype)}` "
                        f"for {_target(creation)}, which holds addresses",
                    )
                )
                evidence.extend(value.evidence[:2])
        if facts.view is not None and model.context.module:
            qualname = f"{model.context.module}.{function.name}"
            for value in facts.view.external_writes(qualname, REQUEST):
                evidence.extend(value.evidence[:3])
        if evidence:
            yield Substitution(function, found[1], tuple(evidence[:6]))


def _target(creation: Creation) -> str:
    return f"`{creation.target_name}`" if creation.target_name else "a table"
