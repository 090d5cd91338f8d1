"""Shared by PTR001-PTR003: the dtype of a pointer-holding creation call, and its fix."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator

from ..analysis.facts import Creation
from ..analysis.values import Origin, Value
from ..fixes import append_keyword, replace_dtype, spell
from ..model import Intent
from ..names import (
    IMPLICIT_DTYPE_CALLS,
    DtypeClass,
    classify_builtin_dtype,
    classify_qualified_dtype,
    classify_string_dtype,
    is_32bit_integer,
)
from .base import Diagnostic, RuleContext


@dataclass(frozen=True)
class DtypeInfo:
    cls: DtypeClass
    library: str | None
    qname: str  # "torch.int64", "builtins.int", or "str:int64"

    @property
    def int32(self) -> bool:
        """int32/uint32: wide enough for a plural table name to count as evidence."""
        return is_32bit_integer(self.qname.rpartition(".")[2] if not self.qname.startswith("str:") else self.qname[4:])


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
    """Creations holding addresses by value or flow (RAW) or by name only (NAMED); not inside
    ``pytest.raises`` blocks, where a signed table is the point of the test."""
    for creation in ctx.facts.c.creations:
        if creation.in_raises:
            continue
        evidence = ctx.facts.pointer_holding(creation)
        if evidence is not None:
            yield creation, evidence


def evidence_fits_dtype(evidence: Value, info: DtypeInfo) -> bool:
    """Name-only evidence is weak: never for floating, bool or 8/16-bit buffers (data named after a
    kernel's pointer parameter), and for int32/uint32 only with a table name (``layer_ptrs``)."""
    if evidence.origin is Origin.RAW:
        return True
    if info.cls is DtypeClass.SIGNED64:
        return True
    return info.cls is DtypeClass.NARROW and info.int32 and evidence.table_name


def copy_evidence(ctx: RuleContext, creation: Creation) -> tuple[tuple[ast.AST, str], ...]:
    """``*_like``/``new_*`` copies of the buffer that hold addresses: they inherit its dtype."""
    out = []
    for copy in ctx.facts.like_copies(creation):
        value = ctx.facts.pointer_holding(copy)
        if value is not None and value.origin is Origin.RAW:
            out.append((copy.call, f"`{copy.qname.rpartition('.')[2]}` copy inherits this dtype and holds addresses"))
    return tuple(out)


def dtype_diagnostic(ctx: RuleContext, creation: Creation, info: DtypeInfo, evidence: Value, message: str) -> Diagnostic:
    assert creation.dtype is not None
    dtype = creation.dtype
    library = info.library
    safe, why = ctx.fix_safety(creation)

    def intents() -> list[Intent] | None:
        return replace_dtype(ctx.module, ctx.source, dtype, library, creation.scope, info.qname)

    title = "Use an unsigned 64-bit dtype" + (f" (unsafe: {why})" if not safe else "")
    return Diagnostic(ctx.span(dtype), message, intents, safe, title, evidence.evidence + copy_evidence(ctx, creation))


def implicit_dtype_applies(ctx: RuleContext, creation: Creation, evidence: Value) -> bool:
    """No dtype, and the one it gets is signed: inferred int64 from Python ints, or copied by
    ``*_like``/``new_*`` from a source that is not itself an address table."""
    if creation.dtype is not None or not creation.has_dtype_slot:
        return False
    if creation.qname in IMPLICIT_DTYPE_CALLS:
        return True
    if creation.like_source is None or evidence.origin is not Origin.RAW:
        return False
    source = ctx.facts.value(creation.like_source)
    return source is None or not source.is_pointer  # a copy of an address table is that table's finding


def missing_dtype_diagnostic(ctx: RuleContext, creation: Creation, evidence: Value, message: str) -> Diagnostic | None:
    if not implicit_dtype_applies(ctx, creation, evidence):
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
