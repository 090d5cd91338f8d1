"""The single traversal over a module's ast: facts, recorded once, decided later.

:class:`FactCollector` walks the tree once, in source order, and dispatches each node to its
handler (:mod:`.statements`, :mod:`.expressions`), which records into the module's
:class:`~.model.SemanticModel`: bindings of names and ``self`` attributes, list appends, element
stores, ``copy_``/``fill_`` calls, creation calls, casts, ctypes calls and the uses that uint64
buffers do not support. After the walk, :meth:`FactCollector.finalize` resolves provisional keys,
classifies the calls whose meaning depends on imports (:mod:`.calls`) and builds the alias
classes. :class:`~..values.facts.ModuleFacts` answers the rules' questions from the model; no rule walks
the tree again.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from ...names import CAST_METHODS
from ..boundary import ModuleContext
from ..options import AnalysisOptions
from . import expressions, statements
from .calls import CallClassifier
from .device import is_device_function
from .model import SemanticModel
from .syntax import CHILD_FIELDS
from .traversal import Traversal


class FactCollector:
    """The traversal and its dispatch; the per-node work is in the handlers."""

    def __init__(self, options: AnalysisOptions, context: ModuleContext | None = None) -> None:
        self.model = SemanticModel(options, context)
        self.state = Traversal(self.model)  # what the handlers read and write
        self.classifier = CallClassifier(self.model)
        self.options = options

    def run(self, module: ast.Module) -> SemanticModel:
        """Walk ``module`` once, settle the model, and hand it on (the traversal is then done with)."""
        for stmt in module.body:
            self._walk(stmt)
        self.finalize()
        return self.model

    def _walk(self, node: ast.AST) -> None:
        cls = node.__class__
        pre, order, fields, post, is_def = _PLANS[cls]
        if is_def and node.decorator_list and is_device_function(node):  # type: ignore[attr-defined]
            self.model.scope.bind(node.name)  # type: ignore[attr-defined]  # a kernel: device code holds no host tensors (see analysis/semantic/device.py)
            return
        if pre is not None:
            pre(self.state, node)
        walk, model = self._walk, self.model
        if order is not None:
            for child in order(node):
                walk(child)
        else:
            for name in fields:
                value = getattr(node, name)
                kind = value.__class__
                if kind is list:
                    for item in value:
                        kind = item.__class__
                        if kind is ast.Name:
                            model.node_scope[id(item)] = model.scope  # the commonest leaf, inlined
                        elif _WALKED[kind]:
                            walk(item)
                elif kind is ast.Name:
                    model.node_scope[id(value)] = model.scope
                elif _WALKED[kind]:
                    walk(value)
        if post is not None:
            post(self.state, node)

    def finalize(self) -> None:
        """Resolve provisional keys, classify import-dependent calls, type attribute keys, build the alias classes."""
        self.model.finalized = True
        self.model.rekey(self.model.canonical)
        for call, scope, raising in self.state.pending_calls:  # creations first: other calls take them as arguments
            func = call.func
            if isinstance(func, (ast.Name, ast.Attribute)) and not (
                isinstance(func, ast.Attribute) and func.attr in CAST_METHODS
            ):
                self.classifier.record_creation(call, self.model.qualified_names(func), scope, raising)
        self.classifier.record_factory_calls()  # after the creations: a factory returns one
        self.classifier.record_closure_arguments()
        for call, scope, raising in self.state.pending_calls:
            self.classifier.classify(call, scope, raising)
        self.model.settle()


# ----- dispatch tables (class -> handler), and children in source order where ast's differs ---------
_V = TypeVar("_V")


class _ByClass(dict[type, _V]):
    """A table by node class, each entry derived on its first lookup (one subscript per node)."""

    def __init__(self, derive: Callable[[type], _V]) -> None:
        super().__init__()
        self.derive = derive

    def __missing__(self, cls: type) -> _V:
        value = self[cls] = self.derive(cls)
        return value


# A handler, or a children-in-order function, takes the node of the class it is filed under (not expressible
# per entry in one table, hence Any for the node).
_Handler = Callable[[Traversal, Any], None]
_Order = Callable[[Any], Sequence[ast.AST]]
# class -> (pre, order, child fields, post, whether it is a function definition)
_Plan = tuple[_Handler | None, _Order | None, tuple[str, ...], _Handler | None, bool]


def _plan(cls: type) -> _Plan:
    fields = CHILD_FIELDS[cls]
    return (
        _PRE.get(cls),
        _ORDER.get(cls),
        fields,
        _POST.get(cls),
        cls is ast.FunctionDef or cls is ast.AsyncFunctionDef,
    )


def _walked(kind: type) -> bool:
    """Whether a child of this class is walked: a node with a handler or children of its own.
    Constants, operators (`ast.Add`), `pass` and the like are leaves without handlers: skipped
    without a call; what is not a node (None in a list, a string) is never walked."""
    if not issubclass(kind, ast.AST):
        return False
    pre, order, fields, post, _is_def = _PLANS[kind]
    return bool(pre or order or fields or post)


_PLANS: _ByClass[_Plan] = _ByClass(_plan)
_WALKED: _ByClass[bool] = _ByClass(_walked)


def _decorated_children(node: ast.AST) -> list[ast.AST]:
    """Decorators first (source order); ast lists them last."""
    out: list[ast.AST] = list(node.decorator_list)  # type: ignore[attr-defined]
    for name in node._fields:
        if name == "decorator_list":
            continue
        value = getattr(node, name)
        if isinstance(value, list):
            out.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST) and value._fields:
            out.append(value)
    return out


def _call_children(node: ast.Call) -> list[ast.AST]:
    rest: list[ast.AST] = [*node.args, *node.keywords]
    if len(rest) > 1:
        rest.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    return [node.func, *rest]


def _dict_children(node: ast.Dict) -> list[ast.AST]:
    out: list[ast.AST] = []
    for k, v in zip(node.keys, node.values):
        if k is not None:
            out.append(k)
        out.append(v)
    return out


def _ifexp_children(node: ast.IfExp) -> list[ast.AST]:
    return [node.body, node.test, node.orelse]


def _comprehension_children(node: ast.AST) -> list[ast.AST]:
    generators = node.generators  # type: ignore[attr-defined]
    if isinstance(node, ast.DictComp):
        return [node.key, node.value, *generators]
    return [node.elt, *generators]  # type: ignore[attr-defined]


_PRE: dict[type, _Handler] = {
    ast.Name: expressions.visit_Name,
    ast.Import: statements.visit_Import,
    ast.ImportFrom: statements.visit_ImportFrom,
    ast.Global: statements.visit_Global,
    ast.Nonlocal: statements.visit_Nonlocal,
    ast.ClassDef: statements.visit_ClassDef,
    ast.FunctionDef: statements.visit_FunctionDef,
    ast.AsyncFunctionDef: statements.visit_FunctionDef,
    ast.Lambda: expressions.visit_Lambda,
    ast.ListComp: expressions.visit_comprehension_scope,
    ast.SetComp: expressions.visit_comprehension_scope,
    ast.DictComp: expressions.visit_comprehension_scope,
    ast.GeneratorExp: expressions.visit_comprehension_scope,
    ast.Return: statements.visit_Return,
    ast.Assign: statements.visit_Assign,
    ast.AnnAssign: statements.visit_AnnAssign,
    ast.AugAssign: statements.visit_AugAssign,
    ast.NamedExpr: expressions.visit_NamedExpr,
    ast.For: statements.visit_For,
    ast.AsyncFor: statements.visit_For,
    ast.comprehension: expressions.visit_comprehension,
    ast.withitem: statements.visit_withitem,
    ast.With: statements.visit_With,
    ast.AsyncWith: statements.visit_With,
    ast.Attribute: expressions.visit_Attribute,
    ast.ExceptHandler: statements.visit_ExceptHandler,
    ast.Delete: statements.visit_Delete,
    ast.BinOp: expressions.visit_BinOp,
    ast.keyword: expressions.visit_keyword,
    ast.Call: expressions.visit_Call,
}
_POST: dict[type, _Handler] = {
    ast.ClassDef: statements.leave_ClassDef,
    ast.With: statements.leave_With,
    ast.AsyncWith: statements.leave_With,
    ast.FunctionDef: statements.leave_FunctionDef,
    ast.AsyncFunctionDef: statements.leave_FunctionDef,
    ast.Lambda: expressions.leave_scope,
    ast.ListComp: expressions.leave_scope,
    ast.SetComp: expressions.leave_scope,
    ast.DictComp: expressions.leave_scope,
    ast.GeneratorExp: expressions.leave_scope,
}
_ORDER: dict[type, _Order] = {
    ast.FunctionDef: _decorated_children,
    ast.AsyncFunctionDef: _decorated_children,
    ast.ClassDef: _decorated_children,
    ast.Call: _call_children,
    ast.Dict: _dict_children,
    ast.IfExp: _ifexp_children,
    ast.ListComp: _comprehension_children,
    ast.SetComp: _comprehension_children,
    ast.GeneratorExp: _comprehension_children,
    ast.DictComp: _comprehension_children,
}
