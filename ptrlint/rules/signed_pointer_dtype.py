"""PTR001 signed-pointer-dtype."""

from __future__ import annotations

from collections.abc import Iterator

from ..analysis.consumers.harm import Harm
from ..analysis.semantic.records import Creation
from ..analysis.values.lattice import Value
from ..analysis.values.substitutions import Substitution, substitutions
from ..findings import Intent
from ..fixes import replace_dtype, spell
from ..names import CREATION_SITE_WORDS, DtypeClass
from ._creation import classify_dtype, dtype_diagnostic, evidence_fits_dtype, object_group, pointer_creations, with_harm
from ._platform_dtype import PlatformDtype, conditional_dtype
from .base import Diagnostic, Invalid, Rule, RuleContext


class SignedPointerDtype(Rule):
    code = "PTR001"
    name = "signed-pointer-dtype"
    summary = "Pointer-holding tensor or array created with a signed 64-bit dtype"
    fix_availability = "sometimes (chosen by the table's consumers: uint64, bit-preserving, or unsafe)"
    site_words = CREATION_SITE_WORDS
    doc = """
## What it does
Flags a tensor or array that holds memory addresses (`data_ptr()`, `.ctypes.data`,
`ctypes.addressof`, `__array_interface__["data"][0]`, ...) and is created with a signed 64-bit
dtype: `torch.int64`, `torch.long`, `np.int64`, `np.intp`, `np.longlong`, `"int64"`, or `int`.
A call of a project factory (`to_table(ptrs, torch.int64)`, defined in any module) is such a
creation. So is a wrapper that *substitutes* a signed dtype for the `torch.uint64` its callers ask
for (`torch.int64 if dtype == torch.uint64 else dtype`, also a monkey-patched `torch.empty`); it is
reported at the substitution, with its callers' evidence, and its fix is unsafe because every
caller's buffer changes.

## Why is this bad?
Device addresses can exceed 2**63 - 1 (Intel XPU, some ROCm and unified-memory setups).
`torch.tensor([2**63 + 5], dtype=torch.int64)` raises `Overflow when unpacking long long`, a
numpy int64 store raises `OverflowError`, and a reinterpreting copy turns the address negative.
The code works on every machine it was tested on and fails on the first one with high addresses.

## Example
```python
ptrs = torch.tensor([t.data_ptr() for t in caches], dtype=torch.int64)
```

## Use instead
```python
ptrs = torch.tensor([t.data_ptr() for t in caches], dtype=torch.uint64)
```

## Fix safety
The fix is chosen by where the table goes (its aliases, copies, the functions it is passed to,
the callers it is returned to, other modules through the project index):
- every use works on uint64 (indexing, `copy_`, `tolist`, `==`, `.to(device)`, Triton
  launches, ...): the dtype token becomes `uint64`, spelled as the file spells it (`th.long` ->
  `th.uint64`, `"int64"` -> `"uint64"`, a from-imported `int64` -> `uint64` added to that import);
- a use needs int64 (code outside the project such as `torch.ops.*` or a compiled extension,
  a collective, a `.dtype` check, a signed element type, torch arithmetic, numpy arithmetic with
  signed arrays): the table is created as uint64 and viewed back, `.view(torch.int64)`, so it
  never overflows and its consumers get the same bits (safe);
- a use depends on the sign (ordering, `max`/`min`, `searchsorted`), the table is received by a
  collective, or a table computed from it is read back: the plain uint64 change is unsafe and
  applied only with `--unsafe-fixes`; its title names the consumer.
A table that no Python int enters (filled by compiled code or a collective) and whose values
never come back as Python ints is not reported: int64 holds those bits exactly.

## Options
- `pointer-names`, `lookalike-names`: the name evidence patterns.
- `buffer-factories`: extra creation calls that take `dtype=`.
- `pointer-functions`: extra calls that return addresses.
"""
    VALID = (
        "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\n",
        "import torch\nblock_ids = torch.tensor(ids, dtype=torch.int64)\n",
        "import torch\nkv_indptr = torch.zeros(9, dtype=torch.int64)\n",
        "import torch\nnum_ptrs = torch.zeros(4, dtype=torch.int64)\n",
        "import torch\noffsets = torch.tensor([t.data_ptr() - base for t in ts], dtype=torch.int64)\n",
        "def f(torch):\n    ptrs = torch.tensor(xs, dtype=torch.int64)\n",
        "import torch\ndef f(dtype):\n    src_ptrs = torch.empty(4, dtype=dtype)\n",
    )
    INVALID = (
        Invalid(  # every reader seen and uint64-ready (a Triton launch): the dtype token changes
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n",
            "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\ncopy_kernel[(1,)](ptrs)\n",
        ),
        Invalid(
            "import torch as th\naddrs = [w.data_ptr() for w in ws]\ntable = th.tensor(addrs, dtype=th.long)\n"
            "print(table[0].item())\n",
            "import torch as th\naddrs = [w.data_ptr() for w in ws]\ntable = th.tensor(addrs, dtype=th.uint64)\n"
            "print(table[0].item())\n",
        ),
        Invalid(
            "from torch import int64 as i64, tensor\nrows = tensor([r.data_ptr() for r in rs], dtype=i64)\nprint(rows.tolist())\n",
            "from torch import int64 as i64, tensor, uint64\nrows = tensor([r.data_ptr() for r in rs], dtype=uint64)\n"
            "print(rows.tolist())\n",
        ),
        Invalid(
            "import numpy\naddrs = numpy.array([a.ctypes.data for a in xs], dtype=numpy.intp)\nprint(addrs == 0)\n",
            "import numpy\naddrs = numpy.array([a.ctypes.data for a in xs], dtype=numpy.uint64)\nprint(addrs == 0)\n",
        ),
        Invalid(
            "import numpy as np\nbases = np.asarray([s.__array_interface__['data'][0] for s in segs], dtype='int64')\n"
            "print(bases[1:])\n",
            "import numpy as np\nbases = np.asarray([s.__array_interface__['data'][0] for s in segs], dtype='uint64')\n"
            "print(bases[1:])\n",
        ),
        Invalid(  # returned to callers ptrlint does not see: created unsigned, handed on as int64
            "import torch\ndef table(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n",
            "import torch\ndef table(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64).view(torch.int64)\n",
        ),
        Invalid(  # no Python int enters, but nothing in sight reads it: readers unseen
            "import torch\nkv_cache_ptrs = torch.empty(8, dtype=torch.int64)\n",
            "import torch\nkv_cache_ptrs = torch.empty(8, dtype=torch.uint64).view(torch.int64)\n",
        ),
        Invalid(
            "import torch\ntable = torch.zeros(4, dtype=torch.int64)\nview = table.numpy()\nview[0] = x.data_ptr()\n"
            "copy_kernel[(1,)](table)\n",
            "import torch\ntable = torch.zeros(4, dtype=torch.uint64)\nview = table.numpy()\nview[0] = x.data_ptr()\n"
            "copy_kernel[(1,)](table)\n",
        ),
        Invalid(  # the dtype comes from a `**` dict that may serve other calls: overridden in this call only
            "import torch\nopts = dict(dtype=torch.int64, device='cpu')\nptrs = torch.tensor([t.data_ptr() for t in ts], **opts)\n"
            "copy_kernel[(1,)](ptrs)\n",
            "import torch\nopts = dict(dtype=torch.int64, device='cpu')\n"
            'ptrs = torch.tensor([t.data_ptr() for t in ts], **{**opts, "dtype": torch.uint64})\ncopy_kernel[(1,)](ptrs)\n',
        ),
        Invalid(
            "import torch\nimport ext\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\next.launch(ptrs)\n",
            "import torch\nimport ext\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64).view(torch.int64)\n"
            "ext.launch(ptrs)\n",
        ),
        Invalid(
            "import torch\nbase_ptrs = torch.tensor([k.data_ptr() for k in ks], dtype=torch.int64)\nv = base_ptrs + 8\n",
            "import torch\nbase_ptrs = torch.tensor([k.data_ptr() for k in ks], dtype=torch.uint64)\nv = base_ptrs + 8\n",
            unsafe=True,
        ),
        Invalid(  # a binding may return int64_t: the address may come in negative, and uint64 rejects that
            "import torch\nraddr = engine.get_remote_addr()\nraddr_tensor = torch.tensor([raddr], dtype=torch.int64)\n"
            "copy_kernel[(1,)](raddr_tensor)\n",
            "import torch\nraddr = engine.get_remote_addr()\nraddr_tensor = torch.tensor([raddr], dtype=torch.uint64)\n"
            "copy_kernel[(1,)](raddr_tensor)\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for creation, diagnostic in self._tables(ctx):
            yield object_group(ctx, creation, diagnostic)
        for substitution in substitutions(ctx.facts):  # wrappers that hand signed tables to pointer requests
            yield self._substitution(ctx, substitution)

    def _tables(self, ctx: RuleContext) -> Iterator[tuple[Creation, Diagnostic]]:
        for creation, evidence in pointer_creations(ctx):
            info = classify_dtype(ctx, creation)
            if info is None and creation.dtype is not None:
                per_platform = conditional_dtype(ctx, creation)
                if per_platform is not None and evidence_fits_dtype(evidence, per_platform.info):
                    harm = ctx.consumers.harm.signed_table(creation)
                    if harm is not None:
                        yield creation, self._per_platform(ctx, creation, per_platform, evidence, harm)
                continue
            if info is None or info.cls is not DtypeClass.SIGNED64 or not evidence_fits_dtype(evidence, info):
                continue
            dtype_text = ctx.code(creation.dtype) if creation.dtype is not None else "int64"
            message = (
                f"{ctx.creation_target(creation)} holds memory addresses but is created as signed `{dtype_text}`: "
                "addresses >= 2**63 overflow or turn negative; use an unsigned 64-bit dtype (uint64)"
            )
            harm = ctx.consumers.harm.signed_table(creation)
            if harm is None:
                # only Python ints overflow: bits written by kernels, extensions or collectives fit int64
                # exactly, unless the values come back out as Python ints or go where ptrlint cannot see
                continue
            yield creation, with_harm(dtype_diagnostic(ctx, creation, info, evidence, message), harm)

    @staticmethod
    def _per_platform(
        ctx: RuleContext, creation: Creation, found: PlatformDtype, evidence: Value, harm: Harm
    ) -> Diagnostic:
        """The signed branch of a per-platform dtype, where a platform that takes it hands out high addresses.
        The fix keeps each platform's dtype for its consumers (a CUDA op that checks int64) and creates the
        table unsigned: ``torch.empty(n, dtype=torch.uint64).view(<the per-platform dtype>)``."""
        message = (
            f"{ctx.creation_target(creation)} holds memory addresses but is created as signed "
            f"`{ctx.code(found.branch)}` on {found.where()}: addresses >= 2**63 overflow or turn negative there; "
            "create it unsigned on every platform and hand each its dtype with `.view(...)`"
        )
        failure = f"on {found.where()} (the branch `{ctx.code(found.branch)}` is taken there): {harm.failure}"
        library = creation.library or "torch"
        whole = found.whole
        entry = ctx.consumers.ints.python_int_entry(creation)
        stores = entry is not None and entry.how != "at creation"

        def intents() -> list[Intent] | None:
            spelled = spell(ctx.module, ctx.source, library, creation.scope, "uint64")
            if spelled is None or creation.library is None:
                return None
            text, imports = spelled
            start, end = ctx.source.span(whole)
            call_start, call_end = ctx.source.span(creation.call)
            return [
                Intent(start, end, "replace_expression", text),
                *imports,
                Intent(call_start, call_end, "append_view", ctx.code(whole)),
            ]

        sign = ctx.consumers.ints.sign_unknown(creation, stores=False)
        title = "Create it unsigned and view it as each platform's dtype (keeps the int64 consumer's bits)"
        safe = not stores and sign is None and creation.library is not None
        if not safe:
            why = sign or (
                "Python ints are stored into it after creation, through the signed view"
                if stores
                else "a buffer factory has no `.view`"
            )
            title = f"{title} (unsafe: {why})"
        diagnostic = Diagnostic(
            ctx.span(found.branch),
            message,
            intents,
            safe,
            title,
            evidence.evidence,
            failure=failure,
            severity=harm.severity,
        )
        return diagnostic

    @staticmethod
    def _substitution(ctx: RuleContext, found: Substitution) -> Diagnostic:
        dtype = found.dtype
        name = found.function.name
        message = (
            f"`{name}` substitutes signed `{ctx.code(dtype)}` for the unsigned dtype its callers ask for, so the "
            "pointer tables it makes overflow or turn negative for addresses >= 2**63; keep the unsigned dtype"
        )
        qname = ctx.facts.model.types.dtype_qname(dtype) or "torch.int64"
        library = "numpy" if qname.startswith("numpy.") else "torch"

        def intents() -> list[Intent] | None:
            return replace_dtype(ctx.module, ctx.source, dtype, library, ctx.facts.model.scope_of(dtype), qname)

        title = "Keep the unsigned dtype the callers ask for (unsafe: every caller's table becomes uint64)"
        return Diagnostic(ctx.span(dtype), message, intents, False, title, found.evidence)


__all__ = ["SignedPointerDtype"]  # the rule registry takes the Rule subclass this module defines
