"""Queries over the collected facts: which values are addresses, which buffers hold them (evidence model v2).

Every value the model knows carries a *kind* and an *origin*:
- kind ``SCALAR`` (one value) or ``SEQ`` (a list, tuple, tensor or array of values);
- origin, strongest first: ``RAW`` (a real address: ``t.data_ptr()``, ``a.ctypes.data``,
  ``ctypes.addressof``, ``ctypes.cast(...).value``, ``__array_interface__["data"][0]``, known
  address APIs, configured pointer functions, and anything address ± integer); ``WRAPPED`` (an
  address reinterpreted as signed on purpose: ``c_int64(p).value``, a module helper that wraps into
  int64 range, ``.view(np.int64)``: it fits int64 by construction); ``NAMED`` (only a name says
  so: a pointer-named getter, a creation's target or data argument); ``INDEX`` (contrary evidence:
  built only from integer constants, lengths, shapes, strides, ``numel``/``element_size``, loop
  counters, ``arange``/``meshgrid``/``indices`` results; pointer − pointer is an offset).

A buffer's value aggregates everything written into its alias class (appends, element stores,
``copy_``, collectives, parameters that a callee writes, its creation's data): one RAW write makes
it pointer-holding; otherwise wrapped writes make it correct as int64 whatever its name; otherwise
names count, unless every written value is an INDEX (contrary evidence overrules names). Evidence
flows through module functions' return values (evaluated with the caller's arguments bound to the
parameters), methods of module classes whose instances the module constructs, dataclass and
NamedTuple fields (by keyword or position) and ``*_like`` copies, which inherit their source's
dtype but are never aliases of it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from enum import Enum, IntEnum
from typing import Iterable, Iterator

from ..names import PASSTHROUGH_METHODS, SIGNED64_DTYPES, VIEW_ATTRIBUTES
from .facts import FactCollector
from .model import SemanticModel
from .records import Binding, Creation, FunctionNode, Key
from .syntax import attr_name, dotted, is_slice_subscript, positional
from .names import NamePatterns

Evidence = tuple[tuple["ast.AST | Location", str], ...]
MAX_EVIDENCE = 6


@dataclass(frozen=True)
class Location:
    """Evidence in another module of the project (from its summary): 1-based line and column."""

    path: str
    line: int
    column: int


class Kind(Enum):
    SCALAR = "pointer value"
    SEQ = "pointer-holding"


class Origin(IntEnum):
    INDEX = 0
    NAMED = 1
    WRAPPED = 2
    RAW = 3


@dataclass(frozen=True)
class Value:
    kind: Kind
    origin: Origin = Origin.RAW
    evidence: Evidence = ()
    python_int: bool = True  # a scalar that is a plain Python int (not `np.uint64(...)`, not an array element)
    array: bool = False  # a SEQ that is a tensor or array (its elements are numpy/torch scalars)
    table_name: bool = True  # NAMED only: the name says "table" (plural, or `*_ptr_list`), not one pointer

    @property
    def is_pointer(self) -> bool:
        return self.origin in (Origin.RAW, Origin.NAMED)

    def as_kind(self, kind: Kind) -> "Value":
        return self if self.kind is kind else replace(self, kind=kind)

    def with_evidence(self, node: ast.AST, message: str) -> "Value":
        return replace(self, evidence=_ev(self.evidence, node, message))


PROVISIONAL = object()  # marks a memoised answer read before its cycle was settled
INDEX_SCALAR = Value(Kind.SCALAR, Origin.INDEX)
INDEX_SEQ = Value(Kind.SEQ, Origin.INDEX)
TWO_64 = 1 << 64
KNOWN_ADDRESS_ATTRIBUTES = {  # symmetric-memory handles
    "buffer_ptrs": Kind.SEQ, "buffer_ptrs_dev": Kind.SEQ, "signal_pad_ptrs": Kind.SEQ, "signal_pad_ptrs_dev": Kind.SEQ,
    "multicast_ptr": Kind.SCALAR,
}
KNOWN_ADDRESS_FUNCTIONS = frozenset({"torch.cuda.caching_allocator_alloc", "torch.cuda.memory.caching_allocator_alloc"})
_SIZE_METHODS = frozenset({"numel", "element_size", "stride", "size", "dim", "nelement", "bit_length", "get_device"})
_SIZE_ATTRIBUTES = frozenset({"shape", "nbytes", "itemsize", "ndim", "size", "strides"})
_INDEX_FUNCTIONS = frozenset({
    "torch.arange", "numpy.arange", "torch.meshgrid", "numpy.meshgrid", "numpy.indices", "numpy.ogrid", "numpy.mgrid",
    "torch.bincount", "numpy.bincount", "builtins.range", "builtins.len",
})
_SIGNED_WRAP_CTYPES = frozenset({"ctypes.c_int64", "ctypes.c_long", "ctypes.c_longlong", "ctypes.c_ssize_t"})


class ModuleFacts:
    """Queries over one module's facts. Results are memoised per alias class and per expression."""

    def __init__(self, model: SemanticModel) -> None:
        self.c = model
        self.view = model.view  # the project index's view of the other modules, or None
        self.options = model.options
        self.names = model.options.names
        self.groups = model.uf.members()
        self._class_memo: dict[tuple[Key, bool], Value | None] = {}
        self._expr_memo: dict[int, Value | None] = {}
        self._in_progress: set[tuple] = set()
        self._cycle_hits: list[object] = []
        self._iteration = 0
        self._querying = False
        self._changed = False
        self._fresh: list[tuple[dict, object]] = []
        self._torch_memo: dict[Key, bool] = {}
        self._in_progress_funcs: set[int] = set()
        # frames of the calls being evaluated with their arguments bound: (parameter values, expression
        # memo, class memo); a function's returns are evaluated once per signature of its arguments
        self._bound: list[tuple[dict[Key, Value | None], dict, dict]] = []
        self._return_memo: dict[tuple, Value | None] = {}
        for creation in model.creations:
            target = model.targets.get(id(creation.call))
            if target is not None:
                creation.target_name, creation.target_node = target
        self._locations: dict[Key, list[Key]] = {}  # creation -> roots of the names/attributes it was stored in
        self._stored: dict[Key, list[Key]] = {}  # location root -> creations stored in it
        for location, creation_key in model.flows:
            root = self._root(location)
            if root not in self._locations.setdefault(creation_key, []):
                self._locations[creation_key].append(root)
                self._stored.setdefault(root, []).append(creation_key)
        self._passes, self._elements_of, self._like_copies = self._index_flows()

    # ----- indexes built once --------------------------------------------------------------------
    def _index_flows(self) -> tuple[dict[Key, list[tuple[FunctionNode, str, ast.Call]]], dict[Key, list[Key]],
                                    dict[Key, list[Creation]]]:
        c = self.c
        passes: dict[Key, list[tuple[FunctionNode, str, ast.Call]]] = {}
        names = {n[2] for n in c.functions} | {m for methods in c.class_methods.values() for m in methods}
        for call in c.calls:
            target = c.types.function_called(call.func) if attr_name(call.func) in names else None
            if target is not None:
                pairs = self._bind_arguments(target, call)
            elif self.view is not None:
                external = c.types.external_callee(call.func)
                found = self.view.param_writes(external) if external else None  # type: ignore[attr-defined]
                if found is None:
                    continue
                params, writes = found
                pairs = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
                pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in params]
                target = ExternalFunction(external, writes)  # type: ignore[assignment]
            else:
                continue
            for param, arg in pairs:
                key = c.alias_key(arg)
                if key is not None:
                    passes.setdefault(self._root(key), []).append((target, param, call))
        containers: dict[Key, list[Key]] = {}  # an element's class -> the lists that hold it
        for key, adds in c.adds.items():
            for binding in adds:
                if binding.how == "expr":
                    element = c.alias_key(binding.expr)
                    if element is not None:
                        containers.setdefault(self._root(element), []).append(self._root(key))
        for key, bindings in c.bindings.items():
            for binding in bindings:
                if binding.how == "expr" and isinstance(binding.expr, (ast.List, ast.ListComp, ast.Tuple)):
                    items = [binding.expr.elt] if isinstance(binding.expr, ast.ListComp) else binding.expr.elts
                    for item in items:
                        element = c.alias_key(item)
                        if element is not None:
                            containers.setdefault(self._root(element), []).append(self._root(key))
        copies: dict[Key, list[Creation]] = {}
        for creation in c.creations:
            if creation.like_source is not None:
                source = c.alias_key(creation.like_source)
                if source is not None:
                    copies.setdefault(self._root(source), []).append(creation)
        return passes, containers, copies

    def _root(self, key: Key) -> Key:
        return self.c.uf.find(key)

    def _bind_arguments(self, function: FunctionNode, call: ast.Call) -> list[tuple[str, ast.expr]]:
        """(parameter name, argument) pairs of a call to a module function or method."""
        args = function.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)]
        kind = self.c.method_kinds.get(id(function))
        if kind in ("instance", "class") and params:
            params = params[1:]  # self / cls is bound by the call
        pairs = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
        accepted = set(params) | {a.arg for a in args.kwonlyargs}
        pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in accepted]
        return pairs

    # ----- values of expressions -------------------------------------------------------------------
    def value(self, expr: ast.AST | None) -> Value | None:
        if expr is None:
            return None
        if not self._querying:
            return self._query(lambda: self.value(expr))
        depth = len(self._bound)
        memo = self._bound[-1][1] if depth else self._expr_memo
        return self._memoised(("e", id(expr), depth), memo, id(expr), lambda: self._value(expr))

    # Values depend on each other in cycles (a buffer's class reads an expression that reads the
    # buffer). Memoised answers are *provisional* when they met an unfinished computation or read a
    # provisional answer; a top-level query re-runs until no provisional answer changes (values only
    # grow: unknown < index < named < wrapped < raw), then its answers are final.
    MAX_ITERATIONS = 8

    def _query(self, compute):  # type: ignore[no-untyped-def]
        self._querying = True
        try:
            for _ in range(self.MAX_ITERATIONS):
                self._iteration += 1
                self._changed = False
                self._fresh = []
                result = compute()
                if not self._changed:
                    break
            for memo, key in self._fresh:  # a fixpoint: what this last round computed is final
                value, iteration, provisional = memo[key]
                if provisional and iteration == self._iteration:
                    memo[key] = (value, iteration, False)
        finally:
            self._querying = False
            self._fresh = []
            self._cycle_hits.clear()
        return result

    def _memoised(self, token: tuple, memo: dict, key: object, compute):  # type: ignore[no-untyped-def]
        entry = memo.get(key)
        if entry is not None and (not entry[2] or entry[1] == self._iteration):
            if entry[2]:
                self._cycle_hits.append(PROVISIONAL)
            return entry[0]
        if token in self._in_progress:  # a cycle: the last round's answer (or unknown) for now
            self._cycle_hits.append(token)
            return entry[0] if entry is not None else None
        self._in_progress.add(token)
        mark = len(self._cycle_hits)
        try:
            result = compute()
        finally:
            self._in_progress.discard(token)
        provisional = any(hit is PROVISIONAL or hit in self._in_progress for hit in self._cycle_hits[mark:])
        if (entry[0] if entry is not None else None) != result:
            self._changed = self._changed or provisional or entry is not None
        memo[key] = (result, self._iteration, provisional)
        if provisional:
            self._fresh.append((memo, key))
        if not self._in_progress:
            self._cycle_hits.clear()
        elif provisional:
            self._cycle_hits.append(PROVISIONAL)  # whoever reads this answer is provisional too
        return result

    # kept for rules written against the first model: the kind and evidence of a pointer value
    def kind(self, expr: ast.AST | None) -> Value | None:
        value = self.value(expr)
        return value if value is not None and value.is_pointer else None

    def _value(self, expr: ast.AST) -> Value | None:
        c = self.c
        if isinstance(expr, ast.Constant):
            return INDEX_SCALAR if isinstance(expr.value, (int, float)) else None
        if isinstance(expr, ast.Call):
            return self._call_value(expr)
        if isinstance(expr, ast.Attribute):
            return self._attribute_value(expr)
        if isinstance(expr, ast.Name):
            return self._key_value(c.key_of(expr)) or self._imported_value(expr)
        if isinstance(expr, ast.Subscript):
            return self._subscript_value(expr)
        if isinstance(expr, ast.BinOp):
            return self._binop_value(expr)
        if isinstance(expr, ast.UnaryOp):
            inner = self.value(expr.operand)
            return inner if inner is not None and inner.origin is Origin.INDEX else None
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return self._elements_value(expr.elts, expr)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = self.value(expr.elt)
            return inner.as_kind(Kind.SEQ) if inner is not None else None
        if isinstance(expr, ast.IfExp):
            body, orelse = self.value(expr.body), self.value(expr.orelse)
            if Origin.WRAPPED in (getattr(body, "origin", None), getattr(orelse, "origin", None)):
                wrapped = body if body is not None and body.origin is Origin.WRAPPED else orelse
                return wrapped  # `v - 2**64 if v >= 2**63 else v`: the wrap is the point
            return _strongest([body, orelse])
        if isinstance(expr, ast.Await):
            return self.value(expr.value)
        if isinstance(expr, ast.NamedExpr):
            return self.value(expr.value)
        if isinstance(expr, ast.Starred):
            return self.value(expr.value)
        return None

    def _elements_value(self, elements: list[ast.expr], node: ast.AST) -> Value | None:
        values: list[Value | None] = []
        for element in elements:
            if isinstance(element, ast.Starred):
                inner = self.value(element.value)
                values.append(inner if inner is not None and inner.kind is Kind.SEQ else None)
            else:
                values.append(self.value(element))
        best = _strongest(values)
        if best is None:
            return None
        if best.origin is Origin.INDEX and any(v is None for v in values):
            return None  # contrary evidence only when every element is an index
        return best.as_kind(Kind.SEQ)

    def _attribute_value(self, expr: ast.Attribute) -> Value | None:
        c = self.c
        attr = expr.attr
        base = expr.value
        if attr == "data" and isinstance(base, ast.Attribute) and base.attr == "ctypes":
            return Value(Kind.SCALAR, Origin.RAW, ((expr, "pointer value: `.ctypes.data`"),))
        if attr == "value" and isinstance(base, ast.Call):
            qnames = c.qualified_names(base.func)
            if "ctypes.cast" in qnames:
                return Value(Kind.SCALAR, Origin.RAW, ((expr, "pointer value: `ctypes.cast(...).value`"),))
            if qnames & _SIGNED_WRAP_CTYPES and base.args:
                inner = self.value(base.args[0])
                if inner is not None and inner.is_pointer:
                    return Value(Kind.SCALAR, Origin.WRAPPED, _ev(inner.evidence, expr, "reinterpreted as signed here"))
            if any(q.startswith("ctypes.c_") for q in qnames) and base.args:
                return self.value(base.args[0])
        if attr in KNOWN_ADDRESS_ATTRIBUTES:
            return Value(KNOWN_ADDRESS_ATTRIBUTES[attr], Origin.RAW, ((expr, f"pointer values: `.{attr}`"),))
        if attr in _SIZE_ATTRIBUTES:
            return INDEX_SEQ if attr in ("shape", "strides") else INDEX_SCALAR
        if attr in VIEW_ATTRIBUTES:
            inner = self.value(base)
            if inner is not None and inner.kind is Kind.SEQ:
                return inner
        return self._key_value(c.key_of(expr)) or self._imported_value(expr)

    def _imported_value(self, expr: ast.Name | ast.Attribute) -> Value | None:
        """A module-level name of another project module (``from .tables import BASES``, ``tables.BASES``)."""
        if self.view is None:
            return None
        for qname in self.c.qualified_names(expr):
            value = self.view.name(qname)  # type: ignore[attr-defined]
            if value is not None:
                return value
        return None

    def _subscript_value(self, expr: ast.Subscript) -> Value | None:
        inner_value = expr.value
        if (
            isinstance(inner_value, ast.Subscript)
            and isinstance(inner_value.value, ast.Attribute)
            and inner_value.value.attr in ("__array_interface__", "__cuda_array_interface__")
        ):
            return Value(Kind.SCALAR, Origin.RAW, ((expr, f"pointer value: `{inner_value.value.attr}[\"data\"][0]`"),))
        if isinstance(inner_value, ast.Call) and dotted(inner_value.func) in ("struct.unpack", "unpack"):
            wrapped = self._struct_wrap(inner_value)
            if wrapped is not None:
                return wrapped
        inner = self.value(inner_value)
        if inner is None or inner.kind is not Kind.SEQ:
            return None
        if is_slice_subscript(expr):
            return inner
        element = inner.as_kind(Kind.SCALAR)
        return replace(element, python_int=False) if inner.array else element

    def _struct_wrap(self, unpack: ast.Call) -> Value | None:
        """``struct.unpack("<q", struct.pack("<Q", p))[0]``: the signed int with the address's bits."""
        if len(unpack.args) < 2 or not isinstance(unpack.args[1], ast.Call):
            return None
        fmt, packed = unpack.args[0], unpack.args[1]
        if not (isinstance(fmt, ast.Constant) and isinstance(fmt.value, str) and fmt.value.strip("<>=!@").lower() == "q"):
            return None
        if dotted(packed.func) not in ("struct.pack", "pack") or len(packed.args) < 2:
            return None
        inner = self.value(packed.args[1])
        if inner is not None and inner.is_pointer:
            return Value(Kind.SCALAR, Origin.WRAPPED, _ev(inner.evidence, unpack, "reinterpreted as signed here"))
        return None

    def _binop_value(self, expr: ast.BinOp) -> Value | None:
        left, right = self.value(expr.left), self.value(expr.right)
        op = expr.op
        seq = Kind.SEQ if Kind.SEQ in (getattr(left, "kind", None), getattr(right, "kind", None)) else Kind.SCALAR
        if isinstance(op, (ast.Mult, ast.FloorDiv, ast.Mod, ast.Div, ast.Pow, ast.LShift, ast.RShift)):
            return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # products and quotients are never addresses
        raw_left = left is not None and left.is_pointer
        raw_right = right is not None and right.is_pointer
        index_left = left is not None and left.origin is Origin.INDEX
        index_right = right is not None and right.origin is Origin.INDEX
        if isinstance(op, ast.Add):
            if raw_left and raw_right:
                if left.kind is right.kind is Kind.SEQ:  # type: ignore[union-attr]
                    return left  # list concatenation
                return None
            if raw_left and not raw_right:
                return left.as_kind(seq)  # type: ignore[union-attr]  # pointer + integer is a pointer
            if raw_right and not raw_left:
                return right.as_kind(seq)  # type: ignore[union-attr]
            if index_left and index_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR
            return None
        if isinstance(op, ast.Sub):
            if raw_left and raw_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # pointer - pointer: an offset
            if raw_left:
                if self.int_constant(expr.right) == TWO_64:
                    return Value(Kind.SCALAR, Origin.WRAPPED, _ev(left.evidence, expr, "reinterpreted as signed here"))  # type: ignore[union-attr]
                if right is None and _looks_like_base(expr.right, self.names):
                    return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # `ptr - base`: an offset
                return left.as_kind(seq)  # type: ignore[union-attr]
            if index_left and index_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR
            return None
        if isinstance(op, (ast.BitAnd, ast.BitOr)):
            if raw_left and not raw_right:
                return left.as_kind(seq)  # type: ignore[union-attr]  # alignment masks keep an address
            if index_left and index_right:
                return INDEX_SCALAR
        return None

    def int_constant(self, expr: ast.AST, depth: int = 0) -> int | None:
        """The value of an integer constant expression (``1 << 64``, ``2**64``, a module constant)."""
        if depth > 8:
            return None
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return expr.value
        if isinstance(expr, ast.Name):
            bound = self.c.module_constants.get(expr.id)
            scope = self.c.scope_of(expr).resolve(expr.id)
            return self.int_constant(bound, depth + 1) if bound is not None and scope is self.c.module_scope else None
        if isinstance(expr, ast.BinOp):
            a, b = self.int_constant(expr.left, depth + 1), self.int_constant(expr.right, depth + 1)
            if a is None or b is None:
                return None
            try:
                if isinstance(expr.op, ast.LShift) and 0 <= b <= 256:
                    return a << b
                if isinstance(expr.op, ast.Pow) and 0 <= b <= 256:
                    return a**b
                if isinstance(expr.op, ast.Add):
                    return a + b
                if isinstance(expr.op, ast.Sub):
                    return a - b
                if isinstance(expr.op, ast.Mult):
                    return a * b
            except (OverflowError, ValueError):
                return None
        return None

    def _call_value(self, call: ast.Call) -> Value | None:
        c = self.c
        func = call.func
        args = positional(call)
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method == "data_ptr" and not call.args and not call.keywords:
                return Value(Kind.SCALAR, Origin.RAW, ((call, "pointer value: `data_ptr()`"),))
            if method == "view" and args and c.types.dtype_qname(args[0]) in SIGNED64_DTYPES:
                inner = self.value(func.value)
                if inner is not None and inner.is_pointer:  # bit reinterpretation: deliberate int64
                    return Value(Kind.SEQ, Origin.WRAPPED, _ev(inner.evidence, call, "reinterpreted as int64 here"))
                return None
            if method in PASSTHROUGH_METHODS:
                inner = self.value(func.value)
                if inner is not None and inner.kind is Kind.SEQ:
                    return replace(inner, array=False) if method == "tolist" else inner  # a list of Python ints
                return None
            if method == "item":
                inner = self.value(func.value)
                return replace(inner, kind=Kind.SCALAR, python_int=True) if inner is not None else None

            if method in _SIZE_METHODS:
                return INDEX_SCALAR
        qnames = c.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        last = attr_name(func)
        if "ctypes.addressof" in qnames:
            return Value(Kind.SCALAR, Origin.RAW, ((call, "pointer value: `ctypes.addressof()`"),))
        if qnames & KNOWN_ADDRESS_FUNCTIONS:
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{last}()`"),))
        funcs = self.options.pointer_functions
        if funcs and (last in self.options.pointer_function_names or qnames & funcs):
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: configured pointer function `{last}()`"),))
        if qnames & {"builtins.int"} and args:
            return self.value(args[0])
        if qnames & {"numpy.uint64", "numpy.int64", "numpy.intp", "numpy.longlong"} and args:
            inner = self.value(args[0])
            return replace(inner, python_int=False) if inner is not None else None
        if qnames & {"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed"} and args:
            inner = self.value(args[0])
            return inner if inner is not None and inner.kind is Kind.SEQ else None
        if qnames & {"builtins.max", "builtins.min", "builtins.sum", "builtins.abs", "builtins.round"} and args:
            inner = [self.value(a) for a in args]
            return INDEX_SCALAR if all(v is not None and v.origin is Origin.INDEX for v in inner) else None
        if qnames & {"torch.cat", "torch.stack", "numpy.concatenate", "numpy.stack"} and args:
            inner = self.value(args[0])
            return inner.as_kind(Kind.SEQ) if inner is not None else None
        if qnames & _INDEX_FUNCTIONS:
            return INDEX_SCALAR if "builtins.len" in qnames else INDEX_SEQ
        creation = c.creation_by_id.get(id(call))
        if creation is not None:
            return self.holding(creation)
        target = c.types.function_called(func)
        if target is not None:
            return self._returned_value(target, call)
        if self.view is not None:
            external = c.types.external_callee(func)
            value = self.view.function(external) if external else None  # type: ignore[attr-defined]
            if value is not None:
                return value.with_evidence(call, f"returned by `{external.rpartition('.')[2]}()`")  # type: ignore[union-attr]
        if last is not None and self.names.is_getter_name(last) and not any(q.startswith("triton.") for q in qnames):
            # `get_remote_addr()`, `device_buffer_ptr()` (not Triton's `tl.make_block_ptr`, a kernel-side handle)
            kind = Kind.SEQ if self.names.is_table_name(last) else Kind.SCALAR
            return Value(kind, Origin.NAMED, ((call, f"`{last}()` is named like an address getter"),),
                         table_name=self.names.is_table_name(last))
        return None

    def _returned_value(self, function: FunctionNode, call: ast.Call | None, index: int | None = None) -> Value | None:
        """What a module function returns for this call: its return expressions, with the call's
        arguments bound to the parameters (so a wrapping helper wraps the caller's address).
        Evaluated once per function and signature of the known argument values."""
        if id(function) in self._in_progress_funcs or len(self._bound) >= 2:
            return None
        bound: dict[Key, Value | None] = {}
        if call is not None:
            scope_id = self.c.function_scopes.get(id(function))
            if scope_id is not None:
                for param, arg in self._bind_arguments(function, call):
                    value = self.value(arg)
                    if value is not None:
                        bound[("n", scope_id, param)] = value
        signature = tuple(sorted((k[2], v.kind.value, int(v.origin), v.python_int) for k, v in bound.items() if v))
        memo_key = (id(function), index, signature)

        def compute() -> Value | None:
            self._in_progress_funcs.add(id(function))
            if bound:  # with no known argument, the function's own (memoised) view of its parameters applies
                self._bound.append((bound, {}, {}))
            try:
                values = []
                for ret in self.c.returns.get(id(function), []):
                    if index is not None:
                        if not isinstance(ret, ast.Tuple) or index >= len(ret.elts):
                            continue
                        if any(isinstance(el, ast.Starred) for el in ret.elts[: index + 1]):
                            continue
                        ret = ret.elts[index]
                    values.append(self.value(ret))
                return _strongest(values)
            finally:
                if bound:
                    self._bound.pop()
                self._in_progress_funcs.discard(id(function))

        return self._memoised(("r", memo_key), self._return_memo, memo_key, compute)

    # ----- values of storage (alias classes) -------------------------------------------------------
    def _key_value(self, key: Key | None) -> Value | None:
        if key is None:
            return None
        for bound, _, _ in reversed(self._bound):
            if key in bound:
                return bound[key]
        return self.class_value(self._root(key))

    def class_value(self, root: Key, writes_only: bool = False) -> Value | None:
        memo_key = (root, writes_only)
        if not self._querying:
            return self._query(lambda: self.class_value(root, writes_only))
        depth = len(self._bound)
        memo = self._bound[-1][2] if depth else self._class_memo
        return self._memoised(("k", memo_key, depth), memo, memo_key, lambda: self._compute_class_value(root, writes_only))

    def contributions(self, root: Key, writes_only: bool = False) -> Iterator[tuple[Value | None, bool]]:
        """Every value written into (or bound to) the class: ``(value, is_write)``."""
        c = self.c
        members = self.groups.get(root, [root])
        for key in members:
            for binding in c.adds.get(key, []):
                value = self.value(binding.expr)
                if binding.how == "elem-of":
                    value = value if value is not None and value.kind is Kind.SEQ else None
                    yield (value.with_evidence(binding.node, "pointer values added here") if value and value.is_pointer
                           else value), True
                else:
                    yield ((value.as_kind(Kind.SEQ).with_evidence(binding.node, "pointer value added here")
                            if value and value.is_pointer else value.as_kind(Kind.SEQ) if value else None), True)
            for binding in c.stores.get(key, []):
                value = self.value(binding.expr)
                if binding.how == "seq" and value is not None and value.kind is not Kind.SEQ:
                    value = None
                yield ((value.as_kind(Kind.SEQ).with_evidence(binding.node, "pointer value stored here")
                        if value and value.is_pointer else value.as_kind(Kind.SEQ) if value else None), True)
            for function, param, call in self._passes.get(key, []):
                if isinstance(function, ExternalFunction):
                    received, name = function.writes.get(param), function.qname.rpartition(".")[2]
                else:
                    received, name = self._param_received(function, param), function.name
                if received is not None:
                    yield received.as_kind(Kind.SEQ).with_evidence(call, f"`{name}()` writes pointer values into its parameter `{param}`"), True
            for container in self._elements_of.get(key, []):
                for kind, out, source, call in c.gathers:
                    out_key = c.alias_key(out)
                    if out_key is not None and self._root(out_key) == container:
                        value = self.value(source)
                        if value is not None and value.is_pointer:
                            yield value.as_kind(Kind.SEQ).with_evidence(call, f"receives pointer values through `{kind}`"), True
            creation = c.creation_by_id.get(key[1]) if key[0] == "c" else None
            if creation is not None:
                for part in (creation.data, creation.fill):
                    if part is not None:
                        value = self.value(part)
                        yield (value.as_kind(Kind.SEQ) if value is not None else None), True
                for location in self._locations.get(key, []):  # written through the names it was stored in
                    yield from self.contributions(location, writes_only=True)
            if key[0] == "a" and self.view is not None:
                qualname = c.types.class_qualname(key[1])
                if isinstance(key[1], str):  # an attribute of a class of another module: its summary
                    if not writes_only:
                        yield self.view.attribute(key[1], key[2]), False  # type: ignore[attr-defined]
                elif qualname is not None:  # writes other modules make into this module's class
                    for value in self.view.external_writes(qualname, key[2]):  # type: ignore[attr-defined]
                        yield value.as_kind(Kind.SEQ), True
            if writes_only:
                continue
            if creation is not None:
                named = self.name_evidence(creation)
                if named is not None:
                    yield named, False
            stored = [self.holding(c.creation_by_id[k[1]]) for k in self._stored.get(key, []) if k[1] in c.creation_by_id]
            if len(stored) > 1 and not all(v is not None and v.is_pointer for v in stored):
                # a field that holds addresses for some instances and data for others (`handle.data`):
                # reading it says nothing about one read
                yield None, False
            else:  # reading a location sees what was stored in it
                for value in stored:
                    yield value, False
            for binding in c.bindings.get(key, []):
                yield self._binding_value(binding), False

    def _binding_value(self, binding: Binding) -> Value | None:
        c = self.c
        if binding.how == "telem":
            assert isinstance(binding.expr, ast.Call)
            target = c.types.function_called(binding.expr.func)
            return self._returned_value(target, binding.expr, binding.index) if target is not None else None
        if binding.how == "index":
            return INDEX_SCALAR
        if binding.how == "expr" and isinstance(binding.expr, ast.Call) and id(binding.expr) in c.creation_by_id:
            return None  # the creation itself: its class is this class
        value = self.value(binding.expr)
        if binding.how == "elem":
            return value.as_kind(Kind.SCALAR) if value is not None and value.kind is Kind.SEQ else None
        return value

    def _compute_class_value(self, root: Key, writes_only: bool) -> Value | None:
        contributions = list(self.contributions(root, writes_only))
        best = _strongest(v for v, _ in contributions)
        if best is None:
            return None
        if best.origin in (Origin.RAW, Origin.WRAPPED):
            return best  # one raw write makes it pointer-holding; only wrapped ones make int64 right
        writes = [v for v, is_write in contributions if is_write]
        if writes and all(v is not None and v.origin is Origin.INDEX for v in writes):
            return next(v for v in writes if v is not None)  # contrary value evidence overrules names
        if best.origin is Origin.NAMED:
            return best
        if all(v is not None and v.origin is Origin.INDEX for v, _ in contributions):
            return best
        return None

    def _param_received(self, function: FunctionNode, param: str) -> Value | None:
        """Pointer values a function writes into one of its parameters (``out[:] = ...``)."""
        scope_id = self.c.function_scopes.get(id(function))
        if scope_id is None:
            return None
        value = self.class_value(self._root(("n", scope_id, param)), writes_only=True)
        return value if value is not None and value.origin is Origin.RAW else None

    # ----- creations: pointer-holding, and by which evidence -----------------------------------------
    def holding(self, creation: Creation) -> Value | None:
        """The value of what a creation makes: RAW, WRAPPED, NAMED (name evidence only) or INDEX."""
        value = self.class_value(self._root(creation.key))
        return replace(value, kind=Kind.SEQ, array=True) if value is not None else None

    def name_evidence(self, creation: Creation) -> Value | None:
        """What the names say: the creation's target, its data argument, or the field it fills."""
        if id(creation.call) in self.c.narrowed or creation.like_source is not None:
            return None  # converted at once to a narrow dtype: data; `*_like` copies need real evidence
        data = creation.data
        if data is not None and isinstance(data, ast.Constant):
            return None  # `torch.tensor(0)`: a scalar argument, not a table
        if creation.target_name is not None and self.names.is_pointer_name(creation.target_name):
            node = creation.target_node or creation.call
            return Value(Kind.SEQ, Origin.NAMED, ((node, f"name `{creation.target_name}` says it holds addresses"),),
                         table_name=self.names.is_table_name(creation.target_name))
        source = _data_name(data)
        if source is not None and self.names.is_pointer_name(source) and self.names.is_table_name(source):
            return Value(Kind.SEQ, Origin.NAMED, ((data, f"data `{source}` is named like an address table"),))  # type: ignore[arg-type]
        return None

    def pointer_holding(self, creation: Creation) -> Value | None:
        """Pointer-holding by value or flow (RAW) or by name only (NAMED); None otherwise."""
        value = self.holding(creation)
        return value if value is not None and value.is_pointer else None

    def like_copies(self, creation: Creation) -> list[Creation]:
        """``*_like``/``new_*`` copies of this creation's buffer (they inherit its dtype)."""
        roots = [self._root(creation.key), *self._locations.get(creation.key, [])]
        return [copy for root in roots for copy in self._like_copies.get(root, [])]

    def unsafe_uses(self, key: Key) -> list[tuple[ast.AST, str]]:
        """Uses of a buffer that uint64 lacks, through any name or attribute it was stored in."""
        roots = [self._root(key), *self._locations.get(key, [])]
        uses: list[tuple[ast.AST, str]] = []
        for root in roots:
            for member in self.groups.get(root, [root]):
                uses.extend(self.c.unsafe.get(member, []))
        return uses

    # ----- numpy arrays and torch tensors ------------------------------------------------------------
    def is_signed_numpy_array(self, expr: ast.AST, depth: int = 0) -> bool:
        """Known to be a numpy array of a signed integer dtype (``np.arange(n)``, ``.astype(np.int64)``)."""
        if depth > 6:
            return False
        c = self.c
        if isinstance(expr, ast.Call):
            func = expr.func
            qnames = c.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
            dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
            if qnames & {"numpy.arange", "numpy.indices"}:
                return dtype is None or c.types.dtype_qname(dtype) is not None
            creation = c.creation_by_id.get(id(expr))
            if creation is not None:
                return creation.library == "numpy" and creation.dtype is not None and c.types.dtype_qname(creation.dtype) is not None
            if isinstance(func, ast.Attribute) and func.attr == "astype" and expr.args:
                return c.types.dtype_qname(expr.args[0]) is not None
            return False
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv)):
            return self.is_signed_numpy_array(expr.left, depth + 1) or self.is_signed_numpy_array(expr.right, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self.is_signed_numpy_array(expr.value, depth + 1)
        if isinstance(expr, ast.Name):
            key = c.key_of(expr)
            bindings = c.bindings.get(key, []) if key is not None else []
            return any(b.how == "expr" and self.is_signed_numpy_array(b.expr, depth + 1) for b in bindings)
        return False

    def is_torch_tensor(self, expr: ast.AST) -> bool:
        """Known to be a torch tensor: torch creation, ``torch.Tensor`` annotation, ``.cpu``/``.gpu`` of a factory."""
        c = self.c
        if isinstance(expr, ast.Attribute) and expr.attr in ("cpu", "gpu"):
            return self._is_factory_value(expr.value)
        if isinstance(expr, ast.Attribute) and expr.attr in ("np", "T", "data"):
            return False
        if isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            return self.is_torch_tensor(expr.value)
        if isinstance(expr, ast.Call):
            creation = c.creation_by_id.get(id(expr))
            if creation is not None:
                return creation.library == "torch"
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                "to", "cuda", "cpu", "clone", "contiguous", "pin_memory", "detach", "view", "reshape", "copy_to_gpu"
            ):
                return self.is_torch_tensor(expr.func.value)
            return False
        key = c.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if key is None:
            return False
        if key in self._torch_memo:
            return self._torch_memo[key]
        self._torch_memo[key] = False
        result = any(self._is_torch_annotation(a) for a in c.annotations.get(key, [])) or any(
            b.how == "expr" and self.is_torch_tensor(b.expr) for b in c.bindings.get(key, [])
        )
        self._torch_memo[key] = result
        return result

    def _is_torch_annotation(self, annotation: ast.AST) -> bool:
        """``torch.Tensor``, ``Optional[torch.Tensor]``, ``torch.Tensor | None``; not ``dict[str, torch.Tensor]``."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        if isinstance(annotation, (ast.Name, ast.Attribute)):
            return "torch.Tensor" in self.c.qualified_names(annotation)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self._is_torch_annotation(annotation.left) or self._is_torch_annotation(annotation.right)
        if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in ("Optional", "Union", "Annotated"):
            inner = annotation.slice
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return any(self._is_torch_annotation(item) for item in items[:1] if attr_name(annotation.value) == "Annotated") \
                or (attr_name(annotation.value) != "Annotated" and any(self._is_torch_annotation(i) for i in items))
        return False

    def _is_factory_value(self, expr: ast.AST) -> bool:
        c = self.c
        if isinstance(expr, ast.Call):
            return attr_name(expr.func) in self.options.buffer_factories
        key = c.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if key is None:
            return False
        return any(b.how == "expr" and self._is_factory_value(b.expr) for b in c.bindings.get(key, []))


@dataclass(frozen=True)
class ExternalFunction:
    """A function of another project module that writes pointer values into some parameters."""

    qname: str
    writes: dict[str, Value]


def _strongest(values: Iterable[Value | None]) -> Value | None:
    best: Value | None = None
    for value in values:
        if value is not None and (best is None or value.origin > best.origin):
            best = value
    return best


def _data_name(data: ast.AST | None) -> str | None:
    """The name of a creation's data argument (``torch.tensor(self.peer_ptrs)``, ``list(handle.buffer_ptrs)``)."""
    while isinstance(data, ast.Call) and attr_name(data.func) in ("list", "tuple") and data.args:
        data = data.args[0]
    return attr_name(data) if isinstance(data, (ast.Name, ast.Attribute)) else None


_BASE_WORDS = re.compile(r"(?:^|_)(?:base|start|begin|origin|lo|low|first)(?:_|$)", re.IGNORECASE)


def _looks_like_base(node: ast.AST, names: NamePatterns) -> bool:
    """An untraced operand named like a base address (``base``, ``pool_start``, ``base_ptr``)."""
    name = attr_name(node)
    return name is not None and (bool(_BASE_WORDS.search(name)) or names.is_pointer_name(name))


def _ev(evidence: Evidence, node: ast.AST, message: str) -> Evidence:
    return ((node, message), *evidence)[:MAX_EVIDENCE]


def collect(module: ast.Module, options, context=None) -> ModuleFacts:  # type: ignore[no-untyped-def]
    return ModuleFacts(FactCollector(options, context).run(module))
