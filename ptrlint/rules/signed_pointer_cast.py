"""PTR004 signed-pointer-cast."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Callable

from ..analysis.consumers.uses import choose_fix, describe
from ..analysis.semantic.records import Cast
from ..findings import Intent
from ..fixes import replace_dtype, replace_method_call, spell
from ..names import CAST_METHODS, NUMPY_SCALAR_CAST_WORDS
from .base import Diagnostic, Invalid, Rule, RuleContext


class SignedPointerCast(Rule):
    code = "PTR004"
    name = "signed-pointer-cast"
    summary = "Pointer values converted to a signed integer dtype"
    fix_availability = "unsafe"
    site_words = NUMPY_SCALAR_CAST_WORDS
    site_methods = CAST_METHODS
    doc = """
## What it does
Flags value conversions of pointer-holding tensors, arrays or pointer values to a signed
integer type: `.long()`, `.int()`, `.to(torch.int64)`, `.to(dtype=torch.long)`,
`.type(torch.int64)`, `.astype(np.int64)` and `np.int64(ptr)`.

## Why is this bad?
Converting uint64 addresses to int64 reinterprets the bits: every address at or above 2**63
becomes negative, and a consumer that range-checks, compares or prints it gets it wrong. A
cast to int32 truncates. `.view(torch.int64)` is an explicit bit reinterpretation and is not
flagged.

## Example
```python
torch.ops.ext.swap_blocks(src_ptrs.long(), dst_ptrs.to(torch.int64))
```

## Use instead
```python
torch.ops.ext.swap_blocks(src_ptrs, dst_ptrs)  # keep uint64; fix the consumer's schema
```

## Fix safety
Unsafe: the fix converts to uint64 instead, which changes what the consumer receives (a
legacy op whose schema only accepts int64 will then reject the tensor, and a reader of the
values sees them unsigned). The title names the use of the result that decides (from the same
consumer analysis as PTR001: a compiled op, arithmetic, a caller ptrlint does not see). Review
each one; applied only with `--unsafe-fixes`.

## Options
- `pointer-names`, `lookalike-names`, `pointer-functions` (see PTR001).
"""
    VALID = (
        "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nd = ptrs.to(device)\n",
        "import torch\nkv_indptr = torch.zeros(4, dtype=torch.int32)\nx = kv_indptr.to(torch.int64)\n",
        "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nw = ptrs.view(torch.int64)\n",
        "import numpy as np\nlengths = np.array([a.nbytes for a in xs], dtype=np.uint64)\nw = lengths.astype(np.int64)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nx = ptrs.long()\n",
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nx = ptrs.to(torch.uint64)\n",
            unsafe=True,
        ),
        Invalid(
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nx = ptrs.to(dtype=torch.long)\n",
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\nx = ptrs.to(dtype=torch.uint64)\n",
            unsafe=True,
        ),
        Invalid(
            "import numpy as np\naddrs = np.array([a.ctypes.data for a in xs], dtype=np.uint64)\nfirst = np.int64(addrs[0])\n",
            "import numpy as np\naddrs = np.array([a.ctypes.data for a in xs], dtype=np.uint64)\nfirst = np.uint64(addrs[0])\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for cast in ctx.facts.model.casts:
            if cast.in_raises:
                continue  # `with pytest.raises(...)`: converting to signed is what the test checks
            value = ctx.facts.kind(cast.operand)
            if value is None:
                continue
            spelled = ctx.code(cast.call.func) if cast.method is None else f".{cast.method}()"
            if cast.method in ("to", "type", "astype") and cast.dtype is not None:
                spelled = f".{cast.method}({ctx.code(cast.dtype)})"
            wraps = (
                "wrap to negative numbers"
                if cast.dtype_qname.endswith(("int64", "long", "intp", "longlong", "int_", "builtins.int"))
                else "are truncated"
            )
            message = (
                f"`{spelled}` converts memory addresses to a signed integer: addresses >= 2**63 {wraps}; "
                "keep them uint64 (or reinterpret explicitly with `.view(...)`)"
            )
            func = cast.call.func
            span = (
                ctx.source.attribute_name_span(func)
                if cast.method is not None and isinstance(func, ast.Attribute)
                else ctx.span(func)
            )
            uses = ctx.consumers.of_expression(cast.call, numpy=cast.dtype_qname.startswith("numpy."))
            decider = choose_fix(uses).decider
            why = (
                describe(decider)
                if decider is not None
                else "every use of the result works on uint64, but the values it hands on no longer turn negative"
            )
            consumer = () if decider is None else ((decider.node, f"consumer: {decider.why} ({decider.kind.value})"),)
            yield Diagnostic(
                span,
                message,
                self._intents(ctx, cast),
                False,
                f"Convert to uint64 instead (unsafe: {why})",
                value.evidence + consumer,
            )

    @staticmethod
    def _intents(ctx: RuleContext, cast: Cast) -> Callable[[], list[Intent] | None]:
        def intents() -> list[Intent] | None:
            library = cast.dtype_qname.partition(".")[0]
            if cast.method in ("long", "int", "short"):
                spelled = spell(ctx.module, ctx.source, "torch", cast.scope, "uint64")
                if spelled is None:
                    return None
                text, imports = spelled
                return [*replace_method_call(ctx.source, cast.call, text), *imports]
            if cast.dtype is None:
                return None
            if library == "builtins":
                library = "numpy" if cast.method == "astype" else "torch"
            return replace_dtype(ctx.module, ctx.source, cast.dtype, library, cast.scope, cast.dtype_qname)

        return intents


__all__ = ["SignedPointerCast"]  # the rule registry takes the Rule subclass this module defines
