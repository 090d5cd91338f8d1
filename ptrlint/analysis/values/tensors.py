"""Which expressions are known numpy arrays of a signed dtype, or torch tensors (for PTR005 and
the choice of fix); from creations, annotations, casts and bindings."""

from __future__ import annotations

import ast

from ...names import TENSOR_RESULT_METHODS
from ..semantic.model import SemanticModel
from ..semantic.records import Key
from ..semantic.syntax import annotation_expr, attr_name, entry_name, is_slice_subscript

_INDEX_TUPLES = frozenset({"numpy.nonzero", "numpy.where", "numpy.indices", "numpy.unravel_index"})  # intp results
_ELEMENTWISE_TUPLES = frozenset({"numpy.divmod", "numpy.meshgrid", "numpy.broadcast_arrays", "numpy.ix_"})


class TensorKinds:
    """Array and tensor kinds of one module's expressions (``facts.tensors``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model, self.view, self.options, self.names = model, model.view, model.options, model.options.names
        self._torch_memo: dict[Key, bool] = {}
        self._signed_memo: dict[Key, bool] = {}  # is_signed_numpy_array of a name or attribute

    def is_signed_numpy_array(self, expr: ast.AST, depth: int = 0) -> bool:
        """Known to be a numpy array of a signed integer dtype (``np.arange(n)``, ``.astype(np.int64)``)."""
        if depth > 12:  # a chain of bindings this long is a cycle, or not worth following
            return False
        model = self.model
        if isinstance(expr, ast.Call):
            func = expr.func
            qnames = model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
            dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
            if qnames & {"numpy.arange", "numpy.indices"}:
                return dtype is None or model.types.dtype_qname(dtype) is not None
            creation = model.creation_by_id.get(id(expr))
            if creation is not None:
                return (
                    creation.library == "numpy"
                    and creation.dtype is not None
                    and model.types.dtype_qname(creation.dtype) is not None
                )
            if isinstance(func, ast.Attribute) and func.attr == "astype" and expr.args:
                return model.types.dtype_qname(expr.args[0]) is not None
            return self._returns_signed_numpy(expr, None, depth)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv)):
            return self.is_signed_numpy_array(expr.left, depth + 1) or self.is_signed_numpy_array(expr.right, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self.is_signed_numpy_array(expr.value, depth + 1)
        if isinstance(expr, (ast.Name, ast.Attribute)):  # `ids`, `self.starts` (bound by another method)
            key = model.key_of(expr)
            if key is None:
                return False
            known = self._signed_memo.get(key)
            if known is not None:
                return known
            found = any(
                b.how == "expr"
                and self.is_signed_numpy_array(b.expr, depth + 1)
                or b.how == "telem"
                and self.signed_numpy_item(b.expr, depth + 1, b.index)
                for b in model.bindings.get(key, [])
            )
            if found or depth == 0:  # a yes holds with any budget; a no only with the whole one
                self._signed_memo[key] = found
            return found
        return False

    def signed_numpy_item(self, call: ast.expr, depth: int, index: int = -1) -> bool:
        """An item of the tuple a numpy call returns is a signed integer array: ``q, r = np.divmod(rows, k)``,
        ``ii, jj = np.meshgrid(np.arange(n), np.arange(m))`` (from a signed operand), ``rows, cols =
        np.nonzero(mask)`` (intp indices)."""
        if not isinstance(call, ast.Call) or not isinstance(call.func, (ast.Name, ast.Attribute)):
            return False
        qnames = self.model.qualified_names(call.func)
        if qnames & _INDEX_TUPLES:
            return True
        if qnames & _ELEMENTWISE_TUPLES:
            return any(self.is_signed_numpy_array(arg, depth + 1) for arg in call.args)
        return index >= 0 and self._returns_signed_numpy(call, index, depth)

    def _returns_signed_numpy(self, call: ast.Call, index: int | None, depth: int) -> bool:
        """A call of a function of this module every ``return`` of which gives a signed integer numpy array
        (``index``: item ``index`` of the tuple it returns): ``first = runs(ids)[1]``, ``s, first, n = runs(ids)``
        where ``runs`` ends ``return slots, ids[slots], ends - slots`` and ``ids`` is int64."""
        function = self.model.types.function_called(call.func)
        returned = self.model.returns.get(id(function), []) if function is not None else []
        if index is not None:
            items = [
                ret.elts[index]
                for ret in returned
                if isinstance(ret, ast.Tuple)
                and index < len(ret.elts)
                and not any(isinstance(el, ast.Starred) for el in ret.elts[: index + 1])
            ]
            if len(items) != len(returned):
                return False
            returned = items
        return bool(returned) and all(self.is_signed_numpy_array(ret, depth + 1) for ret in returned)

    def is_torch_tensor(self, expr: ast.AST) -> bool:
        """Known to be a torch tensor: torch creation, ``torch.Tensor`` annotation, ``.cpu``/``.gpu`` of a factory."""
        model = self.model
        if isinstance(expr, ast.Attribute) and expr.attr in ("cpu", "gpu"):
            return self.is_factory_value(expr.value)
        if isinstance(expr, ast.Attribute) and expr.attr in ("np", "T", "data"):
            return False
        if isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            return self.is_torch_tensor(expr.value)
        if isinstance(expr, ast.Call):
            creation = model.creation_by_id.get(id(expr))
            if creation is not None:
                return creation.library == "torch"
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in TENSOR_RESULT_METHODS:
                return self.is_torch_tensor(expr.func.value)
            return False
        key = model.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) or entry_name(expr) else None
        if key is None:
            return False
        if key in self._torch_memo:
            return self._torch_memo[key]
        self._torch_memo[key] = False
        bindings = model.bindings.get(key, [])
        if any(b.how == "expr" and self.is_python_list(b.expr) for b in bindings):
            result = False  # `ptrs = [0] * n` ... `ptrs = torch.tensor(ptrs)`: a list where it is written into
        else:
            result = any(self.is_torch_annotation(a) for a in model.annotations.get(key, [])) or any(
                b.how == "expr" and self.is_torch_tensor(b.expr) for b in bindings
            )
        self._torch_memo[key] = result
        return result

    def is_python_list(self, expr: ast.AST) -> bool:
        """A Python list: a display, a comprehension, ``[0] * n`` or ``list(...)``."""
        if isinstance(expr, (ast.List, ast.ListComp)):
            return True
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
            return isinstance(expr.left, ast.List) or isinstance(expr.right, ast.List)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name):
            return "builtins.list" in self.model.qualified_names(expr.func)
        return False

    def is_torch_annotation(self, annotation: ast.AST) -> bool:
        """``torch.Tensor``, ``Optional[torch.Tensor]``, ``torch.Tensor | None``; not ``dict[str, torch.Tensor]``."""
        parsed = annotation_expr(annotation)
        if parsed is None:
            return False
        annotation = parsed
        if isinstance(annotation, (ast.Name, ast.Attribute)):
            return "torch.Tensor" in self.model.qualified_names(annotation)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self.is_torch_annotation(annotation.left) or self.is_torch_annotation(annotation.right)
        if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in ("Optional", "Union", "Annotated"):
            inner = annotation.slice
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return any(
                self.is_torch_annotation(item) for item in items[:1] if attr_name(annotation.value) == "Annotated"
            ) or (attr_name(annotation.value) != "Annotated" and any(self.is_torch_annotation(i) for i in items))
        return False

    def is_factory_value(self, expr: ast.AST) -> bool:
        model = self.model
        if isinstance(expr, ast.Call):
            return attr_name(expr.func) in self.options.buffer_factories
        key = model.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if key is None:
            return False
        return any(b.how == "expr" and self.is_factory_value(b.expr) for b in model.bindings.get(key, []))
