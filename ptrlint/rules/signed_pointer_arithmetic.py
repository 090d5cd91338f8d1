"""PTR007 signed-pointer-arithmetic."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.consumers.uses import UseKind, describe
from ..analysis.values.lattice import Evidence, Kind, Origin
from ..findings import Intent
from ..fixes import replace_dtype, spell
from .base import Diagnostic, Invalid, Rule, RuleContext


class SignedPointerArithmetic(Rule):
    code = "PTR007"
    name = "signed-pointer-arithmetic"
    summary = "Pointer value (a Python int) combined with a signed-integer numpy array"
    fix_availability = "sometimes (safe where the result is stored into a buffer and every operand can be made uint64)"
    site_words = ("numpy",)
    doc = """
## What it does
Flags `+`, `-` or `*` between a pointer value that is a plain Python int (`t.data_ptr()`,
`a.ctypes.data`, a variable holding one) and a numpy array of a signed integer dtype
(`np.arange(n)`, `ids.astype(np.int64)`, an int64 array, arithmetic on one, or what a function of the
module returns when each of its `return`s gives one, an item of a returned tuple included).

## Why is this bad?
numpy converts the Python int to the array's dtype before it computes. An address at or above
2**63 does not fit int64, so vectorised address arithmetic such as
`base + ids.astype(np.int64) * stride` raises `OverflowError` on exactly the machines with high
addresses, and works everywhere else. torch tensor arithmetic wraps silently instead of raising
and is not flagged here.

## Example
```python
rows = np.arange(n)
descriptors[:n] = cache.data_ptr() + rows * cache.stride(0) * cache.element_size()
```

## Use instead
```python
rows = np.arange(n)
descriptors[:n] = np.uint64(cache.data_ptr()) + rows.astype(np.uint64) * cache.stride(0) * cache.element_size()
```

## Fix safety
The fix computes in uint64: the address becomes `np.uint64(...)` and every signed array operand
of the sum it is part of `.astype(np.uint64)` (an `.astype(np.int64)` becomes `.astype(np.uint64)`):
in `ptr + blocks * stride + offsets * size` both `blocks` and `offsets`, found through names,
attributes set by other methods and the items of `np.divmod`/`np.nonzero`/`np.meshgrid` results. uint64 arithmetic is
modular, so the bits are the ones the int64 arithmetic meant, and a uint64 array stored into an
int64 buffer (`desc[:n] = ...`) keeps them: the buffer keeps its dtype for its consumers. It is
safe when the result only goes into buffers (element or slice stores, copies) and every other
operand is a non-negative Python int (a constant, a stride, a size). It is unsafe, and its title
says why, where the result is read back, returned or handed on as an array (its dtype changes
from int64 to uint64), meets a signed array again (uint64 with int64 is float64), or an operand's
type or sign is unknown; there is no fix where an operand is a float or a negative constant.

## Options
- `pointer-functions` (see PTR001).
"""
    VALID = (
        "import numpy as np\ndef f(t, n):\n    rows = np.arange(n, dtype=np.uint64)\n"
        "    return np.uint64(t.data_ptr()) + rows * np.uint64(t.stride(0))\n",
        "import numpy as np\ndef f(t, n):\n    return np.arange(n) * t.stride(0) * t.element_size()\n",
        "import torch\ndef f(t, n):\n    return torch.arange(n) * t.stride(0) + t.data_ptr()\n",
        "import numpy as np\ndef f(t, base, n):\n    return t.data_ptr() - base + np.arange(n)\n",
        # a helper one of whose returns is not known to be signed: nothing is claimed
        "import numpy as np\ndef ids(n, wide):\n    if wide:\n        return np.arange(n, dtype=np.uint64)\n"
        "    return np.arange(n)\ndef f(t, n, desc):\n    desc[:n] = t.data_ptr() + ids(n, True) * 8\n",
    )
    INVALID = (
        Invalid(
            "import numpy as np\ndef f(t, n, desc):\n    desc[:n] = t.data_ptr() + np.arange(n) * t.stride(0)\n",
            "import numpy as np\ndef f(t, n, desc):\n    desc[:n] = np.uint64(t.data_ptr()) + np.arange(n).astype(np.uint64) * "
            "t.stride(0)\n",
        ),
        Invalid(
            "import numpy as np\ndef f(t, n):\n    return t.data_ptr() + np.arange(n) * t.stride(0)\n",
            "import numpy as np\ndef f(t, n):\n    return np.uint64(t.data_ptr()) + np.arange(n).astype(np.uint64) * "
            "t.stride(0)\n",
            unsafe=True,
        ),
        Invalid(
            "import numpy as np\ndef f(pool, pages, desc):\n    origin = pool.data_ptr()\n"
            "    desc[:] = origin + pages.astype(np.int64) * pool.stride(0)\n",
            "import numpy as np\ndef f(pool, pages, desc):\n    origin = pool.data_ptr()\n"
            "    desc[:] = np.uint64(origin) + pages.astype(np.uint64) * pool.stride(0)\n",
        ),
        Invalid(  # `size` may be negative or a numpy scalar of a signed dtype: reviewed by hand
            "import numpy as np\ndef f(a, n, size, desc):\n    ids = np.zeros(n, dtype=np.int64)\n    desc[:] = a.ctypes.data + ids * size\n",
            "import numpy as np\ndef f(a, n, size, desc):\n    ids = np.zeros(n, dtype=np.int64)\n"
            "    desc[:] = np.uint64(a.ctypes.data) + ids.astype(np.uint64) * size\n",
            unsafe=True,
        ),
        Invalid(  # the signed array comes out of a helper that returns a tuple
            "import numpy as np\ndef runs(ids):\n    ids = np.asarray(ids, dtype=np.int64)\n    return ids[:1], ids[1:]\n"
            "def f(pool, ids, desc):\n    head, rest = runs(ids)\n    desc[:len(rest)] = pool.data_ptr() + rest * 4096\n",
            "import numpy as np\ndef runs(ids):\n    ids = np.asarray(ids, dtype=np.int64)\n    return ids[:1], ids[1:]\n"
            "def f(pool, ids, desc):\n    head, rest = runs(ids)\n"
            "    desc[:len(rest)] = np.uint64(pool.data_ptr()) + rest.astype(np.uint64) * 4096\n",
        ),
        Invalid("import numpy as np\ndef f(t, n):\n    return t.data_ptr() + np.arange(n) * 0.5\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        facts = ctx.facts
        if not facts.model.imports_numpy:
            return
        reported: set[int] = set()
        parents = {
            id(child): node
            for node in facts.model.binops
            for child in (node.left, node.right)
            if isinstance(child, ast.BinOp)
        }
        for node in reversed(facts.model.binops):  # inner expressions first: report each combination once
            if id(node) in reported:
                continue
            for pointer, other in ((node.left, node.right), (node.right, node.left)):
                if any(id(n) in reported for n in ast.walk(pointer) if isinstance(n, ast.BinOp)):
                    continue
                value = facts.value(pointer)
                if (
                    value is None
                    or value.origin is not Origin.RAW
                    or value.kind is not Kind.SCALAR
                    or not value.python_int
                ):
                    continue
                if not facts.tensors.is_signed_numpy_array(other):
                    continue
                # the whole sum the address is part of: `ptr + blocks * stride + offs * size` is one computation
                top, others = node, [other]
                while isinstance(parents.get(id(top)), ast.BinOp) and isinstance(
                    parents[id(top)].op, (ast.Add, ast.Sub)
                ):
                    parent = parents[id(top)]
                    if parent.right is top and isinstance(parent.op, ast.Sub):
                        break  # `x - (ptr + ...)`: the address is subtracted, a different computation
                    others.append(parent.right if parent.left is top else parent.left)
                    reported.add(id(top))
                    top = parent
                reported.add(id(top))
                message = (
                    "pointer value (a Python int) combined with a signed-integer numpy array: numpy converts the "
                    "address to int64, which raises OverflowError once it is >= 2**63; compute in uint64: "
                    "`np.uint64(ptr) + ids.astype(np.uint64) * np.uint64(stride)`"
                )
                yield _diagnostic(ctx, top, pointer, others, message, value.evidence)
                break


def _diagnostic(
    ctx: RuleContext, node: ast.BinOp, pointer: ast.expr, others: list[ast.expr], message: str, evidence: Evidence
) -> Diagnostic:
    """The finding, with its fix: every operand in uint64, where the result only goes into buffers."""
    facts = ctx.facts
    scope = facts.model.scope_of(node)
    spelled = spell(ctx.module, ctx.source, "numpy", scope, "uint64")
    leaves: list[tuple[ast.expr, str]] = []
    blocker: str | None = None
    for other in others:
        found, blocker = _operands(ctx, other)
        if blocker is not None:
            break
        leaves += found
    if spelled is None or blocker is not None:
        return Diagnostic(ctx.span(node), message, None, False, "", evidence)
    text, imports = spelled
    why = ctx.consumers.ints.value_sign(pointer)
    if why is None:
        decider = next(
            (u for u in ctx.consumers.of_expression(node, numpy=True) if u.kind is not UseKind.READY or u.opaque), None
        )
        why = describe(decider) if decider is not None else None
    unknown = next((leaf for leaf, how in leaves if how == "keep" and not _known_int(ctx, leaf)), None)
    if why is None and unknown is not None:
        why = f"line {unknown.lineno}: ptrlint cannot tell that `{ctx.code(unknown)}` is a non-negative Python int"

    def intents() -> list[Intent]:
        out = [Intent(*ctx.source.span(pointer), "wrap_call", text), *imports]
        for leaf, how in leaves:
            if how == "astype":
                out.append(Intent(*ctx.source.span(leaf), "append_astype", text))
            elif how == "dtype":
                qname = facts.model.types.dtype_qname(leaf) or "numpy.int64"
                out.extend(replace_dtype(ctx.module, ctx.source, leaf, "numpy", scope, qname) or [])
        return out

    title = "Compute in uint64 (`np.uint64(address)`, `.astype(np.uint64)`)"
    if why is not None:
        return Diagnostic(ctx.span(node), message, intents, False, f"{title} (unsafe: {why})", evidence)
    return Diagnostic(ctx.span(node), message, intents, True, f"{title}: the result is stored into a buffer", evidence)


def _operands(ctx: RuleContext, expr: ast.expr) -> tuple[list[tuple[ast.expr, str]], str | None]:
    """The operands of the arithmetic beside the address: signed arrays to convert (``astype``, or
    ``dtype`` for an ``.astype(np.int64)`` whose dtype becomes unsigned), Python ints to keep; or
    why the expression cannot be computed in uint64."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult)):
        left, why = _operands(ctx, expr.left)
        if why is not None:
            return [], why
        right, why = _operands(ctx, expr.right)
        return left + right, why
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, int) and not isinstance(expr.value, bool) and expr.value >= 0:
            return [(expr, "keep")], None
        return [], f"the operand `{ctx.code(expr)}` is not a non-negative integer"
    tensors = ctx.facts.tensors
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "astype"
        and expr.args
        and tensors.is_signed_numpy_array(expr)
    ):
        return [(expr.args[0], "dtype")], None
    if isinstance(expr, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return [(expr, "astype" if tensors.is_signed_numpy_array(expr) else "keep")], None
    return [], f"the operand `{ctx.code(expr)}` cannot be computed in uint64"


def _known_int(ctx: RuleContext, leaf: ast.expr) -> bool:
    """A kept operand known to be a non-negative Python int: a constant, a size, a stride, a length."""
    if isinstance(leaf, ast.Constant):
        return True
    value = ctx.facts.value(leaf)
    return value is not None and value.origin is Origin.INDEX and value.kind is Kind.SCALAR and value.python_int


__all__ = ["SignedPointerArithmetic"]  # the rule registry takes the Rule subclass this module defines
