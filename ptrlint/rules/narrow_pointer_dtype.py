"""PTR003 narrow-pointer-dtype."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.consumers.harm import Harm
from ..findings import ERROR
from ..names import CREATION_SITE_WORDS, DtypeClass
from ._creation import classify_dtype, dtype_diagnostic, evidence_fits_dtype, pointer_creations, with_harm
from .base import Diagnostic, Invalid, Rule, RuleContext


class NarrowPointerDtype(Rule):
    code = "PTR003"
    name = "narrow-pointer-dtype"
    summary = "Pointer-holding buffer with a dtype narrower than 64 bits, or floating point"
    fix_availability = "sometimes (safe when every use is seen and works on uint64)"
    site_words = CREATION_SITE_WORDS
    doc = """
## What it does
Flags a pointer-holding tensor or array created with `int32`, `uint32`, `int16`, `float32`,
`float64`, `bfloat16` or any other dtype that cannot hold every 64-bit address.

## Why is this bad?
A 48-bit user-space address does not fit in 32 bits: vectorised casts truncate it silently.
float64 is exact only below 2**53, so larger addresses come back rounded. Either way the
kernel later dereferences a different address than the one stored.

## Example
```python
ptrs = torch.tensor([b.data_ptr() for b in blocks], dtype=torch.int32)
```

## Use instead
```python
ptrs = torch.tensor([b.data_ptr() for b in blocks], dtype=torch.uint64)
```

## Fix safety
The dtype token becomes uint64 (same spelling rules as PTR001), chosen by the table's consumers
as for PTR001: safe when every use of the table is seen and works on uint64 and every Python int
that enters it is known not to be negative. Where a use needs another dtype (arithmetic,
ordering, a compiled op, a collective) or is not seen (returned to unknown callers, stored where
nothing reads it), the fix is unsafe: no view can hand a consumer the narrow dtype it had, so the
title names that use.

## Options
- `pointer-names`, `lookalike-names`, `buffer-factories`, `pointer-functions` (see PTR001).
"""
    VALID = (
        "import torch\nsizes = torch.tensor([b.nbytes for b in blocks], dtype=torch.int32)\n",
        "import numpy as np\nnbytes = np.fromiter((b.nbytes for b in bs), dtype=np.uint32)\n",
        "import torch\nkv_indptr = torch.zeros(9, dtype=torch.int32)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nptrs = torch.tensor([b.data_ptr() for b in blocks], dtype=torch.int32)\ncopy_kernel[(1,)](ptrs)\n",
            "import torch\nptrs = torch.tensor([b.data_ptr() for b in blocks], dtype=torch.uint64)\ncopy_kernel[(1,)](ptrs)\n",
        ),
        Invalid(
            "import torch\nlocal = torch.tensor([b.data_ptr() for b in bs], dtype=torch.float64)\nprint(local.tolist())\n",
            "import torch\nlocal = torch.tensor([b.data_ptr() for b in bs], dtype=torch.uint64)\nprint(local.tolist())\n",
        ),
        Invalid(
            "import numpy as np\naddrs = np.fromiter((b.ctypes.data for b in bs), dtype=np.uint32)\nprint(addrs[0])\n",
            "import numpy as np\naddrs = np.fromiter((b.ctypes.data for b in bs), dtype=np.uint64)\nprint(addrs[0])\n",
        ),
        Invalid(  # stored where nothing in sight reads it: its consumers may need the narrow dtype
            "import torch\nclass R:\n    def f(self):\n        self.state_addrs = self._make_buffer(4, dtype=torch.int32)\n",
            "import torch\nclass R:\n    def f(self):\n        self.state_addrs = self._make_buffer(4, dtype=torch.uint64)\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for creation, evidence in pointer_creations(ctx):
            info = classify_dtype(ctx, creation)
            if info is None or info.cls is not DtypeClass.NARROW or not evidence_fits_dtype(evidence, info):
                continue
            dtype_text = ctx.code(creation.dtype) if creation.dtype is not None else "?"
            message = (
                f"{ctx.creation_target(creation)} holds memory addresses but is created as `{dtype_text}`, which "
                "truncates or rounds 64-bit addresses; use an unsigned 64-bit dtype (uint64)"
            )
            width = (
                "a floating dtype rounds it (exact only below 2**53 for float64, 2**24 for float32)"
                if info.float
                else "a dtype narrower than 64 bits cuts its high bits"
            )
            diagnostic = dtype_diagnostic(ctx, creation, info, evidence, message)
            yield with_harm(diagnostic, Harm(f"an address stored in it loses information: {width}", ERROR))


__all__ = ["NarrowPointerDtype"]  # the rule registry takes the Rule subclass this module defines
