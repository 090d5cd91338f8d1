"""A dtype chosen per platform (``torch.uint64 if current_platform.is_xpu() else torch.int64``): which
branch is signed, on which platforms it is taken, and whether one of them (of those the project runs on,
the ``platforms`` setting) hands out addresses >= 2**63."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..analysis.semantic.records import Creation, NameKey
from ..names import DtypeClass
from ._creation import DtypeInfo, classify_expression
from .base import RuleContext

# Where a device or host address can have bit 63 set, and why; CUDA's virtual addresses stay below 2**49.
HIGH_ADDRESS_PLATFORMS = {
    "xpu": "XPU (USM)",
    "rocm": "ROCm (unified memory)",
    "cpu": "CPU (arm64 tagged pointers)",
    "npu": "NPU",
    "mps": "MPS",
    "tpu": "TPU",
}
KNOWN_PLATFORMS = frozenset({"cuda", *HIGH_ADDRESS_PLATFORMS})
_TEST = re.compile(r"^is_(xpu|cuda|rocm|hip|npu|cpu|mps|tpu)$")
_ALIASES = {"hip": "rocm"}


@dataclass(frozen=True)
class PlatformDtype:
    """The signed branch of a per-platform dtype."""

    branch: ast.expr  # the signed dtype expression inside the conditional
    info: DtypeInfo
    taken_on: frozenset[str]  # the platforms that take the branch
    risky: tuple[str, ...]  # of those, the configured ones that hand out addresses >= 2**63
    whole: ast.expr  # the creation's dtype argument (the conditional, or the name bound to it)

    def where(self) -> str:
        """``ROCm (unified memory), NPU`` or, for an ``else`` branch, ``every platform but XPU: ROCm ...``."""
        named = ", ".join(HIGH_ADDRESS_PLATFORMS[p] for p in self.risky)
        others = sorted(KNOWN_PLATFORMS - self.taken_on)
        if len(self.taken_on) > 1 and others:
            return f"every platform but {', '.join(p.upper() for p in others)} ({named})"
        return named


def conditional_dtype(ctx: RuleContext, creation: Creation) -> PlatformDtype | None:
    """The signed branch of the creation's per-platform dtype, where a platform the project runs on takes it
    and can hand out addresses >= 2**63; None otherwise (a literal dtype, no platform test, no risky platform)."""
    whole = creation.dtype
    conditional = _resolve(ctx, whole)
    if whole is None or conditional is None:
        return None
    platform, negated = _platform_test(conditional.test)
    if platform is None:
        return None
    for branch, when_true in ((conditional.body, True), (conditional.orelse, False)):
        info = classify_expression(ctx, branch, creation.library)
        if info is None or info.cls is not DtypeClass.SIGNED64:
            continue
        on_platform = when_true != negated
        taken = frozenset({platform}) if on_platform else KNOWN_PLATFORMS - {platform}
        configured = KNOWN_PLATFORMS if "any" in ctx.config.platforms else frozenset(ctx.config.platforms)
        risky = tuple(sorted(p for p in taken & configured if p in HIGH_ADDRESS_PLATFORMS))
        if risky:
            return PlatformDtype(branch, info, taken, risky, whole)
    return None


def _resolve(ctx: RuleContext, expr: ast.expr | None, depth: int = 0) -> ast.IfExp | None:
    """The conditional a dtype argument is, directly or through one binding (``_PTR_DTYPE = ...``)."""
    if isinstance(expr, ast.IfExp):
        return expr
    if depth > 3 or not isinstance(expr, ast.Name):
        return None
    model = ctx.facts.model
    key = model.key_of(expr)
    bindings = model.bindings.get(key, []) if key is not None else []
    if not bindings and model.scope_of(expr).resolve(expr.id) is model.module_scope:
        bound = model.module_constants.get(expr.id)
        return _resolve(ctx, bound, depth + 1) if bound is not None else None
    exprs = [b.expr for b in bindings if b.how == "expr"]
    if len(exprs) != 1 or (isinstance(key, NameKey) and len(bindings) != 1):
        return None
    return _resolve(ctx, exprs[0], depth + 1)


def _platform_test(test: ast.expr) -> tuple[str | None, bool]:
    """``current_platform.is_xpu()`` -> ("xpu", False); ``not torch.xpu.is_available()`` -> ("xpu", True)."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = not negated, test.operand
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and test.values:
        test = test.values[-1]  # `hasattr(torch, "xpu") and torch.xpu.is_available()`
    if not isinstance(test, ast.Call) or not isinstance(test.func, (ast.Name, ast.Attribute)):
        return None, negated
    match = _TEST.match(test.func.id if isinstance(test.func, ast.Name) else test.func.attr)
    if match:
        name = match.group(1)
        return _ALIASES.get(name, name), negated
    if (
        isinstance(test.func, ast.Attribute)
        and test.func.attr == "is_available"
        and isinstance(test.func.value, ast.Attribute)
    ):
        name = test.func.value.attr  # `torch.xpu.is_available()`
        name = _ALIASES.get(name, name)
        return (name if name in KNOWN_PLATFORMS else None), negated
    return None, negated
