"""Assignments taken apart: how a binding's target (a name, an attribute, a tuple or list of
targets, a subscript, a dict's entries) and its value become the semantic model's bindings, element
stores and alias edges. The traversal's handlers (:mod:`.statements`, :mod:`.expressions`) call
:func:`bind` for every assignment, loop target and comprehension target."""

from __future__ import annotations

import ast

from .model import SemanticModel
from .records import Binding, Key
from .syntax import entry_name, positional, unstarred


def bind(model: SemanticModel, target: ast.expr, binding: Binding) -> None:
    value = binding.expr
    if (
        binding.how == "elem"
        and isinstance(value, (ast.Tuple, ast.List, ast.Set))
        and value.elts
        and not any(isinstance(el, ast.Starred) for el in value.elts)
    ):
        # `for name, data in (("ids", ids), ("id_ptrs", ptrs)):` takes each item in turn; they are
        # alternatives, never aliases of one another (`for t in (self.ptrs, self.lens): t.zero_()`)
        if not isinstance(target, (ast.Tuple, ast.List)):
            for item in value.elts:
                bind(model, target, Binding("each", item, binding.node))
            return
        if all(isinstance(item, (ast.Tuple, ast.List)) and len(item.elts) == len(target.elts) for item in value.elts):
            for item in value.elts:
                for t, v in zip(target.elts, item.elts):  # type: ignore[attr-defined]
                    bind(model, unstarred(t), Binding("each", v, binding.node))
            return
    if isinstance(target, (ast.Tuple, ast.List)):
        elements = [unstarred(el) for el in target.elts]
        if binding.how == "expr" and isinstance(value, (ast.Tuple, ast.List)):
            if len(value.elts) == len(elements) and not any(isinstance(el, ast.Starred) for el in value.elts):
                for t, v in zip(elements, value.elts):
                    bind(model, t, Binding("expr", v, binding.node))
            return
        if (
            binding.how == "elem"
            and isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "items"
            and not value.args
            and len(elements) == 2
        ):
            bind(model, elements[1], Binding("elem", value, binding.node))  # `for k, v in d.items()`: v
        elif binding.how == "elem" and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            args = positional(value)
            if value.func.id == "enumerate" and len(elements) == 2 and args:
                bind(model, elements[0], Binding("index", value, binding.node))
                bind(model, elements[1], Binding("elem", args[0], binding.node))
            elif value.func.id == "zip" and len(args) == len(elements):
                for t, a in zip(elements, args):
                    bind(model, t, Binding("elem", a, binding.node))
        elif binding.how == "expr" and isinstance(value, ast.Call):
            for i, t in enumerate(elements):  # a, b = f(): item i of what f returns
                bind(model, t, Binding("telem", value, binding.node, i))
        return
    if isinstance(target, ast.Subscript) and entry_name(target) is None:
        model.add(model.stores, model.alias_key(target.value), Binding("expr", binding.expr, binding.node))
        return
    key = model.key_of(target)
    if key is None:
        return
    model.add(model.bindings, key, binding)
    if binding.how == "expr":
        model.link(key, model.alias_key(binding.expr))
        entry = entry_name(target)
        model.mark_target(binding.expr, target, entry[1:-1] if entry else None)
        _bind_entries(model, key, binding)


def _bind_entries(model: SemanticModel, key: Key, binding: Binding) -> None:
    """``d = {"ptrs": [...], "lens": [...]}`` or ``dict(ptrs=...)``: each entry is bound apart."""
    value = binding.expr
    pairs: list[tuple[str, ast.expr, ast.expr | ast.keyword]] = []
    if isinstance(value, ast.Dict):
        pairs = [
            (k.value, v, k)
            for k, v in zip(value.keys, value.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        pairs = [(kw.arg, kw.value, kw) for kw in value.keywords if kw.arg]
    for name, item, where in pairs:
        entry = model.attribute_key(key, f"[{name}]")
        model.add(model.bindings, entry, Binding("expr", item, where))
        model.link(entry, model.alias_key(item))
        model.mark_target(item, where, name)
