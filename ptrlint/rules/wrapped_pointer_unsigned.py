"""PTR009 wrapped-pointer-unsigned."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..analysis.values.lattice import Kind, Origin, Value
from ..findings import Intent
from ..fixes import module_alias
from ..names import CREATION_SITE_WORDS, DtypeClass
from ._creation import classify_dtype, table_dtypes
from .base import Diagnostic, Invalid, Rule, RuleContext

MASK = "0xFFFF_FFFF_FFFF_FFFF"


class WrappedPointerUnsigned(Rule):
    code = "PTR009"
    name = "wrapped-pointer-unsigned"
    summary = "Address wrapped into signed range stored into an unsigned 64-bit table"
    fix_availability = "always (safe)"
    site_words = (*CREATION_SITE_WORDS, "Tensor")
    doc = """
## What it does
Flags an address that was wrapped into int64 range on purpose (`p - (1 << 64) if p >= 1 << 63 else p`,
`ctypes.c_int64(p).value`, a module helper that does either, `.view(torch.int64)` read back) or that a
library hands out signed (CuPy's memory pointers, `a.data.ptr`, and its runtime's allocations,
`cupy.cuda.runtime.malloc(n)`, are `intptr_t`) and then meets an
unsigned 64-bit container:
- an element store or `fill_` into a uint64 numpy array (`ptrs[i] = wrap(p)`), a uint64 tensor's numpy
  view, or a uint64 torch tensor;
- the data of a uint64 creation (`torch.tensor([wrap(p)], dtype=torch.uint64)`,
  `np.array(..., dtype=np.uint64)`);
- the start of a uint64 range (`cupy.arange(a.data.ptr, end, step, dtype=cupy.uintp)`, the batched
  pointer table of a CuPy solver);
- `np.uint64(wrap(p))`.

## Why is this bad?
A wrapped address is negative once the address is >= 2**63, and unsigned containers reject negative
Python ints: numpy raises `OverflowError: Python integer -N out of bounds for uint64`, `torch.tensor`
of a negative value with `dtype=torch.uint64` raises, and a torch uint64 element store rejects it from
torch 2.14 on (2.13 and earlier store its bits, which is why half-migrated code passes its tests on
one torch and fails on the next). It is the mirror of PTR001: raw addresses belong in unsigned tables,
wrapped ones in signed tables, and each fails in the other.

## Example
```python
table = np.zeros(n, dtype=np.uint64)
table[i] = to_i64(t.data_ptr())
```

## Use instead
```python
table = np.zeros(n, dtype=np.uint64)
table[i] = to_i64(t.data_ptr()) & 0xFFFF_FFFF_FFFF_FFFF  # or store t.data_ptr() itself
```

## Fix safety
The stored value is masked to 64 bits (`v & 0xFFFF_FFFF_FFFF_FFFF`): the raw address again, the same
bits the wrapped value stands for, and non-negative. Values that were never wrapped are unchanged by
the mask. A range's end is masked with its start, so that the range keeps its length. A torch element store gets the masked value as a uint64 scalar tensor
(`buf[i] = torch.tensor(v & 0xFFFF_FFFF_FFFF_FFFF, dtype=torch.uint64)`): a raw Python int would
raise there before torch 2.14.1 (PTR005), a tensor's bits are copied on every release. Always safe.

## Options
- `torch-version`: the oldest torch the code supports; torch uint64 element stores are reported for
  every setting (releases from 2.14 on reject a wrapped value), naming the releases that fail.
"""
    VALID = (
        "import numpy as np\ntable = np.zeros(4, dtype=np.uint64)\ntable[0] = t.data_ptr()\n",
        "import ctypes\nimport torch\ntable = torch.tensor([ctypes.c_int64(t.data_ptr()).value], dtype=torch.int64)\n",
        "import cupy\nimport numpy as np\ntable = np.array([cupy.cuda.runtime.malloc(64)], dtype=np.int64)\n",
    )
    INVALID = (
        Invalid(
            "import cupy\nimport numpy as np\ntable = np.array([cupy.cuda.runtime.malloc(64)], dtype=np.uint64)\n",
            "import cupy\nimport numpy as np\n"
            "table = np.array([cupy.cuda.runtime.malloc(64) & 0xFFFF_FFFF_FFFF_FFFF], dtype=np.uint64)\n",
        ),
        Invalid(
            "import ctypes\nimport numpy as np\ntable = np.zeros(4, dtype=np.uint64)\n"
            "table[0] = ctypes.c_int64(t.data_ptr()).value\n",
            "import ctypes\nimport numpy as np\ntable = np.zeros(4, dtype=np.uint64)\n"
            "table[0] = ctypes.c_int64(t.data_ptr()).value & 0xFFFF_FFFF_FFFF_FFFF\n",
        ),
        Invalid(
            "import torch\ndef wrap(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n"
            "table = torch.tensor([wrap(t.data_ptr()) for t in ts], dtype=torch.uint64)\n",
            "import torch\ndef wrap(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n"
            "table = torch.tensor([wrap(t.data_ptr()) & 0xFFFF_FFFF_FFFF_FFFF for t in ts], dtype=torch.uint64)\n",
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for write in ctx.facts.model.scalar_writes:
            if write.in_raises:
                continue
            value = ctx.facts.value(write.value)
            if not _wrapped_int(value):
                continue
            dtypes = table_dtypes(ctx, write.tensor)
            if not dtypes or any(d is None or d.cls is not DtypeClass.UNSIGNED64 for d in dtypes):
                continue
            torch = any(d is not None and d.library == "torch" for d in dtypes) and not _numpy_view(write.tensor)
            effect = (
                "torch 2.14 and later reject a negative value in a uint64 element store (2.13 and earlier "
                "store its bits)"
                if torch
                else "numpy raises `OverflowError: Python integer out of bounds for uint64`"
            )
            alias = module_alias(ctx.module, "torch") if torch else None
            if torch and alias is None:
                continue  # no way to spell a store that works on every release
            yield self._diagnostic(ctx, write.value, value, "stored into an unsigned 64-bit table", effect, alias)
        for creation in ctx.facts.model.creations:
            info = classify_dtype(ctx, creation)
            if info is None or info.cls is not DtypeClass.UNSIGNED64 or creation.in_raises:
                continue
            effect = (
                "`torch.tensor` raises for a negative value with dtype=torch.uint64"
                if creation.library == "torch"
                else "numpy raises `OverflowError` for a negative value"
            )
            if creation.stop is not None and creation.data is not None:  # a range: both bounds masked, or none
                if _wrapped_int(ctx.facts.value(creation.data)):
                    yield self._diagnostic(
                        ctx,
                        creation.data,
                        ctx.facts.value(creation.data),
                        "the start of an unsigned 64-bit range",
                        effect,
                        also=creation.stop,
                    )
                continue
            for part in creation.parts:
                for leaf in _wrapped_leaves(ctx, part):
                    yield self._diagnostic(
                        ctx, leaf, ctx.facts.value(leaf), "in the data of an unsigned 64-bit creation", effect
                    )
        for call in ctx.facts.model.calls:
            func = call.func
            if (
                isinstance(func, (ast.Name, ast.Attribute))
                and "numpy.uint64" in ctx.facts.model.qualified_names(func)
                and call.args
                and _wrapped_int(ctx.facts.value(call.args[0]))
            ):
                yield self._diagnostic(
                    ctx,
                    call.args[0],
                    ctx.facts.value(call.args[0]),
                    "converted by `np.uint64`",
                    "numpy raises `OverflowError` for a negative value",
                )

    @staticmethod
    def _diagnostic(
        ctx: RuleContext,
        node: ast.expr,
        value: Value | None,
        where: str,
        effect: str,
        torch_alias: str | None = None,
        also: ast.expr | None = None,
    ) -> Diagnostic:
        """``also``: a range's end, masked with its start (the range keeps its length)."""
        message = (
            f"address wrapped into signed range {where}: it is negative once the address is >= 2**63, and "
            f"{effect}; store the raw address (mask it: `& 0xFFFF_FFFF_FFFF_FFFF`)"
        )
        failure = f"a wrapped address (negative above 2**63) is {where}: {effect}"
        start, end = ctx.span(node)

        def intents() -> list[Intent]:
            payload = f"{MASK};{torch_alias}" if torch_alias else MASK
            spans = [(start, end), *([ctx.span(also)] if also is not None else [])]
            return [Intent(s, e, "mask_uint64", payload) for s, e in spans]

        title = "Mask the value to 64 bits (the raw address)"
        if torch_alias:  # a raw Python int in a torch element store raises before torch 2.14.1: store a tensor
            title = "Store the raw address as a uint64 scalar tensor (masked to 64 bits: works on every torch release)"
        return Diagnostic(
            (start, end), message, intents, True, title, value.evidence if value is not None else (), failure=failure
        )


def _wrapped_int(value: Value | None) -> bool:
    return value is not None and value.origin is Origin.WRAPPED and value.kind is Kind.SCALAR and value.python_int


def _wrapped_leaves(ctx: RuleContext, part: ast.expr | None) -> Iterator[ast.expr]:
    """The elements of a creation's data that are wrapped Python ints (a literal's items, a comprehension's
    element, a scalar fill)."""
    if part is None:
        return
    if isinstance(part, (ast.List, ast.Tuple)):
        for element in part.elts:
            yield from _wrapped_leaves(ctx, element)
    elif isinstance(part, (ast.ListComp, ast.GeneratorExp)):
        yield from _wrapped_leaves(ctx, part.elt)
    elif _wrapped_int(ctx.facts.value(part)):
        yield part


def _numpy_view(expr: ast.AST) -> bool:
    """``t.numpy()[i] = v``, ``buf.np[i] = v``: a numpy store, whatever the tensor behind it."""
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and expr.attr in ("np", "numpy"):
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False


__all__ = ["WrappedPointerUnsigned"]  # the rule registry takes the Rule subclass this module defines
