"""Shared by PTR001-PTR003: the dtype of a pointer-holding creation call, and its fix."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from ..analysis.facts import Creation
from ..analysis.values import Value
from ..fixes import append_keyword, replace_dtype, spell
from ..model import Intent
from ..names import IMPLICIT_DTYPE_CALLS, DtypeClass, classify_builtin_dtype, classify_qualified_dtype, classify_string_dtype
from .base import Diagnostic, RuleContext


@dataclass(frozen=True)
class DtypeInfo:
    cls: DtypeClass
    library: str | None
    qname: str  # "torch.int64", "builtins.int", or "str:int64"


def classify_dtype(ctx: RuleContext, creation: Creation) -> DtypeInfo | None:
    """The literal dtype of a creation call; None when absent or not a literal (``dtype=dtype``)."""
    dtype = creation.dtype
    if dtype is None:
        return None
    if isinstance(dtype, ast.Constant):
        text = dtype.value
        if not isinstance(text, str):
            return None
        cls = classify_string_dtype(text)
        return DtypeInfo(cls, creation.library or "numpy", f"str:{text}") if cls else None
    if isinstance(dtype, (ast.Name, ast.Attribute)):
        for qname in sorted(ctx.facts.c.qualified_names(dtype)):
            if qname.startswith("builtins."):
                cls = classify_builtin_dtype(qname.rpartition(".")[2])
                if cls is not None and creation.library is not None:
                    return DtypeInfo(cls, creation.library, qname)
                continue
            classified = classify_qualified_dtype(qname)
            if classified is not None:
                cls, library = classified
                if creation.library is not None and creation.library != library:
                    continue  # a numpy dtype in a torch call (or the reverse) is not ours to judge
                return DtypeInfo(cls, library, qname)
    return None


def pointer_creations(ctx: RuleContext) -> Iterator[tuple[Creation, Value]]:
    for creation in ctx.facts.c.creations:
        evidence = ctx.facts.pointer_holding(creation)
        if evidence is not None:
            yield creation, evidence


def dtype_diagnostic(ctx: RuleContext, creation: Creation, info: DtypeInfo, evidence: Value, message: str) -> Diagnostic:
    assert creation.dtype is not None
    dtype = creation.dtype
    library = info.library
    safe, why = ctx.fix_safety(creation)

    def intents() -> list[Intent] | None:
        return replace_dtype(ctx.module, ctx.source, dtype, library, creation.scope, info.qname)

    title = "Use an unsigned 64-bit dtype" + (f" (unsafe: {why})" if not safe else "")
    return Diagnostic(ctx.span(dtype), message, intents, safe, title, evidence.evidence)


def missing_dtype_diagnostic(ctx: RuleContext, creation: Creation, evidence: Value, message: str) -> Diagnostic | None:
    if creation.qname not in IMPLICIT_DTYPE_CALLS or creation.dtype is not None or not creation.has_dtype_slot:
        return None
    call = creation.call
    library = creation.library or "torch"
    safe, why = ctx.fix_safety(creation)

    def intents() -> list[Intent] | None:
        func = call.func
        prefer = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
            # spell it like the callee: th.tensor -> th.uint64, numpy.array -> numpy.uint64
            if f"{library}" in {q.rpartition('.')[0] for q in ctx.facts.c.qualified_names(func)}:
                prefer = ctx.code(func.value)
        spelled = spell(ctx.module, ctx.source, library, creation.scope, "uint64", prefer)
        if spelled is None:
            return None
        text, imports = spelled
        inserted = append_keyword(ctx.source, call, f"dtype={text}")
        if inserted is None:
            return None
        return [*inserted, *imports]

    title = "Add an explicit unsigned 64-bit dtype" + (f" (unsafe: {why})" if not safe else "")
    return Diagnostic(ctx.span(call.func), message, intents, safe, title, evidence.evidence)
