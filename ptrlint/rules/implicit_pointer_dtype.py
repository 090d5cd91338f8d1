"""PTR002 implicit-pointer-dtype."""

from __future__ import annotations

from collections.abc import Iterator

from ..names import CREATION_SITE_WORDS
from ._creation import implicit_dtype_applies, missing_dtype_diagnostic, object_group, pointer_creations, with_harm
from .base import Diagnostic, Invalid, Rule, RuleContext


class ImplicitPointerDtype(Rule):
    code = "PTR002"
    name = "implicit-pointer-dtype"
    summary = "Pointer values passed to torch.tensor/np.array with no dtype (inferred as int64)"
    fix_availability = "sometimes (chosen by the table's consumers, as for PTR001)"
    site_words = CREATION_SITE_WORDS
    doc = """
## What it does
Flags `torch.tensor`, `torch.as_tensor`, `np.array`, `np.asarray` (and friends) called on
pointer values, or assigned to a pointer-named target, without a `dtype`.

## Why is this bad?
Without a dtype, torch and numpy infer int64 from Python ints. Addresses at or above 2**63 then
raise `Overflow when unpacking long long` (torch) or silently become an object/uint64 array
depending on the values (numpy): the dtype of the buffer changes with the machine it runs on.

## Example
```python
ptrs = torch.tensor([t.data_ptr() for t in caches], device="cuda")
```

## Use instead
```python
ptrs = torch.tensor([t.data_ptr() for t in caches], device="cuda", dtype=torch.uint64)
```

## Fix safety
The fix appends `dtype=<module>.uint64` as the last argument, spelled with the module alias
of the callee (`th.tensor` -> `dtype=th.uint64`); in a multi-line call with a trailing comma it
gets its own line. As for PTR001 the table's consumers choose: where a use needs int64 (code
outside the project, a collective, a `.dtype` check, torch arithmetic) the call also gets
`.view(<module>.int64)`, so the consumers receive the int64 they received before (safe); where
a use depends on the sign (ordering, `max`/`min`, `searchsorted`) the fix is unsafe. A `*_like`
copy that only inherits a non-address dtype keeps the older rule: safe unless the analysed scope
applies arithmetic, ordering or reductions to it.

## Options
- `pointer-names`, `lookalike-names`, `pointer-functions` (see PTR001).
"""
    VALID = (
        "import torch\nranks = torch.as_tensor([w.shape[0] for w in ws])\n",
        "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\n",
        "import torch\noffsets = torch.tensor([v.data_ptr() - base.data_ptr() for v in vs])\n",
        "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], **opts)\n",
    )
    INVALID = (
        Invalid(
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], device='cuda')\ncopy_kernel[(1,)](ptrs)\n",
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], device='cuda', dtype=torch.uint64)\n"
            "copy_kernel[(1,)](ptrs)\n",
        ),
        Invalid(
            "import numpy as np\naddrs = []\nfor c in chunks:\n    addrs.append(c.ctypes.data)\nt = np.array(addrs)\nprint(t[0])\n",
            "import numpy as np\naddrs = []\nfor c in chunks:\n    addrs.append(c.ctypes.data)\nt = np.array(addrs, dtype=np.uint64)\n"
            "print(t[0])\n",
        ),
        Invalid(
            "import torch\nimport ext\next.launch(torch.tensor([t.data_ptr() for t in ts]))\n",
            "import torch\nimport ext\next.launch(torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64).view(torch.int64))\n",
        ),
        Invalid(  # names only: the values may be negative (wrapped by whoever made them)
            "import torch\npeer_ptrs = torch.as_tensor(raw)\ncopy_kernel[(1,)](peer_ptrs)\n",
            "import torch\npeer_ptrs = torch.as_tensor(raw, dtype=torch.uint64)\ncopy_kernel[(1,)](peer_ptrs)\n",
            unsafe=True,
        ),
        Invalid(
            "from torch import tensor\nx = tensor(\n    [b.data_ptr() for b in bs],\n    device=d,\n)\ncopy_kernel[(1,)](x)\n",
            "from torch import tensor, uint64\nx = tensor(\n    [b.data_ptr() for b in bs],\n    device=d,\n    dtype=uint64,\n)\n"
            "copy_kernel[(1,)](x)\n",
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for creation, evidence in pointer_creations(ctx):
            if creation.like_source is not None:
                copier = creation.qname.rpartition(".")[2]
                message = (
                    f"{ctx.creation_target(creation)} holds memory addresses but `{copier}` gives it the dtype of "
                    f"`{ctx.code(creation.like_source)}`, which holds none (a signed or narrow dtype); pass an "
                    "unsigned 64-bit dtype (uint64)"
                )
            else:
                message = (
                    f"{ctx.creation_target(creation)} holds memory addresses but has no dtype, so it is inferred as "
                    "signed int64 and addresses >= 2**63 overflow; pass an unsigned 64-bit dtype (uint64)"
                )
            if not implicit_dtype_applies(ctx, creation, evidence):
                continue
            harm = ctx.consumers.harm.signed_table(creation)
            if harm is None:
                continue  # only bits enter it, and its values stay where ptrlint follows them
            diagnostic = missing_dtype_diagnostic(ctx, creation, evidence, message)
            if diagnostic is not None:
                yield object_group(ctx, creation, with_harm(diagnostic, harm))


__all__ = ["ImplicitPointerDtype"]  # the rule registry takes the Rule subclass this module defines
