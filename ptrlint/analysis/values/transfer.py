"""Transfer functions: the value of an expression from the values of its parts, one function
per expression kind (constants, calls, attributes, names, subscripts, operators, containers).
Names and attributes read the value of their storage, which is :mod:`.flow`'s."""

from __future__ import annotations

import ast
from dataclasses import replace

from ...addresses import (
    POINTER_METHODS,
    is_allocation_name,
    tuple_address_position,
)
from ...names import CTYPES_SIGNED64_QNAMES, PASSTHROUGH_METHODS, SIGNED64_DTYPES, VIEW_ATTRIBUTES
from ..semantic.model import SemanticModel
from ..semantic.syntax import attr_name, dotted, entry_name, is_slice_subscript, positional, string_value
from .address_apis import AddressAPIs
from .arithmetic import Arithmetic
from .fixpoint import Evaluator
from .flow import Flow
from .lattice import FOREIGN_SCALAR, INDEX_ARRAY, INDEX_SCALAR, INDEX_SEQ, Kind, Origin, Value, add_evidence, strongest

_SIZE_METHODS = frozenset({"numel", "element_size", "stride", "size", "dim", "nelement", "bit_length", "get_device"})
_SIZE_ATTRIBUTES = frozenset({"shape", "nbytes", "itemsize", "ndim", "size", "strides"})
_NOT_A_METHOD = object()  # what method_value says of a method whose name decides nothing
_NOT_SUMMARISED = object()  # what external_call_value says of a function whose summary says nothing
_INDEX_FUNCTIONS = frozenset(
    {
        "torch.arange",
        "numpy.arange",
        "torch.meshgrid",
        "numpy.meshgrid",
        "numpy.indices",
        "numpy.ogrid",
        "numpy.mgrid",
        "torch.bincount",
        "numpy.bincount",
        "builtins.range",
        "builtins.len",
    }
)


class Transfer:
    """The transfer functions of one module's facts (``facts.transfer``): the evaluator's rule for an expression."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator, flow: Flow) -> None:
        self.model, self.evaluator, self.flow = model, evaluator, flow
        self.view, self.options, self.names = model.view, model.options, model.options.names
        self.apis = AddressAPIs(model)
        self.arithmetic = Arithmetic(model, evaluator, flow)

    def compute(self, expr: ast.AST) -> Value | None:
        model = self.model
        if isinstance(expr, ast.Constant):
            return INDEX_SCALAR if isinstance(expr.value, (int, float)) else None
        if isinstance(expr, ast.Call):
            return self.call_value(expr)
        if isinstance(expr, ast.Attribute):
            return self.attribute_value(expr)
        if isinstance(expr, ast.Name):
            return self.flow.key_value(model.key_of(expr)) or self.imported_value(expr)
        if isinstance(expr, ast.Subscript):
            return self.subscript_value(expr)
        if isinstance(expr, ast.BinOp):
            return self.arithmetic.binop_value(expr)
        if isinstance(expr, ast.UnaryOp):
            inner = self.evaluator.value(expr.operand)
            return inner if inner is not None and inner.origin is Origin.INDEX else None
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return self.elements_value(expr.elts, expr)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = self.evaluator.value(expr.elt)
            return inner.as_kind(Kind.SEQ) if inner is not None else None
        if isinstance(expr, ast.IfExp):
            body, orelse = self.evaluator.value(expr.body), self.evaluator.value(expr.orelse)
            if Origin.WRAPPED in (getattr(body, "origin", None), getattr(orelse, "origin", None)):
                wrapped = body if body is not None and body.origin is Origin.WRAPPED else orelse
                return wrapped  # `v - 2**64 if v >= 2**63 else v`: the wrap is the point
            return strongest([body, orelse])
        if isinstance(expr, ast.Await):
            return self.evaluator.value(expr.value)
        if isinstance(expr, ast.NamedExpr):
            return self.evaluator.value(expr.value)
        if isinstance(expr, ast.Starred):
            return self.evaluator.value(expr.value)
        return None

    def elements_value(self, elements: list[ast.expr], node: ast.AST) -> Value | None:
        values: list[Value | None] = []
        for element in elements:
            if isinstance(element, ast.Starred):
                inner = self.evaluator.value(element.value)
                values.append(inner if inner is not None and inner.kind is Kind.SEQ else None)
            else:
                values.append(self.evaluator.value(element))
        best = strongest(values)
        if best is None:
            return None
        if best.origin is Origin.INDEX and any(v is None for v in values):
            return None  # contrary evidence only when every element is an index
        return best.as_kind(Kind.SEQ)

    def attribute_value(self, expr: ast.Attribute) -> Value | None:
        model = self.model
        attr = expr.attr
        base = expr.value
        catalogued = self.apis.attribute(expr)
        if catalogued is not None:
            return catalogued
        if attr == "value" and isinstance(base, ast.Call):
            qnames = model.qualified_names(base.func)
            if "ctypes.cast" in qnames:
                return Value(Kind.SCALAR, Origin.RAW, ((expr, "pointer value: `ctypes.cast(...).value`"),))
            if qnames & CTYPES_SIGNED64_QNAMES and base.args:
                inner = self.evaluator.value(base.args[0])
                if inner is not None and inner.is_pointer:
                    return Value(
                        Kind.SCALAR, Origin.WRAPPED, add_evidence(inner.evidence, expr, "reinterpreted as signed here")
                    )
            if any(q.startswith("ctypes.c_") for q in qnames) and base.args:
                return self.evaluator.value(base.args[0])
        if attr == "data_ptr":  # read as a value, not called: a property that returns the address,
            key = model.key_of(expr)  # unless the module assigns the attribute (`self.data_ptr = lib.create()`)
            if key is None or not model.bindings.get(key):
                return Value(Kind.SCALAR, Origin.RAW, ((expr, "pointer value: `.data_ptr` (a property)"),))
            return self.flow.key_value(key)
        if attr in _SIZE_ATTRIBUTES:
            return INDEX_SEQ if attr in ("shape", "strides") else INDEX_SCALAR
        if attr in VIEW_ATTRIBUTES:
            inner = self.evaluator.value(base)
            if inner is not None and inner.kind is Kind.SEQ:
                return inner
        return self.flow.key_value(model.key_of(expr)) or self.imported_value(expr)

    def imported_value(self, expr: ast.Name | ast.Attribute) -> Value | None:
        """A module-level name of another project module (``from .tables import BASES``, ``tables.BASES``)."""
        if self.view is None:
            return None
        for qname in self.model.qualified_names(expr):
            value = self.view.name(qname)
            if value is not None:
                return value
        return None

    def subscript_value(self, expr: ast.Subscript) -> Value | None:
        inner_value = expr.value
        if entry_name(expr) is not None:  # `d["ptrs"]`: what that entry holds, never another entry's values
            return self.flow.key_value(self.model.key_of(expr))
        if isinstance(inner_value, ast.Call) and isinstance(expr.slice, ast.Constant) and type(expr.slice.value) is int:
            position = tuple_address_position(attr_name(inner_value.func))
            if position is not None and expr.slice.value != position:
                return None  # `cudart.cudaMalloc(n)[0]`: the status code
        if (
            isinstance(inner_value, ast.Subscript)
            and isinstance(inner_value.value, ast.Attribute)
            and inner_value.value.attr in ("__array_interface__", "__cuda_array_interface__")
        ):
            return Value(Kind.SCALAR, Origin.RAW, ((expr, f'pointer value: `{inner_value.value.attr}["data"][0]`'),))
        if isinstance(inner_value, ast.Call) and dotted(inner_value.func) in ("struct.unpack", "unpack"):
            wrapped = self.struct_wrap(inner_value)
            if wrapped is not None:
                return wrapped
        if not is_slice_subscript(expr) and (
            self.flow.dicts.entries(inner_value) or self.flow.dicts.comprehensions(inner_value)
        ):
            return self.flow.dicts.any_entry(inner_value)  # `ptrs[name]` with a computed key
        inner = self.evaluator.value(inner_value)
        if inner is None or inner.kind is not Kind.SEQ:
            return None
        if is_slice_subscript(expr):
            return inner
        element = inner.as_kind(Kind.SCALAR)
        return replace(element, python_int=False) if inner.array else element

    def struct_wrap(self, unpack: ast.Call) -> Value | None:
        """``struct.unpack("<q", struct.pack("<Q", p))[0]``: the signed int with the address's bits."""
        if len(unpack.args) < 2 or not isinstance(unpack.args[1], ast.Call):
            return None
        fmt, packed = unpack.args[0], unpack.args[1]
        if not (
            isinstance(fmt, ast.Constant) and isinstance(fmt.value, str) and fmt.value.strip("<>=!@").lower() == "q"
        ):
            return None
        if dotted(packed.func) not in ("struct.pack", "pack") or len(packed.args) < 2:
            return None
        inner = self.evaluator.value(packed.args[1])
        if inner is not None and inner.is_pointer:
            return Value(
                Kind.SCALAR, Origin.WRAPPED, add_evidence(inner.evidence, unpack, "reinterpreted as signed here")
            )
        return None

    def method_value(self, call: ast.Call, func: ast.Attribute, args: list[ast.expr]) -> object:
        """The value of a method call the method's name decides (``data_ptr()``, ``tolist()``, ``item()``,
        ``view(torch.int64)``, a dict's ``values()``), or ``_NOT_A_METHOD`` when the name decides nothing."""
        model = self.model
        method = func.attr
        if method == "data_ptr" and not call.args and not call.keywords:
            return Value(Kind.SCALAR, Origin.RAW, ((call, "pointer value: `data_ptr()`"),))
        if method in POINTER_METHODS and not call.args and not call.keywords:
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{method}()`"),))
        if method == "view" and args and model.types.dtype_qname(args[0]) in SIGNED64_DTYPES:
            inner = self.evaluator.value(func.value)
            if inner is not None and inner.is_pointer:  # bit reinterpretation: deliberate int64
                return Value(
                    Kind.SEQ, Origin.WRAPPED, add_evidence(inner.evidence, call, "reinterpreted as int64 here")
                )
            return None
        if method in PASSTHROUGH_METHODS:
            inner = self.evaluator.value(func.value)
            if inner is not None and inner.kind is Kind.SEQ:
                return replace(inner, array=False) if method == "tolist" else inner  # a list of Python ints
            return None
        if method == "item":
            inner = self.evaluator.value(func.value)
            return replace(inner, kind=Kind.SCALAR, python_int=True) if inner is not None else None
        if method in ("values", "items", "keys") and not call.args:  # a dict's entries (or keys), joined
            joined = self.flow.dicts.dict_part(func.value, keys=method == "keys")
            if joined is not None:
                return joined.as_kind(Kind.SEQ)
        if method in ("get", "setdefault", "pop") and args and string_value(args[0]) is not None:
            base = model.key_of(func.value)
            if base is not None:  # `d.get("ptrs")`: that entry
                return self.flow.key_value(model.attribute_key(base, f"[{string_value(args[0])}]"))
        if method in _SIZE_METHODS:
            return INDEX_SCALAR
        return _NOT_A_METHOD

    def call_value(self, call: ast.Call) -> Value | None:
        model = self.model
        func = call.func
        args = positional(call)
        inner: Value | list[Value | None] | None  # an argument's value, or every argument's
        if isinstance(func, ast.Attribute):
            method = self.method_value(call, func, args)
            if method is not _NOT_A_METHOD:
                return method  # type: ignore[return-value]
        qnames = model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        last = attr_name(func)
        if "ctypes.addressof" in qnames:
            return Value(Kind.SCALAR, Origin.RAW, ((call, "pointer value: `ctypes.addressof()`"),))
        catalogued = self.apis.call(call, qnames, last)
        if catalogued is not None:
            return catalogued
        funcs = self.options.pointer_functions
        if funcs and (last in self.options.pointer_function_names or qnames & funcs):
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: configured pointer function `{last}()`"),))
        if qnames & {"builtins.int"} and args:
            return self.evaluator.value(args[0])
        if qnames & {"numpy.uint64", "numpy.int64", "numpy.intp", "numpy.longlong"} and args:
            inner = self.evaluator.value(args[0])
            return replace(inner, python_int=False) if inner is not None else None
        if qnames & {"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed"} and args:
            inner = self.evaluator.value(args[0])
            return inner if inner is not None and inner.kind is Kind.SEQ else None
        if qnames & {"builtins.zip", "itertools.chain", "itertools.chain.from_iterable"} and args:
            return _together(
                [self.evaluator.value(a) for a in args]
            )  # `list(zip(srcs, dsts))`, `chain(a_ptrs, b_ptrs)`
        if qnames & {"builtins.max", "builtins.min", "builtins.sum", "builtins.abs", "builtins.round"} and args:
            inner = [self.evaluator.value(a) for a in args]
            return INDEX_SCALAR if all(v is not None and v.origin is Origin.INDEX for v in inner) else None
        if qnames & {"torch.cat", "torch.stack", "numpy.concatenate", "numpy.stack"} and args:
            inner = self.evaluator.value(args[0])
            return inner.as_kind(Kind.SEQ) if inner is not None else None
        creation = model.creation_by_id.get(id(call))
        if creation is not None and creation.stop is not None:  # `np.arange(base, end, step)`: what its start holds
            held = self.flow.holding(creation)
            return held if held is not None and held.origin is not Origin.INDEX else INDEX_ARRAY
        if qnames & _INDEX_FUNCTIONS:
            if "builtins.len" in qnames:
                return INDEX_SCALAR
            return INDEX_SEQ if "builtins.range" in qnames else INDEX_ARRAY
        if creation is not None:
            return self.flow.holding(creation)
        target = model.types.function_called(func)
        returned = self.flow.results.returned_value(target, call) if target is not None else None
        if returned is not None:
            return returned
        if self.view is not None and target is None:
            external = model.types.external_callee(func)
            if external:
                found = self.external_call_value(call, external, args)
                if found is not _NOT_SUMMARISED:
                    return found  # type: ignore[return-value]
        if last is not None and self.names.is_getter_name(last) and not any(q.startswith("triton.") for q in qnames):
            # `get_remote_addr()`, `device_buffer_ptr()` (not Triton's `tl.make_block_ptr`, a kernel-side handle)
            kind = Kind.SEQ if self.names.is_table_name(last) else Kind.SCALAR
            return Value(
                kind,
                Origin.NAMED,
                ((call, f"`{last}()` is named like an address getter"),),
                table_name=self.names.is_table_name(last),
            )
        if last is not None and is_allocation_name(last) and tuple_address_position(last) is None and target is None:
            return Value(
                Kind.SCALAR,
                Origin.NAMED,
                ((call, f"`{last}()` allocates or maps memory: it returns an address"),),
                table_name=False,
            )
        if target is None and self.apis.foreign(func, qnames):
            return FOREIGN_SCALAR
        return None

    def external_call_value(self, call: ast.Call, external: str, args: list[ast.expr]) -> Value | None | object:
        """A call of another project module's function: a wrap helper's wrapped address (``to_i64(p)``), or what
        its summary says it returns; ``_NOT_SUMMARISED`` when the summary says nothing."""
        assert self.view is not None
        if args and self.view.wraps(external):
            inner = self.evaluator.value(args[0])
            if inner is None or not inner.is_pointer or inner.kind is not Kind.SCALAR:
                return None
            helper = external.rpartition(".")[2]
            return Value(
                Kind.SCALAR,
                Origin.WRAPPED,
                add_evidence(inner.evidence, call, f"reinterpreted as signed by `{helper}()`"),
            )
        value = self.view.function(external)
        if value is None:
            return _NOT_SUMMARISED
        return value.with_evidence(call, f"returned by `{external.rpartition('.')[2]}()`")


def _together(values: list[Value | None]) -> Value | None:
    """Several lists taken together: addresses if one of them holds addresses, indices only if all do."""
    if any(v is None or v.kind is not Kind.SEQ for v in values):
        values = [v for v in values if v is not None and v.is_pointer and v.kind is Kind.SEQ]
    best = strongest(values)
    return best.as_kind(Kind.SEQ) if best is not None else None
