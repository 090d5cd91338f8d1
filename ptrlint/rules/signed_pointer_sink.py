"""PTR008 signed-pointer-sink."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

from ..analysis.consumers.harm import source_of
from ..analysis.values.address_apis import KNOWN_LIBRARIES
from ..analysis.values.lattice import Kind, Origin, Value
from ..discovery import display_path
from ..findings import Intent
from ._op_schemas import op_schemas
from .base import Diagnostic, Invalid, Rule, RuleContext
from .wrapped_pointer_unsigned import MASK

# array.array and struct type codes (native sizes on a 64-bit Linux or macOS host): what each does with
# an address. Signed 64-bit codes raise for an address >= 2**63 and take a wrapped value; narrower
# codes and floats fail or round for any address above their range, wrapped or not.
SIGNED64_CODES = {"q": "Q", "l": "L", "n": "N"}  # -> the unsigned code of the same width
NARROW_CODES = frozenset("bBhHiIefd")
_STRUCT_TOKEN = re.compile(r"(\d*)([xcbB?hHiIlLqQnNefdspP])")


@dataclass(frozen=True)
class Sink:
    """An argument that a call stores as a signed (or narrow) integer."""

    call: ast.Call
    arg: ast.expr  # the value passed
    what: str  # "`array.array('q')`", "`struct.pack` format `q`", ...
    effect: str  # how it fails
    narrow: bool  # narrower than 64 bits: even a wrapped value is cut
    table: bool  # a sequence of values (each element is stored)
    code_node: ast.Constant | None = None  # the type-code string, where the fix goes
    code_offset: int = 0  # the code's index in that string
    unsigned: str | None = None  # the unsigned code of the same width
    op: bool = False  # an argument of a custom op (int64 by design: the address goes in wrapped)
    rejects_negative: bool = False  # an unsigned parameter: a wrapped address raises, a raw one passes


class SignedPointerSink(Rule):
    code = "PTR008"
    name = "signed-pointer-sink"
    summary = "Pointer value passed to an API that stores it as a signed or narrow integer"
    fix_availability = "sometimes (type codes: safe when every value is a non-negative address)"
    site_words = ("array", "pack", "Shape", "ops", "custom_op")
    doc = """
## What it does
Flags an address passed, as a Python int, to an API that converts it to a signed 64-bit (or narrower)
integer before anything else happens:
- `array.array("q", ptrs)` (and `"l"`, `"i"`, `"h"`, `"b"`, floats);
- `struct.pack("q", p)`, `struct.pack_into`, `struct.Struct("q").pack(p)` (any signed or narrow code
  in the format that receives the address);
- `tvm_ffi.Shape(ptrs)` (int64 inside);
- an integer argument of a torch custom op: `torch.ops.ns.op(p)` (an `int`, `SymInt` or `int[]` in
  its schema, or any integer argument where the schema is not in the project), and a
  `torch.library.custom_op` function's parameter annotated `int`;
- an argument of a compiled function whose Cython declaration the project ships (`lib.pxd` or
  `lib.pyx` beside the extension): a raw address into a parameter declared `intptr_t`, `int64_t`,
  `Py_ssize_t` or `long` (or a narrower C integer), and a wrapped one (negative from 2**63 on, CuPy's
  `.data.ptr`) into one declared `size_t`, `uintptr_t` or `uint64_t`.

## Why is this bad?
Each of these raises for an address >= 2**63 (Intel XPU, some ROCm and unified-memory setups):
`OverflowError` from `array.array`, `struct.error: argument out of range` from `struct`,
`ValueError` from `tvm_ffi.Shape`, `RuntimeError: ... Expected a value of type 'int'` from a custom op,
before the op runs; Cython raises `OverflowError` converting the argument before the compiled
function's body runs. Narrow codes cut every address above their range.

## Example
```python
table = torch.frombuffer(array.array("q", ptrs), dtype=torch.long)
```

## Use instead
```python
table = torch.frombuffer(array.array("Q", ptrs), dtype=torch.long)  # same bytes, no range error
```

## Fix safety
A signed 64-bit type code becomes its unsigned twin (`q` -> `Q`, `l` -> `L`): the bytes are the same
for every value that worked before, and addresses >= 2**63 stop raising. It is safe when every value
is a non-negative address; a value that may be negative (wrapped, or untraced) makes it unsafe.
Arguments of custom ops and `tvm_ffi.Shape` take int64 by design: pass the address wrapped into
int64 range (`p - (1 << 64) if p >= 1 << 63 else p`). Where the module has its own wrap helper (a
function of one parameter that returns it wrapped, `_to_i64_ptr(p)`), the fix passes a scalar op
argument through it: safe, the op gets the same 64 bits; otherwise there is no automatic fix. The
same holds for a Cython parameter declared signed. A wrapped address into an unsigned Cython parameter
is masked to 64 bits (`v & 0xFFFF_FFFF_FFFF_FFFF`: the raw address, the same bits): always safe.

## Options
- `pointer-functions` (see PTR001): more calls whose results are addresses.
"""
    VALID = (
        "import array\na = array.array('Q', [t.data_ptr() for t in ts])\n",
        "import array\nsizes = array.array('q', [t.numel() for t in ts])\n",
        "import struct\nstruct.pack('<Q', t.data_ptr())\n",
        "import torch\ntorch.ops.my.op(t, t.numel())\n",
    )
    INVALID = (
        Invalid(
            "import array\nimport torch\ntable = torch.frombuffer(array.array('q', [t.data_ptr() for t in ts]), "
            "dtype=torch.long)\n",
            "import array\nimport torch\ntable = torch.frombuffer(array.array('Q', [t.data_ptr() for t in ts]), "
            "dtype=torch.long)\n",
        ),
        Invalid(
            "import struct\nblob = struct.pack('<qi', t.data_ptr(), 4)\n",
            "import struct\nblob = struct.pack('<Qi', t.data_ptr(), 4)\n",
        ),
        Invalid("import tvm_ffi\npeers = tvm_ffi.Shape(tuple(v.data_ptr() for v in views))\n"),
        Invalid("import torch\ntorch.ops.my_ext.copy_blocks(t.data_ptr(), 16)\n"),
    )

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        schemas = op_schemas(ctx)
        for call in ctx.facts.model.calls:
            for sink in sinks(ctx, call, schemas):
                value = ctx.facts.value(sink.arg)
                if not _reaches(value, sink):
                    continue
                assert value is not None
                yield self._diagnostic(ctx, sink, value)

    @staticmethod
    def _diagnostic(ctx: RuleContext, sink: Sink, value: Value) -> Diagnostic:
        stored = "an unsigned" if sink.rejects_negative else "a narrow" if sink.narrow else "a signed 64-bit"
        message = f"pointer value passed to {sink.what}, which stores it as {stored} integer: {sink.effect}"
        failure = (
            f"{'addresses' if sink.table else 'an address'} ({source_of(value, first=True)}) "
            f"{'enter' if sink.table else 'enters'} {sink.what}: {sink.effect}"
        )
        if sink.rejects_negative:  # a wrapped address: its 64 bits, read unsigned, are the raw address again
            start, end = ctx.span(sink.arg)
            return Diagnostic(
                ctx.span(sink.call.func),
                message.replace("pointer value", "wrapped (signed) pointer value", 1),
                lambda: [Intent(start, end, "mask_uint64", MASK)],
                True,
                "Mask the value to 64 bits (the raw address)",
                value.evidence,
                failure=failure,
            )
        if sink.code_node is None or sink.unsigned is None:
            helpers = ctx.facts.flow.results.wrap_helpers() if sink.op and not sink.table else []
            if helpers:  # the module's own way to hand an address to int64 code: use it
                start, end = ctx.span(sink.arg)
                helper = helpers[0]
                return Diagnostic(
                    ctx.span(sink.call.func),
                    message,
                    lambda: [Intent(start, end, "wrap_call", helper)],
                    True,
                    f"Wrap the address into int64 range with the module's `{helper}()` (the same bits)",
                    value.evidence,
                    failure=failure,
                )
            return Diagnostic(ctx.span(sink.call.func), message, None, False, "", value.evidence, failure=failure)
        sign = ctx.consumers.ints.value_sign(sink.arg)
        node, offset, unsigned = sink.code_node, sink.code_offset, sink.unsigned

        def intents() -> list[Intent] | None:
            start, end = ctx.source.span(node)
            text = ctx.source.text[start:end]
            body = node.value
            assert isinstance(body, str)
            at = text.find(body) if body else -1
            if at < 0:
                return None
            new = body[:offset] + unsigned + body[offset + 1 :]
            return [Intent(start, end, "replace_string", new)]

        title = f"Use the unsigned type code `{unsigned}` (the same bytes)"
        if sign is not None:
            return Diagnostic(
                ctx.span(sink.call.func),
                message,
                intents,
                False,
                f"{title} (unsafe: {sign})",
                value.evidence,
                failure=failure,
            )
        return Diagnostic(ctx.span(sink.call.func), message, intents, True, title, value.evidence, failure=failure)


def _reaches(value: Value | None, sink: Sink) -> bool:
    """An address reaches the sink: a raw one always; a wrapped one only a narrow sink; one known only by
    its name only as a table of them (name evidence is never enough for one scalar argument)."""
    if value is None:
        return False
    if sink.table and (value.kind is not Kind.SEQ or value.array):
        return False  # a tensor or array passes its bits, not Python ints
    if not sink.table and (value.kind is not Kind.SCALAR or not value.python_int):
        return False
    if sink.rejects_negative:
        return value.origin is Origin.WRAPPED
    if value.origin is Origin.RAW:
        return True
    if value.origin is Origin.WRAPPED:
        return sink.narrow
    return value.origin is Origin.NAMED and sink.table and value.table_name


# ----- the sinks of one call -------------------------------------------------------------------------
def sinks(ctx: RuleContext, call: ast.Call, schemas: dict[str, dict[str, object]]) -> Iterator[Sink]:
    func = call.func
    qnames = ctx.facts.model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
    if "array.array" in qnames and len(call.args) >= 2:
        yield from _array_sink(call)
    elif qnames & {"struct.pack", "struct.pack_into"}:
        skip = 3 if "struct.pack_into" in qnames else 1
        fmt = call.args[0] if call.args else None
        yield from _struct_sinks(call, fmt, call.args[skip:])
    elif (
        isinstance(func, ast.Attribute)
        and func.attr in ("pack", "pack_into")
        and isinstance(func.value, ast.Call)
        and "struct.Struct" in ctx.facts.model.qualified_names(func.value.func)
        and func.value.args
    ):
        skip = 2 if func.attr == "pack_into" else 0
        yield from _struct_sinks(call, func.value.args[0], call.args[skip:])
    elif any(q == "tvm_ffi.Shape" or q.endswith(".tvm_ffi.Shape") for q in qnames) and call.args:
        yield Sink(
            call,
            call.args[0],
            "`tvm_ffi.Shape`",
            "it holds int64 and raises `ValueError` for an address >= 2**63",
            False,
            True,
        )
    else:
        declared = _declared_sinks(ctx, call, qnames)
        yield from declared if declared is not None else _op_sinks(ctx, call, qnames, schemas)


def _array_sink(call: ast.Call) -> Iterator[Sink]:
    code = call.args[0]
    if not (isinstance(code, ast.Constant) and isinstance(code.value, str) and len(code.value) == 1):
        return
    c = code.value
    if c in SIGNED64_CODES or c in NARROW_CODES:
        narrow = c in NARROW_CODES
        effect = _narrow_effect(c, "`OverflowError`") if narrow else "it raises `OverflowError` for an address >= 2**63"
        yield Sink(call, call.args[1], f"`array.array({c!r})`", effect, narrow, True, code, 0, SIGNED64_CODES.get(c))


def _narrow_effect(code: str, error: str) -> str:
    if code in "efd":
        return "it rounds every address above the float's exact range (2**53 for a double)"
    return f"it raises {error} for any address wider than the type (most addresses)"


def _struct_sinks(call: ast.Call, fmt: ast.expr | None, values: list[ast.expr]) -> Iterator[Sink]:
    if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str)) or any(
        isinstance(v, ast.Starred) for v in values
    ):
        return
    text = fmt.value
    index = 0
    for match in _STRUCT_TOKEN.finditer(text):
        count, c = int(match.group(1) or 1), match.group(2)
        if c in "xsp":
            index += 0 if c == "x" else 1
            continue
        for _ in range(count):
            if index >= len(values):
                return
            if c in SIGNED64_CODES or c in NARROW_CODES:
                narrow = c in NARROW_CODES or (c in "lL" and text[:1] in "<>!=")  # standard size: 4 bytes
                effect = (
                    _narrow_effect(c, "`struct.error`")
                    if narrow
                    else "it raises `struct.error: argument out of range` for an address >= 2**63"
                )
                yield Sink(
                    call,
                    values[index],
                    f"`struct` format code `{c}`",
                    effect,
                    narrow,
                    False,
                    fmt,
                    match.start(2),
                    None if narrow else SIGNED64_CODES.get(c),
                )
            index += 1


def _declared_sinks(ctx: RuleContext, call: ast.Call, qnames: set[str]) -> list[Sink] | None:
    """Arguments of a compiled function whose Cython declaration the project ships (``lib.pxd``): each
    address passed to a C integer parameter. None when the callee has no declaration ptrlint can read.
    The declaration is asked first (a file lookup, recorded for the cache whatever the answer): the
    arguments' values are computed only for the calls that have one."""
    view = ctx.facts.view
    if view is None or not qnames or not (call.args or call.keywords):
        return None
    if any(q.partition(".")[0] in KNOWN_LIBRARIES for q in qnames):
        return None  # torch's, numpy's and Python's own functions are known: none is a Cython binding
    found = next((d for d in (view.declaration(q) for q in sorted(qnames)) if d is not None), None)
    if found is None:
        return None
    passed: list[tuple[int | None, str | None, ast.expr]] = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        passed.append((i, None, arg))
    passed += [(None, k.arg, k.value) for k in call.keywords if k.arg is not None]
    passed = [p for p in passed if _address_scalar(ctx.facts.value(p[2]))]
    out: list[Sink] = []
    for position, keyword, arg in passed:
        param = found.param(position, keyword)
        kind = param.integer if param is not None else None
        if param is None or kind is None:
            continue
        what = (
            f"`{found.name}()` (parameter `{param.ctype} {param.name}` in its Cython declaration, "
            f"{display_path(found.path)}:{found.line})"
        )
        if kind == "unsigned64":
            effect = f"Cython raises `OverflowError` converting a negative value to `{param.ctype}`"
            out.append(Sink(call, arg, what, effect, False, False, rejects_negative=True))
        elif kind == "narrow":
            effect = f"Cython raises `OverflowError` for any address wider than `{param.ctype}` (most addresses)"
            out.append(Sink(call, arg, what, effect, True, False))
        else:
            effect = f"Cython converts it to `{param.ctype}` and raises `OverflowError` for an address >= 2**63"
            out.append(Sink(call, arg, what, effect, False, False, op=True))
    return out


def _address_scalar(value: Value | None) -> bool:
    return (
        value is not None
        and value.kind is Kind.SCALAR
        and value.python_int
        and value.origin in (Origin.RAW, Origin.WRAPPED)
    )


def _op_sinks(
    ctx: RuleContext, call: ast.Call, qnames: set[str], schemas: dict[str, dict[str, object]]
) -> Iterator[Sink]:
    """Integer arguments of a torch custom op: ``torch.ops.ns.op(...)``, or a ``custom_op`` function of
    this module called directly."""
    op = next((q for q in qnames if q.startswith("torch.ops.") and q.count(".") >= 3), None)
    declared: dict[str, object] | None = None
    if op is not None:
        declared = schemas.get(op.rpartition(".")[2])
    else:
        target = ctx.facts.model.types.function_called(call.func)
        functions = cast("dict[int, dict[str, object]]", schemas.get("__functions__", {}))
        if target is None or id(target) not in functions:
            return
        declared = functions[id(target)]
        op = target.name
    name = op.rpartition(".")[2]
    positional: list[str] = declared.get("__order__", []) if declared else []  # type: ignore[assignment]
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return
        param = positional[i] if i < len(positional) else None
        yield from _op_argument(call, arg, name, declared, param)
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield from _op_argument(call, keyword.value, name, declared, keyword.arg)


def _op_argument(
    call: ast.Call, arg: ast.expr, op: str, declared: dict[str, object] | None, param: str | None
) -> Iterator[Sink]:
    kind = declared.get(param) if declared is not None and param is not None else None
    if declared is not None and kind is None:
        return  # the schema says this argument is not an integer
    table = kind == "list"
    where = "its schema in the project" if declared is not None else "an op whose schema ptrlint cannot see"
    effect = (
        f"torch converts {'each element of ' if table else ''}an integer argument to int64 before the op runs "
        f"({where}): an address >= 2**63 raises `RuntimeError`"
    )
    if kind is None:  # unknown schema: a Python int or a list of them
        yield Sink(call, arg, f"the custom op `{op}`", effect, False, False, op=True)
        yield Sink(
            call,
            arg,
            f"the custom op `{op}`",
            effect.replace("an integer argument", "each element of an integer-list argument"),
            False,
            True,
            op=True,
        )
    else:
        yield Sink(call, arg, f"the custom op `{op}`", effect, False, table, op=True)


__all__ = ["SignedPointerSink"]  # the rule registry takes the Rule subclass this module defines
