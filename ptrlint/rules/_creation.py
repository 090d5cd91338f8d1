"""Shared by PTR001-PTR003: the dtype of a pointer-holding creation call, and its fix."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable

from ..analysis.consumers.harm import Harm
from ..analysis.consumers.int_entry import PythonInts
from ..analysis.consumers.uses import FixKind, describe
from ..analysis.semantic.records import Creation, CreationKey, MemberKey
from ..analysis.values.lattice import Evidence, Location, Origin, Value
from ..discovery import display_path
from ..findings import NOTE, Intent
from ..fixes import append_keyword, replace_dtype, spell
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
    def float(self) -> bool:
        """A floating dtype (rounds addresses) rather than a narrow integer one (cuts them)."""
        tail = self.qname[4:] if self.qname.startswith("str:") else self.qname.rpartition(".")[2]
        return any(word in tail for word in ("float", "half", "double", "single")) or tail.lstrip("<>=").startswith(
            ("f", "d")
        )

    @property
    def int32(self) -> bool:
        """int32/uint32: wide enough for a plural table name to count as evidence."""
        return is_32bit_integer(self.qname.rpartition(".")[2] if not self.qname.startswith("str:") else self.qname[4:])


def classify_dtype(ctx: RuleContext, creation: Creation) -> DtypeInfo | None:
    """The literal dtype of a creation call; None when absent or not a literal (``dtype=dtype``)."""
    return classify_expression(ctx, creation.dtype, creation.library)


def classify_expression(ctx: RuleContext, dtype: ast.expr | None, creation_library: str | None) -> DtypeInfo | None:
    """A literal dtype expression (``torch.int64``, ``"int64"``, ``int``) as a creation of ``creation_library``
    takes it; None when it is not one."""
    if dtype is None:
        return None
    if isinstance(dtype, ast.Constant):
        text = dtype.value
        if not isinstance(text, str):
            return None
        cls = classify_string_dtype(text)
        return DtypeInfo(cls, creation_library or "numpy", f"str:{text}") if cls else None
    if isinstance(dtype, (ast.Name, ast.Attribute)):
        for qname in sorted(ctx.facts.model.qualified_names(dtype)):
            if qname.startswith("builtins."):
                cls = classify_builtin_dtype(qname.rpartition(".")[2])
                if cls is not None and creation_library is not None:
                    return DtypeInfo(cls, creation_library, qname)
                continue
            classified = classify_qualified_dtype(qname)
            if classified is not None:
                cls, library = classified
                if creation_library is not None and creation_library != library:
                    continue  # a numpy dtype in a torch call (or the reverse) is not ours to judge
                return DtypeInfo(cls, library, qname)
    return None


def pointer_creations(ctx: RuleContext) -> Iterator[tuple[Creation, Value]]:
    """Creations holding addresses by value or flow (RAW) or by name only (NAMED); not inside
    ``pytest.raises`` blocks, where a signed table is the point of the test."""
    for creation in ctx.facts.model.creations:
        if creation.in_raises:
            continue
        evidence = ctx.facts.pointer_holding(creation)
        if evidence is not None:
            yield creation, evidence


def table_dtypes(ctx: RuleContext, expr: ast.AST) -> list[DtypeInfo | None]:
    """The dtypes of the creations a table expression refers to (through its aliases, slices and numpy
    views); a ``.view(dtype)`` on the way decides instead. Empty when no creation is known."""
    node = expr
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("view", "astype")
            and node.args
        ):
            qname = ctx.facts.model.types.dtype_qname(node.args[0])
            classified = classify_qualified_dtype(qname) if qname else None
            return [DtypeInfo(classified[0], classified[1], qname)] if classified and qname else [None]
        node = node.func if isinstance(node, ast.Call) else node.value
    facts = ctx.facts
    key = facts.model.alias_key(expr)  # type: ignore[arg-type]
    if key is None:
        return []
    root = facts.root(key)
    keys = [*facts.stored.get(root, []), *([key] if isinstance(key, CreationKey) else [])]
    return [
        classify_dtype(ctx, facts.model.creation_by_id[k.call]) for k in keys if k.call in facts.model.creation_by_id
    ]


def with_harm(diagnostic: Diagnostic, harm: Harm) -> Diagnostic:
    """The finding names its failure and how sure ptrlint is of it (the harm model)."""
    diagnostic.failure, diagnostic.severity = harm.failure, harm.severity
    return diagnostic


def object_group(ctx: RuleContext, creation: Creation, diagnostic: Diagnostic) -> Diagnostic:
    """A note about a table kept in an attribute of a module class is grouped with the other notes about
    that class's tables: a user reviews an object, not each of its fields (the engine merges a group
    into one note once suppressed findings are left out)."""
    key = ctx.facts.model.key_of(creation.target_node) if creation.target_node is not None else None
    if diagnostic.severity == NOTE and isinstance(key, MemberKey) and isinstance(key.owner, int):
        diagnostic.group = (
            key.owner,
            ctx.facts.model.class_nodes[key.owner].name,
            creation.target_name or "?",
            creation.call,
        )
    return diagnostic


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
    copies = {
        id(use.node): use
        for use in ctx.consumers.of_creation(creation)  # `.repeat()`, `torch.stack`, ...
        if use.copy and not isinstance(use.node, Location)
    }
    for use in sorted(copies.values(), key=lambda u: (u.node.lineno, u.node.col_offset)):  # type: ignore[union-attr]
        out.append((use.node, use.why))  # type: ignore[arg-type]
    return tuple(out)


def dtype_diagnostic(
    ctx: RuleContext, creation: Creation, info: DtypeInfo, evidence: Value, message: str
) -> Diagnostic:
    """A dtype finding (PTR001, PTR003): the dtype token becomes uint64, or, for a signed 64-bit
    table a consumer needs as int64, the table is created unsigned and viewed back."""
    assert creation.dtype is not None
    dtype = creation.dtype
    library = info.library
    evidence_out = evidence.evidence + copy_evidence(ctx, creation)

    kwargs = creation.dtype_kwargs
    span = ctx.span(dtype)

    def uint64() -> list[Intent] | None:
        if kwargs is not None:  # `**opts`: override its dtype in this call only, the dict may serve others
            return kwargs_override(ctx, creation, kwargs, library)
        return replace_dtype(ctx.module, ctx.source, dtype, library, creation.scope, info.qname)

    if kwargs is not None:
        span = ctx.span(kwargs)
        evidence_out = ((dtype, f"the dtype `{ctx.code(dtype)}` comes from `**{kwargs.id}`"), *evidence_out)
    signed64 = info.cls is DtypeClass.SIGNED64
    return consumer_diagnostic(
        ctx,
        creation,
        message,
        evidence_out,
        uint64,
        span,
        "Use an",
        ctx.code(dtype) if signed64 else None,
        bit_preserving_possible=signed64,
    )


def kwargs_override(ctx: RuleContext, creation: Creation, kwargs: ast.Name, library: str | None) -> list[Intent] | None:
    """``f(xs, **opts)`` -> ``f(xs, **{**opts, "dtype": torch.uint64})``."""
    spelled = spell(ctx.module, ctx.source, library or "torch", creation.scope, "uint64", _callee_prefix(ctx, creation))
    if spelled is None:
        return None
    text, imports = spelled
    start, end = ctx.source.span(kwargs)
    return [Intent(start, end, "replace_name", f'{{**{kwargs.id}, "dtype": {text}}}'), *imports]


def _unreachable_stores(ints: PythonInts, creation: Creation) -> str | None:
    """Python ints stored where a fix of this creation cannot reach: in another module, or inside a
    function the table is passed to."""
    elsewhere = ints.written_elsewhere(creation)
    if elsewhere:
        return f"Python ints are stored into it {_where(elsewhere[0])}, beyond this fix's reach"
    entry = ints.python_int_entry(creation)
    if entry is not None and entry.via:
        return f"Python ints are stored into it inside `{entry.via}()`, beyond this fix's reach"
    return None


def consumer_diagnostic(
    ctx: RuleContext,
    creation: Creation,
    message: str,
    evidence: Evidence,
    uint64: Callable[[], list[Intent] | None],
    span: tuple[int, int],
    verb: str,
    signed_text: str | None,
    bit_preserving_possible: bool = True,
) -> Diagnostic:
    """The fix of a pointer table, chosen by its consumers (analysis/consumers/search.py).

    - every use seen and uint64-ready: the plain uint64 dtype;
    - a use needs int64, or was not followed to its end (an escape, code ptrlint cannot see): the
      bit-preserving fix (create unsigned, view back as the signed dtype), when the table was a
      signed 64-bit one (``signed_text``: its dtype as spelled; None for an implicit int64) and the
      creation can be viewed (``bit_preserving_possible``); with the plain uint64 change as an
      unsafe alternative where the deciding use was unseen;
    - a sign-sensitive use, a collective receive, a computed table read back: no safe fix.
    Either fix creates the table unsigned: a Python int of unknown sign entering it makes it unsafe.
    """
    choice = ctx.fix_choice(creation)
    decider = choice.decider
    why = describe(decider) if decider is not None else ""
    consumer_evidence = () if decider is None else ((decider.node, f"consumer: {decider.why} ({decider.kind.value})"),)
    ints = ctx.consumers.ints
    if choice.kind is FixKind.UINT64:
        sign = ints.sign_unknown(creation, stores=True)
        if sign is not None:
            return Diagnostic(span, message, uint64, False, f"{verb} unsigned 64-bit dtype (unsafe: {sign})", evidence)
        return Diagnostic(span, message, uint64, True, f"{verb} unsigned 64-bit dtype (no use needs int64)", evidence)
    unsafe_title = f"{verb} unsigned 64-bit dtype (unsafe: {why})"
    int64_bound = choice.kind is FixKind.BIT_PRESERVING
    if not int64_bound or not bit_preserving_possible or creation.library is None:
        if int64_bound and creation.library is None:
            unsafe_title = f"{unsafe_title[:-1]}; a buffer factory has no `.view`)"
        elif int64_bound and not bit_preserving_possible:
            unsafe_title = (
                f"{unsafe_title[:-1]}; its dtype was not int64, so no view hands its consumers what they had)"
            )
        return Diagnostic(span, message, uint64, False, unsafe_title, evidence + consumer_evidence)
    sites, blocker = ints.element_stores(creation)
    blocker = blocker or _unreachable_stores(ints, creation)
    if blocker is not None:
        return Diagnostic(
            span, message, uint64, False, f"{unsafe_title[:-1]}; {blocker})", evidence + consumer_evidence
        )
    library = creation.library
    signed = signed_text
    if creation.view_library is not None and creation.view_library != library:
        library, signed = creation.view_library, None  # viewed as what the call returns: a tensor, not an array
    bit_preserving = _bit_preserving(ctx, creation, sites, uint64, library, signed)
    how = f"`.view({signed or 'int64'})`" if not sites else "an unsigned numpy view for the stores"
    title = f"Create the table unsigned and hand on its int64 bits ({how}): {why}"
    alternatives = (
        ((f"{verb} unsigned 64-bit dtype (unsafe: {why})", uint64),) if decider is not None and decider.unseen else ()
    )
    sign = ints.sign_unknown(creation, stores=bool(sites))
    if sign is not None:
        return Diagnostic(
            span,
            message,
            bit_preserving,
            False,
            f"{title} (unsafe: {sign})",
            evidence + consumer_evidence,
            alternatives,
        )
    return Diagnostic(span, message, bit_preserving, True, title, evidence + consumer_evidence, alternatives)


def _bit_preserving(
    ctx: RuleContext,
    creation: Creation,
    sites: list[ast.Call],
    uint64: Callable[[], list[Intent] | None],
    library: str,
    signed: str | None,
) -> Callable[[], list[Intent] | None]:
    """The bit-preserving fix's edits: the creation made unsigned (``uint64``) and viewed back as
    ``signed`` (None: int64, spelled for ``library``); element stores through ``table.numpy()``
    (``sites``) write through an unsigned view instead."""

    def bit_preserving() -> list[Intent] | None:
        intents: list[Intent] = []
        unsigned = spell(ctx.module, ctx.source, "torch", creation.scope, "uint64") if sites else None
        if sites and unsigned is None:
            return None
        for site in sites:  # written through `table.numpy()`: write through an unsigned view instead
            start, end = ctx.source.span(site)
            intents.append(Intent(start, end, "view_receiver", unsigned[0]))  # type: ignore[index]
            intents.extend(unsigned[1])  # type: ignore[index]
        if sites and not _python_data(ctx, creation):
            return intents  # created empty: the views are the only way Python ints get in
        created = uint64()
        if created is None:
            return None
        text = signed
        if text is None:
            spelled = spell(ctx.module, ctx.source, library, creation.scope, "int64", _callee_prefix(ctx, creation))
            if spelled is None:
                return None
            text, imports = spelled
            created = [*created, *imports]
        start, end = ctx.source.span(creation.call)
        return [*created, Intent(start, end, "append_view", text), *intents]

    return bit_preserving


def _where(value: Value) -> str:
    """``in kvoffload/worker.py:14``: where another module's write was seen."""
    for node, _message in value.evidence:
        if isinstance(node, Location):
            return f"in {display_path(node.path)}:{node.line}"
    return "in another module"


def _python_data(ctx: RuleContext, creation: Creation) -> bool:
    """Whether the creation itself takes pointer values (its data, fill or range end)."""
    for part in creation.parts:
        value = ctx.facts.value(part)
        if value is not None and value.is_pointer:
            return True
    return False


def _callee_prefix(ctx: RuleContext, creation: Creation) -> str | None:
    """Spell it like the callee: ``th.tensor`` -> ``th.uint64``, ``numpy.array`` -> ``numpy.uint64``."""
    func = creation.call.func
    library = creation.library or "torch"
    if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
        if library in {q.rpartition(".")[0] for q in ctx.facts.model.qualified_names(func)}:
            return ctx.code(func.value)
    return None


def implicit_dtype_applies(ctx: RuleContext, creation: Creation, evidence: Value) -> bool:
    """No dtype, and the one it gets is signed: inferred int64 from Python ints, or copied by
    ``*_like``/``new_*`` from a source that is not itself an address table."""
    if creation.dtype is not None or not creation.has_dtype_slot:
        return False
    if creation.qname in IMPLICIT_DTYPE_CALLS or creation.implicit_signed:
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

    def intents() -> list[Intent] | None:
        spelled = spell(ctx.module, ctx.source, library, creation.scope, "uint64", _callee_prefix(ctx, creation))
        if spelled is None:
            return None
        text, imports = spelled
        inserted = append_keyword(ctx.source, call, f"dtype={text}")
        if inserted is None:
            return None
        return [*inserted, *imports]

    return consumer_diagnostic(
        ctx,
        creation,
        message,
        evidence.evidence,
        intents,
        ctx.span(call.func),
        "Add an explicit",
        None,
        bit_preserving_possible=creation.like_source is None or creation.qname in IMPLICIT_DTYPE_CALLS,
    )
