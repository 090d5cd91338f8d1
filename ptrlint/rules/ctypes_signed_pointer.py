"""PTR006 ctypes-signed-pointer."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Callable

from ..analysis.semantic.scopes import LiteScope
from ..analysis.values.ctypes_slots import CtypesSlots
from ..analysis.values.lattice import Kind
from ..findings import ERROR, NOTE, Intent
from ..fixes import import_name_intents
from ..names import CTYPES_NARROW, CTYPES_SIGNED64
from .base import Diagnostic, Invalid, Rule, RuleContext


class CtypesSignedPointer(Rule):
    code = "PTR006"
    name = "ctypes-signed-pointer"
    summary = "Pointer value wrapped in a signed (or narrow) ctypes integer"
    fix_availability = "sometimes (safe for 64-bit types, unsafe for narrower ones)"
    site_words = ("ctypes",)
    doc = """
## What it does
Flags a pointer value passed to `ctypes.c_long`, `c_int64`, `c_longlong`, `c_ssize_t`, or a
narrower ctypes integer such as `c_int`. It also flags ctypes storage of such a type that
receives addresses, and reports it at the type:
- pointer views: `ctypes.cast(a, ctypes.POINTER(ctypes.c_int64))[i] = t.data_ptr()`;
- arrays: `(c_int64 * n).from_address(a)` or `(c_int64 * n)()` with addresses assigned to its
  elements, and `(c_int64 * n)(*ptrs)`;
- `ctypes.Structure` and `Union` fields declared `c_int64` in `_fields_` that receive addresses
  (`args.src = p`, `Args(src=p)`, `Args(p, ...)`).

## Why is this bad?
`c_int64(addr)` silently wraps an address >= 2**63 to a negative number, and the C side gets
a sign-extended value when it is widened or compared. `c_int` truncates to 32 bits today.
Addresses belong in `ctypes.c_void_p` or `ctypes.c_uint64`.

## Example
```python
lib.copy(ctypes.c_int64(src.data_ptr()), ctypes.c_size_t(n))
```

## Use instead
```python
lib.copy(ctypes.c_uint64(src.data_ptr()), ctypes.c_size_t(n))
```

## Fix safety
`c_long`/`c_int64`/`c_longlong`/`c_ssize_t` -> `c_uint64` is safe (same width). For 32-bit and
narrower types the fix changes the width passed to the foreign function, so it is unsafe.
A from-imported name gets `c_uint64` appended to the same `from ctypes import ...`.

## Options
- `pointer-functions` (see PTR001).
"""
    VALID = (
        "import ctypes\nctypes.c_void_p(t.data_ptr())\n",
        # an argument block: the fields only travel as bytes to the kernel, ctypes keeps the bits
        'import ctypes\nclass Args(ctypes.Structure):\n    _fields_ = [("src", ctypes.c_int64)]\n'
        "lib.launch(ctypes.byref(Args(src=t.data_ptr())))\n",
        "import ctypes\nview = ctypes.cast(a, ctypes.POINTER(ctypes.c_int64))\nview[0] = n\n",
        "import ctypes\nctypes.c_uint64(t.data_ptr())\n",
        "import ctypes\nctypes.c_int(n)\n",
    )
    INVALID = (
        Invalid(
            "import ctypes\nctypes.c_int64(t.data_ptr())\n",
            "import ctypes\nctypes.c_uint64(t.data_ptr())\n",
        ),
        Invalid(
            "from ctypes import c_longlong\naddr = buf.ctypes.data\nc_longlong(addr)\n",
            "from ctypes import c_longlong, c_uint64\naddr = buf.ctypes.data\nc_uint64(addr)\n",
        ),
        Invalid(  # read back through the view: a negative number above 2**63
            "import ctypes\nview = ctypes.cast(a, ctypes.POINTER(ctypes.c_int64))\nview[0] = t.data_ptr()\nprint(view[0])\n",
            "import ctypes\nview = ctypes.cast(a, ctypes.POINTER(ctypes.c_uint64))\nview[0] = t.data_ptr()\nprint(view[0])\n",
        ),
        Invalid(  # the field is read back as a number
            'import ctypes\nclass Args(ctypes.Structure):\n    _fields_ = [("src", ctypes.c_int64)]\n'
            "args = Args(src=t.data_ptr())\nassert args.src != 0\n",
            'import ctypes\nclass Args(ctypes.Structure):\n    _fields_ = [("src", ctypes.c_uint64)]\n'
            "args = Args(src=t.data_ptr())\nassert args.src != 0\n",
        ),
        Invalid(
            "import ctypes\nctypes.c_int(t.data_ptr())\n",
            "import ctypes\nctypes.c_uint64(t.data_ptr())\n",
            unsafe=True,
        ),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        yield from self._wrapping_calls(ctx)
        yield from self._typed_storage(ctx)

    def _wrapping_calls(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """``c_int64(p)``, ``c_int(p)``: a pointer value wrapped in a signed (or narrow) ctypes integer."""
        for call in ctx.facts.model.ctypes_calls:
            if call.ctype not in CTYPES_SIGNED64 and call.ctype not in CTYPES_NARROW:
                continue
            if call.in_raises or (call.valued and call.ctype in CTYPES_SIGNED64):
                continue  # `c_int64(p).value`: a deliberate wrap to the signed int with the same bits
            value = ctx.facts.kind(call.arg)
            if value is None or value.kind is not Kind.SCALAR:
                continue
            safe = call.ctype in CTYPES_SIGNED64
            effect = "wraps addresses >= 2**63 to negative" if safe else "truncates the address"
            message = (
                f"pointer value wrapped in signed ctypes `{call.ctype}`, which {effect}; use `c_uint64` or `c_void_p`"
            )
            if safe:  # the C side gets the same 64 bits: a doubt (who reads it as a number?), not a failure
                failure, severity = (
                    (
                        f"`{call.ctype}` keeps the address's 64 bits but reads them as signed: a C callee "
                        "that widens, compares or divides it, or Python code reading `.value`, sees a "
                        "negative number once the address is >= 2**63"
                    ),
                    NOTE,
                )
            else:
                failure, severity = f"`{call.ctype}` keeps only its low bits: the address is cut silently", ERROR
            yield Diagnostic(
                ctx.span(call.call),
                message,
                self._intents(ctx, call.call.func, call.scope),
                safe,
                "Use c_uint64",
                value.evidence,
                failure=failure,
                severity=severity,
            )

    def _typed_storage(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        """ctypes storage of a signed (or narrow) type that receives addresses, reported at the type."""
        for slot in CtypesSlots(ctx.facts).slots():  # pointer views, arrays and struct fields typed signed
            safe = slot.ctype in CTYPES_SIGNED64
            severity, group = ERROR, None
            if safe:
                harm = ctx.consumers.harm
                read = harm.ctypes_read_back(slot.field, slot.container)
                if read is not None:
                    failure = (
                        f"ctypes stores the address's bits and reads them back as signed (line "
                        f"{getattr(read, 'lineno', 0)}): an address >= 2**63 comes out negative"
                    )
                else:
                    leaves = harm.ctypes_escape(slot.owner, slot.container)
                    if leaves is None:
                        continue  # only travels as bytes (an argument block): ctypes keeps the bits
                    failure = (
                        f"ctypes keeps the address's bits, but the storage leaves for code ptrlint cannot see "
                        f"(line {getattr(leaves, 'lineno', 0)}), which may read it as a negative number once "
                        "the address is >= 2**63"
                    )
                    severity = NOTE
                    if slot.owner is not None:  # one note per Structure class, not one per field
                        group = (
                            ("ctypes", slot.owner),
                            ctx.facts.model.class_nodes[slot.owner].name,
                            slot.field or "?",
                            slot.type_node,
                        )
            else:
                failure = f"`{slot.ctype}` keeps only its low bits: the address is cut silently"
            effect = "wraps addresses >= 2**63 to negative" if safe else "truncates the address"
            message = (
                f"pointer value written into a {slot.what} typed `{slot.ctype}`, which {effect}; "
                "declare it `c_uint64` (or `c_void_p`)"
            )
            yield Diagnostic(
                ctx.span(slot.type_node),
                message,
                self._intents(ctx, slot.type_node, slot.scope),
                safe,
                "Use c_uint64",
                slot.value.evidence,
                failure=failure,
                severity=severity,
                group=group,
            )

    @staticmethod
    def _intents(ctx: RuleContext, func: ast.expr, scope: LiteScope | None) -> Callable[[], list[Intent] | None]:
        """``ctypes.c_int64`` -> ``ctypes.c_uint64``; a from-imported ``c_int64`` -> ``c_uint64`` (imported)."""

        def intents() -> list[Intent] | None:
            start, end = ctx.span(func)
            if isinstance(func, ast.Attribute):
                return [Intent(start, end, "rename_attribute", "c_uint64")]
            if isinstance(func, ast.Name):
                imports = import_name_intents(ctx.module, ctx.source, "ctypes", "c_uint64", scope)
                if imports is None:
                    return None
                return [Intent(start, end, "replace_name", "c_uint64"), *imports]
            return None

        return intents


__all__ = ["CtypesSignedPointer"]  # the rule registry takes the Rule subclass this module defines
