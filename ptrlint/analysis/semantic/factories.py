"""Factories: functions that build a tensor or array from one parameter with a dtype from another
(``def to_table(values, dtype=torch.int64): return torch.tensor(values, dtype=dtype, ...)``).

A call of a factory is a creation at the call site: its data is what the caller passes, its dtype
the one the caller passes (positionally or by keyword) or the factory's default. Factories of the
same module are read from its model; factories of other project modules are asked of the project
view (``view.factory``), which reads their module on demand.

A factory may also *substitute* a signed dtype for the one its caller asked for
(``torch.int64 if dtype == torch.uint64 else dtype``, or ``if dtype == torch.uint64: dtype =
torch.int64``): :attr:`FactorySignature.substitution` is that signed dtype, where PTR001 reports
the wrapper with its callers' evidence.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...names import SIGNED64_DTYPES
from .records import Creation, FactorySignature, FunctionNode, NameKey

if TYPE_CHECKING:
    from .model import SemanticModel


def factory_signature(model: SemanticModel, function: FunctionNode) -> tuple[FactorySignature, ast.expr | None] | None:
    """The factory signature of ``function`` and, if it substitutes a signed dtype, that dtype's node."""
    scope_id = model.function_scopes.get(id(function))
    returns: list[ast.expr] | str | None  # the returned expressions, then the library of what it returns
    returns = model.returns.get(id(function), [])
    if scope_id is None or len(returns) != 1:
        return None
    creation = _returned_creation(model, returns[0])
    if creation is None or creation.library not in ("torch", "numpy"):
        return None
    args = function.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if model.method_kinds.get(id(function)) in ("instance", "class") and params:
        params = params[1:]
    keyword_only = [a.arg for a in args.kwonlyargs]
    data = creation.data  # None: a buffer made by size (`torch.zeros(n, ...)`), filled where it is stored
    if data is not None and (
        not isinstance(data, ast.Name) or data.id not in params or not _is_parameter(model, data, scope_id)
    ):
        return None
    dtype, substituted = _dtype_parameter(model, creation.dtype, scope_id, set(params) | set(keyword_only))
    if dtype is None:
        return None
    default = _default(function, dtype)
    if default is None or (isinstance(default, ast.Constant) and default.value is None):
        default_signed = creation.qname in _INFERRING  # no dtype: the creation infers int64 from Python ints
    else:
        default_signed = model.types.dtype_qname(default) in SIGNED64_DTYPES
    position = params.index(dtype) if dtype in params else None
    substitution = (substituted.lineno, substituted.col_offset) if substituted is not None else None
    if data is None and substitution is None and not default_signed:
        return None  # a buffer made by size with the caller's dtype: nothing the call site adds
    returns = "torch" if creation.library == "numpy" and _through_from_numpy(model, returns[0]) else None
    signature = FactorySignature(
        function.name,
        creation.library,
        params.index(data.id) if data is not None else None,
        data.id if data is not None else None,
        position,
        dtype,
        default_signed,
        substitution,
        returns,
    )
    return signature, substituted


# creation calls that infer int64 from a list of Python ints when given no dtype
_INFERRING = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.asarray",
        "numpy.array",
        "numpy.asarray",
        "numpy.ascontiguousarray",
        "numpy.fromiter",
    }
)


def _returned_creation(model: SemanticModel, ret: ast.expr) -> Creation | None:
    """The creation a function returns: ``return torch.tensor(...)``, ``return t.to(device)`` with
    ``t = torch.tensor(...)`` bound once."""
    root = model.alias_root(ret)
    if isinstance(root, ast.Call):
        return model.creation_by_id.get(id(root))
    if isinstance(root, ast.Name):
        key = model.key_of(root)
        bindings = model.bindings.get(key, []) if key is not None else []
        if len(bindings) == 1 and bindings[0].how == "expr":
            inner = model.alias_root(bindings[0].expr)
            return model.creation_by_id.get(id(inner)) if isinstance(inner, ast.Call) else None
    return None


def _through_from_numpy(model: SemanticModel, ret: ast.expr) -> bool:
    """``return torch.from_numpy(np.asarray(xs, dtype=dtype)).cuda()``: a numpy array handed on as a tensor."""
    exprs = [ret]
    if isinstance(ret, ast.Name):
        key = model.key_of(ret)
        exprs += [b.expr for b in (model.bindings.get(key, []) if key is not None else []) if b.how == "expr"]
    return any(
        isinstance(node, ast.Call) and "torch.from_numpy" in model.qualified_names(node.func)
        for expr in exprs
        for node in ast.walk(expr)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
    )


def _is_parameter(model: SemanticModel, name: ast.Name, scope_id: int) -> bool:
    return id(model.scope_of(name).resolve(name.id)) == scope_id


def _dtype_parameter(
    model: SemanticModel, dtype: ast.expr | None, scope_id: int, params: set[str]
) -> tuple[str | None, ast.expr | None]:
    """(the dtype parameter the creation takes its dtype from, a signed dtype substituted for it)."""
    if isinstance(dtype, ast.Name) and dtype.id in params and _is_parameter(model, dtype, scope_id):
        key = NameKey(scope_id, dtype.id)
        for binding in model.bindings.get(key, []):  # `if dtype == torch.uint64: dtype = torch.int64`
            if binding.how == "expr" and model.types.dtype_qname(binding.expr) in SIGNED64_DTYPES:
                return dtype.id, binding.expr
        return dtype.id, None
    if isinstance(dtype, ast.IfExp):  # `torch.int64 if dtype == torch.uint64 else dtype`
        for signed, other in ((dtype.body, dtype.orelse), (dtype.orelse, dtype.body)):
            if (
                model.types.dtype_qname(signed) in SIGNED64_DTYPES
                and isinstance(other, ast.Name)
                and other.id in params
                and _is_parameter(model, other, scope_id)
            ):
                return other.id, signed
    return None, None


def _default(function: FunctionNode, name: str) -> ast.expr | None:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for arg, default in (*zip(positional, defaults), *zip(args.kwonlyargs, args.kw_defaults)):
        if arg.arg == name:
            return default
    return None
