"""PTR007 signed-pointer-arithmetic."""

from __future__ import annotations

import ast
from typing import Iterator

from ..analysis.lattice import Kind, Origin
from .base import Diagnostic, Invalid, Rule, RuleContext


class SignedPointerArithmetic(Rule):
    code = "PTR007"
    name = "signed-pointer-arithmetic"
    summary = "Pointer value (a Python int) combined with a signed-integer numpy array"
    fix_availability = "none"
    doc = """
## What it does
Flags `+`, `-` or `*` between a pointer value that is a plain Python int (`t.data_ptr()`,
`a.ctypes.data`, a variable holding one) and a numpy array of a signed integer dtype
(`np.arange(n)`, `ids.astype(np.int64)`, an int64 array, or arithmetic on one).

## Why is this bad?
numpy converts the Python int to the array's dtype before it computes. An address at or above
2**63 does not fit int64, so vectorised address arithmetic such as
`base + ids.astype(np.int64) * stride` raises `OverflowError` on exactly the machines with high
addresses, and works everywhere else. torch tensor arithmetic wraps silently instead of raising
and is not flagged here.

## Example
```python
rows = np.arange(n)
addrs = cache.data_ptr() + rows * cache.stride(0) * cache.element_size()
```

## Use instead
```python
rows = np.arange(n, dtype=np.uint64)
addrs = np.uint64(cache.data_ptr()) + rows * np.uint64(cache.stride(0) * cache.element_size())
```

## Fix safety
No automatic fix: every operand has to become uint64 (`np.uint64(ptr) + ids.astype(np.uint64) *
np.uint64(stride)`), and mixing uint64 with a signed array turns the result into float64, so
the rewrite needs a reviewer.

## Options
- `pointer-functions` (see PTR001).
"""
    VALID = (
        "import numpy as np\ndef f(t, n):\n    rows = np.arange(n, dtype=np.uint64)\n"
        "    return np.uint64(t.data_ptr()) + rows * np.uint64(t.stride(0))\n",
        "import numpy as np\ndef f(t, n):\n    return np.arange(n) * t.stride(0) * t.element_size()\n",
        "import torch\ndef f(t, n):\n    return torch.arange(n) * t.stride(0) + t.data_ptr()\n",
        "import numpy as np\ndef f(t, base, n):\n    return t.data_ptr() - base + np.arange(n)\n",
    )
    INVALID = (
        Invalid("import numpy as np\ndef f(t, n):\n    return t.data_ptr() + np.arange(n) * t.stride(0)\n"),
        Invalid(
            "import numpy as np\ndef f(pool, pages, size):\n    origin = pool.data_ptr()\n"
            "    return origin + pages.astype(np.int64) * size\n"
        ),
        Invalid("import numpy as np\ndef f(a, n):\n    ids = np.zeros(n, dtype=np.int64)\n    return a.ctypes.data + ids\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        facts = ctx.facts
        if not facts.c.imports_numpy:
            return
        reported: set[int] = set()
        for node in reversed(facts.c.binops):  # inner expressions first: report each combination once
            for pointer, other in ((node.left, node.right), (node.right, node.left)):
                if any(id(n) in reported for n in ast.walk(pointer) if isinstance(n, ast.BinOp)):
                    continue
                value = facts.value(pointer)
                if value is None or value.origin is not Origin.RAW or value.kind is not Kind.SCALAR or not value.python_int:
                    continue
                if not facts.tensors.is_signed_numpy_array(other):
                    continue
                reported.add(id(node))
                message = (
                    "pointer value (a Python int) combined with a signed-integer numpy array: numpy converts the "
                    "address to int64, which raises OverflowError once it is >= 2**63; compute in uint64: "
                    "`np.uint64(ptr) + ids.astype(np.uint64) * np.uint64(stride)`"
                )
                yield Diagnostic(ctx.span(node), message, None, False, "", value.evidence)
                break
