"""PTR005 pointer-setitem."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ..analysis.semantic.records import ScalarWrite
from ..analysis.values.lattice import Kind, Origin
from ..findings import Intent
from ..fixes import module_alias
from ..names import CREATION_SITE_WORDS, DtypeClass
from ._creation import classify_dtype, table_dtypes
from ._store_conventions import numpy_view, stored_creations, wrap_helper
from .base import Diagnostic, Invalid, Rule, RuleContext

# torch unpacked Python ints through int64 in tensor setitem (pytorch issue 191458). Measured:
# torch 2.13.0 raises "Overflow when unpacking long long" for `uint64_tensor[i] = 2**63`;
# torch 2.14.1 stores it exactly (2.14.0 was not available to check). The rule is skipped when
# the configured oldest supported torch (`torch-version`) is at least this release.
SETITEM_FIXED_IN: tuple[int, ...] | None = (2, 14, 1)


class PointerSetitem(Rule):
    code = "PTR005"
    name = "pointer-setitem"
    summary = "Pointer value written into a torch tensor element as a Python int"
    fix_availability = "sometimes (safe when the tensor is known to be 64-bit)"
    site_words = (*CREATION_SITE_WORDS, "Tensor")
    doc = """
## What it does
Flags `buf[i] = t.data_ptr()` and `buf.fill_(t.data_ptr())` where `buf` is known to be a torch
tensor (a torch creation call in the module, a `torch.Tensor` annotation, or the `.cpu`/`.gpu`
tensor of a buffer factory), even when the buffer is uint64.

## Why is this bad?
Up to torch 2.14.0, a Python int written into a tensor element is converted through int64,
whatever the tensor's dtype: `buf[i] = 2**63 + 5` raises `Overflow when unpacking long long`
on a uint64 tensor too (pytorch issue 191458; measured on 2.13.0, fixed in 2.14.1). On a
signed or narrow tensor any scalar write of an address >= 2**63 fails or wraps. Writes through
the numpy view (`buf.numpy()[i] = addr`, `CpuGpuBuffer.np[i] = addr`) and
`torch.tensor(list, dtype=torch.uint64)` handle the full range on every release.

## Example
```python
self.host = torch.zeros(n, dtype=torch.uint64)
self.host[i] = kv_cache.data_ptr()
```

## Use instead
```python
self.host_np = self.host.numpy()
self.host_np[i] = kv_cache.data_ptr()
```

## Fix safety
The fix stores a tensor instead of a Python int: `buf[i] = torch.tensor(p, dtype=torch.uint64)`
(and `buf.fill_(torch.tensor(p, dtype=torch.uint64))`). Where the tensor is int64 and the module has its
own wrap helper (a one-parameter function returning `p - (1 << 64) if p >= 1 << 63 else p`, or
`ctypes.c_int64(p).value`), the fix follows the module's convention instead: `buf[i] = to_i64(p)`, the
int64 reading of the same 64 bits, which an int64 element takes on every release (safe); where the tensor is
uint64 and the module already has a numpy view of it (`view = buf.numpy()` bound once before the store, a
`self.buf_np` member, or a buffer factory's `.np` for its `.cpu`), the store goes through the view (safe: numpy
stores the full uint64 range and the view shares the tensor's memory). Otherwise torch copies the 64 bits of a uint64
scalar tensor into an int64 or uint64 element exactly, on every release, so the store cannot
overflow and an int64 table keeps the bits its readers expect. The fix is safe when the tensor
is created in the module as int64 or uint64; for a tensor of unknown or narrower dtype the copy
would convert instead of failing, so the fix is unsafe there. `torch.tensor(p, dtype=torch.uint64)`
raises on a negative `p`, which the original int64 store accepted: the fix is safe only for values
proven non-negative (an address API, plus or minus an offset), and unsafe, saying so, for values
known to be addresses only by their names or wrapped into int64 range. It needs `torch` imported
as a module (`import torch` or `import torch as th`).

## Options
- `torch-version`: the oldest torch the code supports; stores into uint64 tensors are not reported
  when it is 2.14.1 or newer (every supported release then stores a raw Python int without the int64
  detour). Stores into int64 tensors fail on every release and are always reported. The reverse
  direction, a *wrapped* (negative) value into a uint64 tensor, fails from torch 2.14 on: PTR009.
- `buffer-factories` (see PTR001).
"""
    VALID = (
        "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nview = buf.numpy()\nview[0] = t.data_ptr()\n",
        "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[0] = 0\n",
        "def f(buf, t):\n    buf[0] = t.data_ptr()\n",
        "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[:2] = torch.tensor([a.data_ptr(), b.data_ptr()], dtype=torch.uint64)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[0] = t.data_ptr()\n",
            "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[0] = torch.tensor(t.data_ptr(), dtype=torch.uint64)\n",
        ),
        Invalid(
            "import torch as th\nbuf = th.empty(4, dtype=th.uint64)\nbuf.fill_(t.data_ptr())\n",
            "import torch as th\nbuf = th.empty(4, dtype=th.uint64)\nbuf.fill_(th.tensor(t.data_ptr(), dtype=th.uint64))\n",
        ),
        Invalid(  # an int64 table in a module with its own wrap helper: the store follows the module
            "import torch\ndef to_i64(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n"
            "buf = torch.zeros(4, dtype=torch.int64)\nbuf[0] = t.data_ptr()\n",
            "import torch\ndef to_i64(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n"
            "buf = torch.zeros(4, dtype=torch.int64)\nbuf[0] = to_i64(t.data_ptr())\n",
        ),
        Invalid(  # a uint64 table the module already writes through its numpy view: the store uses the view
            "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nview = buf.numpy()\nbuf[1] = t.data_ptr()\n",
            "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nview = buf.numpy()\nview[1] = t.data_ptr()\n",
        ),
        Invalid(
            "import torch\ndef f(buf: torch.Tensor, t):\n    buf[0] = t.data_ptr()\n",
            "import torch\ndef f(buf: torch.Tensor, t):\n    buf[0] = torch.tensor(t.data_ptr(), dtype=torch.uint64)\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        fixed_everywhere = SETITEM_FIXED_IN is not None and ctx.config.torch_version_tuple >= SETITEM_FIXED_IN
        for write in ctx.facts.model.scalar_writes:
            if write.in_raises:
                continue
            value = ctx.facts.value(write.value)
            # only a raw Python int goes through int64: tensor-valued stores wrap instead, wrapped values fit
            # (into a uint64 table they are PTR009's), and a name alone never says one scalar is an address
            if value is None or value.kind is not Kind.SCALAR or not value.python_int or value.origin is not Origin.RAW:
                continue
            if not ctx.facts.tensors.is_torch_tensor(write.tensor):
                continue
            dtypes = table_dtypes(ctx, write.tensor)
            unsigned = bool(dtypes) and all(d is not None and d.cls is DtypeClass.UNSIGNED64 for d in dtypes)
            if unsigned and fixed_everywhere:
                continue  # every supported release stores a raw Python int into uint64 exactly
            failure = _failure(
                ctx, unsigned, bool(dtypes) and all(d is not None and d.cls is DtypeClass.SIGNED64 for d in dtypes)
            )
            what = "`fill_()`" if write.how == "fill_" else "element assignment"
            message = (
                f"pointer value written into a torch tensor by {what} of a Python int: torch before 2.14.1 "
                "converts it through int64, so addresses >= 2**63 raise even on uint64 tensors; write through "
                "the numpy view (`.numpy()` / `.np`) or build the tensor from a list with dtype=torch.uint64"
            )
            node = write.node
            span = ctx.source.attribute_name_span(node) if isinstance(node, ast.Attribute) else ctx.span(node)
            helper = wrap_helper(ctx, write)
            if helper is not None:  # the module's own way into an int64 table: follow it
                yield Diagnostic(
                    span,
                    message,
                    _helper_fix(ctx, write, helper),
                    True,
                    f"Store the wrapped value with the module's `{helper}()`, as its other int64 tables are "
                    "filled (the same 64 bits; an int64 element takes it on every torch release)",
                    value.evidence,
                    failure=failure,
                )
                continue
            view = numpy_view(ctx, write) if write.how == "setitem" else None
            if view is not None:  # the module's numpy view of the uint64 table: store through it
                yield Diagnostic(
                    span,
                    message,
                    _view_fix(ctx, write, view),
                    True,
                    f"Store through the module's numpy view `{view}` (numpy stores the full uint64 range on every "
                    "release; the view shares the tensor's memory)",
                    value.evidence,
                    failure=failure,
                )
                continue
            safe, title = _store_safety(ctx, write)
            yield Diagnostic(span, message, _store_fix(ctx, write), safe, title, value.evidence, failure=failure)


def _failure(ctx: RuleContext, unsigned: bool, signed: bool) -> str:
    """Which torch releases raise for this store (the ``torch-version`` setting names the oldest supported)."""
    oldest = ".".join(str(p) for p in ctx.config.torch_version_tuple)
    if unsigned:
        return (
            "a raw address enters a uint64 tensor by element store: torch releases before 2.14.1 convert it "
            f"through int64 and raise `Overflow when unpacking long long` once it is >= 2**63 (the code supports "
            f"torch from {oldest})"
        )
    if signed:
        return "a raw address enters an int64 tensor by element store: every torch release raises once it is >= 2**63"
    return (
        "a raw address enters a tensor by element store: raises once it is >= 2**63 on every torch release for "
        "an int64 tensor, before 2.14.1 for a uint64 one"
    )


def _store_fix(ctx: RuleContext, write: ScalarWrite) -> Callable[[], list[Intent] | None]:
    """``buf[i] = p`` -> ``buf[i] = torch.tensor(p, dtype=torch.uint64)``, spelled with the torch alias."""

    def intents() -> list[Intent] | None:
        alias = module_alias(ctx.module, "torch")
        if alias is None or write.value.__class__ is ast.Starred:
            return None
        scope = ctx.facts.model.scope_of(write.tensor)
        if scope.resolve(alias.partition(".")[0]) is not ctx.facts.model.module_scope:
            return None  # the alias is shadowed where the store is
        start, end = ctx.source.span(write.value)
        return [Intent(start, end, "wrap_uint64_tensor", alias)]

    return intents


def _helper_fix(ctx: RuleContext, write: ScalarWrite, helper: str) -> Callable[[], list[Intent] | None]:
    """``buf[i] = p`` -> ``buf[i] = to_i64(p)``: the module's wrap helper around the stored value."""
    start, end = ctx.source.span(write.value)
    return lambda: [Intent(start, end, "wrap_call", helper)]


def _view_fix(ctx: RuleContext, write: ScalarWrite, view: str) -> Callable[[], list[Intent] | None]:
    """``buf[i] = p`` -> ``buf_np[i] = p``: the written tensor's expression becomes the module's numpy view."""
    start, end = ctx.source.span(write.tensor)
    return lambda: [Intent(start, end, "replace_expression", view)]


def _store_safety(ctx: RuleContext, write: ScalarWrite) -> tuple[bool, str]:
    """Safe when every creation stored in the written tensor is int64 or uint64 (the copy keeps the bits)."""
    creations = stored_creations(ctx, write)
    widths = [classify_dtype(ctx, c) for c in creations]
    title = "Store a uint64 scalar tensor (torch copies its 64 bits exactly)"
    if not creations or not all(
        w is not None and w.cls in (DtypeClass.SIGNED64, DtypeClass.UNSIGNED64) for w in widths
    ):
        return False, f"{title} (unsafe: the tensor's dtype is not known to be 64-bit, so the copy may convert)"
    sign = ctx.consumers.ints.value_sign(write.value)  # a uint64 tensor of a negative int raises
    if sign is not None:
        return False, f"{title} (unsafe: {sign})"
    return True, title


__all__ = ["PointerSetitem"]  # the rule registry takes the Rule subclass this module defines
