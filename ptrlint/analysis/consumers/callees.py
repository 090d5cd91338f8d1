"""What a call in the consumer search reaches when no function of this module is called by name: a
method a base class defines (in this module, or another module's by qualified name), or a method of
a module a loader returned (code ptrlint cannot see). Plain functions of the module's semantic model."""

from __future__ import annotations

import ast

from ..semantic.model import SemanticModel
from ..semantic.records import FunctionNode
from ..semantic.syntax import attr_name


def inherited(model: SemanticModel, func: ast.AST) -> FunctionNode | None:
    """``self.m(...)`` where ``m`` is defined by a base class of this module (followed up the bases)."""
    if not isinstance(func, ast.Attribute):
        return None
    for class_id in bases_of(model, model.types.receiver_class(func.value)):
        if isinstance(class_id, int):
            found = model.class_methods.get(class_id, {}).get(func.attr)
            if found is not None:
                return found
    return None


def inherited_external(model: SemanticModel, func: ast.AST) -> str | None:
    """``self.m(...)`` where ``m`` comes from a base class of another module: ``pkg.mod.Base.m``."""
    if not isinstance(func, ast.Attribute):
        return None
    for class_id in bases_of(model, model.types.receiver_class(func.value)):
        if isinstance(class_id, str):
            return f"{class_id}.{func.attr}"
    return None


def bases_of(model: SemanticModel, class_id: int | str | None) -> list[int | str]:
    """The base classes of a class of this module, nearest first (module classes by id, imported
    ones by qualified name), to a bounded depth."""
    out: list[int | str] = []
    frontier = [class_id] if isinstance(class_id, int) else []
    while frontier and len(out) < 16:
        node = model.class_nodes.get(frontier.pop(0))
        for base in node.bases if node is not None else ():
            found = model.types.class_of_name(base)
            if found is None:
                qnames = model.qualified_names(base)
                found = next(iter(sorted(qnames)), None) if qnames else None
            if found is not None and found not in out:
                out.append(found)
                if isinstance(found, int):
                    frontier.append(found)
    return out


def loaded_module(model: SemanticModel, func: ast.AST) -> str | None:
    """``mod.run(table)`` where ``mod`` came from a loader (``load_jit(...)``,
    ``cpp_extension.load(...)``, a function of the project that builds or finds a module): what
    the loader returns is not a class ptrlint knows, so its methods are code it cannot see."""
    if not isinstance(func, ast.Attribute):
        return None
    base = func.value
    calls: list[ast.expr] = [base] if isinstance(base, ast.Call) else []
    key = model.key_of(base) if isinstance(base, (ast.Name, ast.Attribute)) else None
    if key is not None:
        calls += [b.expr for b in model.bindings.get(key, []) if b.how == "expr"]
    for call in calls:
        if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute)):
            qnames = model.qualified_names(call.func)
            if model.types.class_of_name(call.func) is not None:
                continue  # a class: an instance of it, not a loaded module
            if any(not q.startswith("builtins.") for q in qnames) or (
                not qnames and model.types.function_called(call.func) is not None
            ):
                return attr_name(call.func)
    return None
