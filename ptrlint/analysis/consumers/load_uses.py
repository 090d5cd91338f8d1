"""What the code around one load of a pointer table does with it: the dispatch on the load's parent
(a subscript, an attribute or a method, an operator, a comparison, a return, an assignment, a
display) and the uses of attributes, methods and operators. A call argument is classified by
:mod:`.use_kinds`, a value that holds the table is followed by :mod:`.held`, a returned one by
:mod:`.readers`."""

from __future__ import annotations

import ast
from typing import Callable

from ...names import SIGNED64_DTYPES, VIEW_ATTRIBUTES, classify_string_dtype
from ..semantic.syntax import attr_name, is_slice_subscript, positional
from ..values.lattice import Kind
from .consumer_parts import ConsumersPart
from .uses import (
    INT64_METHODS,
    LOOPS,
    MAX_DEPTH,
    ORDER_METHODS,
    READBACK_METHODS,
    READY_METHODS,
    SAME_TABLE_METHODS,
    WRITE_METHODS,
    Trail,
    Use,
    UseKind,
    copied,
)


class LoadUses(ConsumersPart):
    """The uses one load of a table leads to (``Consumers.context``; see the module docstring)."""

    def context(self, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        if trail.depth > MAX_DEPTH:
            return [Use(UseKind.ESCAPE, expr, "followed too far to see its readers", trail.after)]
        if trail.path:
            return self.search.held.context(expr, trail, visited)
        parent = self.search.parent(expr)
        if parent is None:
            return []
        same: Callable[[], list[Use]] = lambda: self.context(parent, trail.step(), visited)  # noqa: E731
        cls = parent.__class__
        after = trail.after
        if cls is ast.Subscript and parent.value is expr:  # type: ignore[attr-defined]
            if not isinstance(parent.ctx, ast.Load):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "element store", write=True)]
            if is_slice_subscript(parent):  # type: ignore[arg-type]
                return same()
            index = parent.slice  # type: ignore[attr-defined]
            if self.is_index_table(index):  # a gather by an index tensor: a table of the same dtype
                return same()
            return [Use(UseKind.READBACK, parent, "reads an element", after), *same()]
        if cls is ast.Attribute and parent.value is expr:  # type: ignore[attr-defined]
            return self.attribute_use(parent, trail, visited)  # type: ignore[arg-type]
        if cls is ast.Call:
            return self.search.kinds.argument_use(parent, expr, trail, visited)  # type: ignore[arg-type]
        if cls is ast.keyword:
            call = self.search.parent(parent)
            if isinstance(call, ast.Call):
                return self.search.kinds.argument_use(call, expr, trail, visited, keyword=parent.arg)  # type: ignore[attr-defined]
            return []
        if cls is ast.BinOp:
            return self.arithmetic_use(parent, expr, trail, visited)  # type: ignore[arg-type]
        if cls is ast.AugAssign:
            if isinstance(parent.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "bitwise update")]
            return [Use(UseKind.INT64, parent, "in-place arithmetic (torch's uint64 has no such kernel)", after)]
        if cls is ast.UnaryOp:
            if isinstance(parent.op, ast.Not):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "truth test")]
            return [Use(UseKind.ORDER, parent, "a sign operation", after)]
        if cls is ast.Compare:
            ops = parent.ops  # type: ignore[attr-defined]
            if any(isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in ops) and not trail.numpy:
                return [Use(UseKind.ORDER, parent, "an ordering comparison", after)]
            return [Use(UseKind.READY, parent, "comparison")]
        if cls is ast.Return:
            return self.search.readers.returned(parent, trail, visited)  # type: ignore[arg-type]
        if cls in (ast.Assign, ast.AnnAssign, ast.NamedExpr):
            if getattr(parent, "value", None) is not expr:
                return []
            return self.search.held.assigned(parent, trail, visited)  # type: ignore[arg-type]
        if cls in LOOPS and getattr(parent, "iter", None) is expr:
            return [Use(UseKind.READBACK, parent, "iterated over", after)]
        if cls in (ast.List, ast.Tuple):
            position = next(i for i, e in enumerate(parent.elts) if e is expr)  # type: ignore[attr-defined]
            if any(isinstance(e, ast.Starred) for e in parent.elts[:position]):  # type: ignore[attr-defined]
                return self.context(parent, trail.into(("item", None)), visited)
            return self.context(parent, trail.into(("index", position)), visited)
        if cls in (ast.Set, ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return self.context(parent, trail.into(("item", None)), visited)
        if cls is ast.Dict:
            return self.search.held.dict_value(parent, expr, trail, visited)  # type: ignore[arg-type]
        if cls is ast.Starred:
            return [Use(UseKind.ESCAPE, parent, "unpacked into the arguments of a call", after)]
        if cls is ast.IfExp:
            return same() if parent.test is not expr else []  # type: ignore[attr-defined]
        if cls in (ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda):
            return [Use(UseKind.ESCAPE, parent, "yielded or captured", after)]
        return []

    def is_index_table(self, index: ast.AST) -> bool:
        """``table[idx]`` with an index tensor or list (a gather), not a Python int."""
        if isinstance(index, (ast.List, ast.ListComp)):
            return True
        if isinstance(index, ast.Call):
            return attr_name(index.func) in ("tensor", "as_tensor", "arange", "array", "asarray", "nonzero", "argsort")
        if isinstance(index, (ast.Name, ast.Attribute)):
            value = self.facts.value(index)
            return value is not None and value.kind is Kind.SEQ
        return False

    def attribute_use(self, attribute: ast.Attribute, trail: Trail, visited: set[object]) -> list[Use]:
        attr = attribute.attr
        after = trail.after
        call = self.search.parent(attribute)
        if isinstance(call, ast.Call) and call.func is attribute:
            return self.method_use(call, attr, trail, visited)
        if attr in VIEW_ATTRIBUTES:
            return self.search.context(attribute, trail.step(numpy=trail.numpy or attr == "np"), visited)
        if attr == "dtype":
            compare = self.search.parent(attribute)
            if isinstance(compare, ast.Compare):
                others = [compare.left, *compare.comparators]
                if any(self.model.types.dtype_qname(o) in SIGNED64_DTYPES for o in others if o is not attribute):
                    return [Use(UseKind.INT64, compare, "a `.dtype` check against int64", after)]
            return [Use(UseKind.READY, attribute, "reads the dtype", metadata=True)]
        return [Use(UseKind.READY, attribute, f"reads `.{attr}`", metadata=True)]

    def method_use(self, call: ast.Call, method: str, trail: Trail, visited: set[object]) -> list[Use]:
        args = positional(call)
        numpy, after = trail.numpy, trail.after
        if method == "view" and args and (self.model.types.dtype_qname(args[0]) is not None or self.is_dtype(args[0])):
            return [Use(UseKind.READY, call, "an explicit bit reinterpretation")]
        if method == "numpy":
            return self.search.context(call, trail.step(numpy=True), visited)
        if method in READBACK_METHODS:
            return [Use(UseKind.READBACK, call, f"`.{method}()`", after)]
        if method in ORDER_METHODS and not numpy:
            return [Use(UseKind.ORDER, call, f"`.{method}()`", after)]
        if method in SAME_TABLE_METHODS or method == "view":
            if method in ("to", "type") and args and self.is_dtype(args[0]):
                return [Use(UseKind.READY, call, "converted to another dtype")]
            return copied(call, method, after) + self.search.context(call, trail.step(), visited)
        if method in WRITE_METHODS:
            return [Use(UseKind.READY, call, f"`.{method}()`", write=True)]
        if method in READY_METHODS:
            return [Use(UseKind.READY, call, f"`.{method}()`")]
        if method in INT64_METHODS and not numpy:
            use = Use(UseKind.INT64, call, f"`.{method}()` (torch's uint64 has no such kernel)", after)
            return [use, *self.search.context(call, trail.step(after=True), visited)]
        if numpy:
            return [Use(UseKind.READY, call, f"numpy `.{method}()`")]
        return [Use(UseKind.INT64, call, f"`.{method}()`, which ptrlint does not know to work on uint64", after)]

    def is_dtype(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return classify_string_dtype(expr.value) is not None  # "int64", not "cuda"
        return (
            any(q.startswith(("torch.", "numpy.")) for q in self.model.qualified_names(expr))
            and isinstance(expr, (ast.Attribute, ast.Name))
            and attr_name(expr) not in ("device",)
        )

    def arithmetic_use(self, binop: ast.BinOp, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        op = binop.op
        numpy, after = trail.numpy, trail.after
        other = binop.right if binop.left is expr else binop.left
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return self.search.context(binop, trail.step(), visited)
        if isinstance(op, (ast.FloorDiv, ast.Mod, ast.Div)) and not numpy:
            return [Use(UseKind.ORDER, binop, "division or modulo (depends on the sign)", after)]
        if numpy:
            value = self.facts.value(other)
            if isinstance(other, ast.Constant) or (
                value is not None
                and value.kind is Kind.SCALAR
                and value.python_int
                and not self.facts.tensors.is_signed_numpy_array(other)
            ):
                return self.search.context(binop, trail.step(), visited)  # uint64 op Python int stays uint64
            use = Use(UseKind.INT64, binop, "numpy arithmetic with a signed array (uint64 + int64 is float64)", after)
        else:
            use = Use(UseKind.INT64, binop, "torch arithmetic (torch's uint64 has no such kernel)", after)
        return [use, *self.search.context(binop, trail.step(after=True), visited)]
