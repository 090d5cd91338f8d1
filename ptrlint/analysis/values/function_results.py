"""What a module function hands back to its callers: the value it returns for a call (its return
expressions, with the call's arguments bound to its parameters), the pointer values it writes into a
parameter, and which module-level helpers wrap an address into int64 range."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ..semantic.model import SemanticModel
from ..semantic.records import FunctionNode, NameKey
from ..semantic.syntax import attr_name, bind_arguments
from .fixpoint import Evaluator
from .lattice import Kind, Origin, Value, strongest
from .result_names import named_result


class FunctionResults:
    """The results of one module's functions (``facts.flow.results``), computed for the evaluator."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator) -> None:
        self.model, self.evaluator, self.names = model, evaluator, model.options.names

    def bind_arguments(self, function: FunctionNode, call: ast.Call) -> list[tuple[str, ast.expr]]:
        """(parameter name, argument) pairs of a call to a module function or method."""
        return bind_arguments(function, call, self.model.method_kinds.get(id(function)) in ("instance", "class"))

    def wrap_helpers(self, wanted: Callable[[str], bool] | None = None) -> list[str]:
        """The module-level functions of one parameter that wrap an address into int64 range (``to_i64(p)``
        returns ``p - (1 << 64) if p >= 1 << 63 else p``, or ``ctypes.c_int64(p).value``): asked with a raw
        address for the parameter, they return a wrapped one. In source order; only the ``wanted`` names."""
        out: list[str] = []
        for key, function in self.model.functions.items():
            args = function.args
            if key.scope != id(self.model.module_scope) or len(args.args) != 1 or args.posonlyargs or args.vararg:
                continue
            if wanted is not None and not wanted(function.name):
                continue
            probe = ast.Call(
                func=ast.Name(id=function.name, ctx=ast.Load()),
                args=[
                    ast.Call(
                        func=ast.Attribute(value=ast.Name(id="_", ctx=ast.Load()), attr="data_ptr", ctx=ast.Load()),
                        args=[],
                        keywords=[],
                    )
                ],
                keywords=[],
            )
            value = self.evaluator.query(lambda f=function, p=probe: self.returned_value(f, p))  # type: ignore[misc]
            if value is not None and value.origin is Origin.WRAPPED and value.kind is Kind.SCALAR:
                out.append(function.name)
        return sorted(out, key=lambda name: self.model.functions[NameKey(id(self.model.module_scope), name)].lineno)

    def returned_value(self, function: FunctionNode, call: ast.Call | None, index: int | None = None) -> Value | None:
        """What a module function returns for this call: its return expressions, with the call's
        arguments bound to the parameters (so a wrapping helper wraps the caller's address).
        Evaluated once per function and signature of the known argument values."""
        if id(function) in self.evaluator.in_progress_funcs or len(self.evaluator.bound) >= 2:
            return None
        bound: dict[NameKey, Value | None] = {}
        if call is not None:
            scope_id = self.model.function_scopes.get(id(function))
            if scope_id is not None:
                for param, arg in self.bind_arguments(function, call):
                    value = self.evaluator.value(arg)
                    if value is not None:
                        bound[NameKey(scope_id, param)] = value
        signature = tuple(sorted((k.name, v.kind.value, int(v.origin), v.python_int) for k, v in bound.items() if v))
        memo_key = (id(function), index, signature)

        def compute() -> Value | None:
            self.evaluator.in_progress_funcs.add(id(function))
            if bound:  # with no known argument, the function's own (memoised) view of its parameters applies
                self.evaluator.bound.append((bound, {}, {}))
            try:
                values, returned = [], []
                for ret in self.model.returns.get(id(function), []):
                    if index is not None:
                        if not isinstance(ret, ast.Tuple) or index >= len(ret.elts):
                            continue
                        if any(isinstance(el, ast.Starred) for el in ret.elts[: index + 1]):
                            continue
                        ret = ret.elts[index]
                    values.append(self.evaluator.value(ret))
                    returned.append(ret)
                best = strongest(values)
                if (best is None or best.origin is Origin.FOREIGN) and returned:
                    # nothing known of the values (or only that a binding made them): what the names say
                    best = named_result(self.names, function, returned, index, self.int_alias) or best
                return best
            finally:
                if bound:
                    self.evaluator.bound.pop()
                self.evaluator.in_progress_funcs.discard(id(function))

        return self.evaluator.memoised(("r", memo_key), self.evaluator.return_memo, memo_key, compute)

    def int_alias(self, name: str) -> bool:
        """A module-level integer type alias: ``DevicePtr = NewType("DevicePtr", int)``, ``Addr = int``."""
        for binding in self.model.bindings.get(NameKey(id(self.model.module_scope), name), []):
            value = binding.expr
            if isinstance(value, ast.Call) and attr_name(value.func) == "NewType" and len(value.args) == 2:
                value = value.args[1]
            if (
                binding.how == "expr"
                and isinstance(value, ast.Name)
                and "builtins.int" in self.model.qualified_names(value)
            ):
                return True
        return False

    def param_received(self, function: FunctionNode, param: str) -> Value | None:
        """Pointer values a function writes into one of its parameters (``out[:] = ...``)."""
        scope_id = self.model.function_scopes.get(id(function))
        if scope_id is None:
            return None
        value = self.evaluator.class_value(self.model.alias_classes.find(NameKey(scope_id, param)), writes_only=True)
        return value if value is not None and value.origin is Origin.RAW else None
