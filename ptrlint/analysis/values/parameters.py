"""What a module function's parameters hold: the arguments the module's own calls pass (``peer_table(
staging_ptrs)`` gives ``addresses`` what ``staging_ptrs`` holds), and, for a parameter typed as a list
of ints and named as an address table (``kv_data_ptrs: Sequence[int]``), that name and type together."""

from __future__ import annotations

import ast

from ..semantic.model import SemanticModel
from ..semantic.records import FunctionNode, NameKey
from ..semantic.syntax import attr_name, bind_arguments
from .lattice import Kind, Origin, Value


class Parameters:
    """Parameters of one module's functions (``facts.flow.parameters``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model, self.names = model, model.options.names
        # parameters' functions by scope id, and the module's calls of each function (by its id)
        self._callers: tuple[dict[int, FunctionNode], dict[int, list[ast.Call]]] | None = None

    def caller_arguments(self, key: NameKey) -> list[ast.expr]:
        """The arguments this module's calls of a module function pass for one of its parameters
        (``peer_table(staging_ptrs)``: ``addresses`` holds what ``staging_ptrs`` holds)."""
        if self._callers is None:
            model = self.model
            functions = [*model.functions.values(), *(m for ms in model.class_methods.values() for m in ms.values())]
            scopes = {model.function_scopes[id(f)]: f for f in functions if id(f) in model.function_scopes}
            names = {f.name for f in functions}
            calls: dict[int, list[ast.Call]] = {}
            for call in model.calls:
                if attr_name(call.func) in names:
                    target = model.types.function_called(call.func)
                    if target is not None:
                        calls.setdefault(id(target), []).append(call)
            self._callers = (scopes, calls)
        scopes, calls = self._callers
        function = scopes.get(key.scope)
        if function is None:
            return []
        return [
            arg
            for call in calls.get(id(function), [])
            for name, arg in bind_arguments(
                function, call, self.model.method_kinds.get(id(function)) in ("instance", "class")
            )
            if name == key.name
        ]

    def names_table(self, key: NameKey) -> Value | None:
        """A parameter typed as a list of ints and named as an address table (``staging_ptrs:
        Sequence[int]``, ``kv_data_ptrs: list[int]``) holds addresses: both its name and its type say so.
        A name alone is not enough, nor a scalar (``ptr: int``)."""
        self.caller_arguments(key)  # builds the index of parameters' functions
        function = self._callers[0].get(key.scope) if self._callers else None
        if function is None or not self.names.is_table_name(key.name) or not self.names.is_pointer_name(key.name):
            return None
        args = function.args
        param = next((a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg == key.name), None)
        if param is None or not _int_sequence(param.annotation):
            return None
        return Value(
            Kind.SEQ, Origin.NAMED, ((param, f"parameter `{key.name}` is a list of ints named like an address table"),)
        )


_INT_SEQUENCES = frozenset({"Sequence", "List", "list", "Tuple", "tuple", "Iterable", "Collection", "MutableSequence"})


def _int_sequence(annotation: ast.expr | None) -> bool:
    """``Sequence[int]``, ``list[int]``, ``tuple[int, ...]``, ``Optional[List[int]]``."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _int_sequence(annotation.left) or _int_sequence(annotation.right)
    if not isinstance(annotation, ast.Subscript):
        return False
    outer = attr_name(annotation.value)
    inner = annotation.slice
    if outer in ("Optional", "Union"):
        return any(_int_sequence(i) for i in (inner.elts if isinstance(inner, ast.Tuple) else [inner]))
    if outer not in _INT_SEQUENCES:
        return False
    first = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
    return isinstance(first, ast.Name) and first.id == "int"
