"""How a module already writes addresses into its tables, so that PTR005's store fix follows it (issue 62):
its own wrap helper for an int64 table, its numpy view of a uint64 table."""

from __future__ import annotations

import ast
import weakref

from ..analysis.semantic.model import SemanticModel
from ..analysis.semantic.records import Binding, Creation, Key, NameKey, ScalarWrite
from ..names import DtypeClass
from ._creation import table_dtypes
from .base import RuleContext


def stored_creations(ctx: RuleContext, write: ScalarWrite) -> list[Creation]:
    """The creations stored in the written tensor's name (every binding of it), in the module."""
    facts = ctx.facts
    key = facts.model.alias_key(write.tensor)
    root = facts.root(key) if key is not None else None
    if root is None:
        return []
    return [
        facts.model.creation_by_id[k.call] for k in facts.stored.get(root, []) if k.call in facts.model.creation_by_id
    ]


def _all_of(ctx: RuleContext, write: ScalarWrite, cls: DtypeClass) -> bool:
    """Every creation the written table refers to (through aliases, a buffer factory's ``.cpu``) is of ``cls``."""
    widths = table_dtypes(ctx, write.tensor)
    return bool(widths) and all(w is not None and w.cls is cls for w in widths)


def wrap_helper(ctx: RuleContext, write: ScalarWrite) -> str | None:
    """The wrap helper of the module or the project (``to_i64(p)``: ``p - (1 << 64) if p >= 1 << 63 else p``),
    where the written tensor is int64 by every creation and the helper is, at the store, the module-level
    function of this module or a name this module imports from another project module that defines one: the
    fix then stores the wrapped value, the form the project already uses for its int64 tables, instead of a
    new spelling. The module's own helper first, then its imports in name order."""
    if not _all_of(ctx, write, DtypeClass.SIGNED64):
        return None
    model = ctx.facts.model
    scope = model.scope_of(write.tensor)
    for helper in ctx.facts.flow.results.wrap_helpers():
        if scope.resolve(helper) is model.module_scope:
            return helper
    view = model.view
    if view is None:
        return None
    for local, qualified in sorted(model.module_scope.imports.items()):
        if scope.resolve(local) is model.module_scope and view.wraps(qualified):
            return local
    return None


def numpy_view(ctx: RuleContext, write: ScalarWrite) -> str | None:
    """The module's numpy view of a uint64 table, spelled where the store is: ``buf.np`` for ``buf.cpu`` of a
    buffer factory, or a name or member bound once to ``<the tensor>.numpy()`` (``self.ptrs_np``) and visible
    at the store. numpy stores a raw address into uint64 on every release, and the view shares the tensor's
    memory: the store lands where it did. None where the table is not uint64 by every creation."""
    tensor = write.tensor
    if not isinstance(tensor, (ast.Name, ast.Attribute)) or not _all_of(ctx, write, DtypeClass.UNSIGNED64):
        return None  # `buf[2:][i]` is not `view[i]`: only a whole table is replaced by its view
    model = ctx.facts.model
    if isinstance(tensor, ast.Attribute) and tensor.attr == "cpu" and ctx.facts.tensors.is_factory_value(tensor.value):
        # a factory's `.np` is the module's convention only where the module reads it for this buffer
        owner = model.alias_key(tensor.value)
        search = ctx.consumers
        search.build_index()
        uses_np = owner is not None and any(
            model.alias_key(load.value) == owner for load in search.attribute_loads.get("np", [])
        )
        return f"{ctx.code(tensor.value)}.np" if uses_np else None
    key = model.alias_key(tensor)
    if key is None or len(model.bindings.get(key, [])) != 1:
        return None
    for alias, binding in _numpy_views(ctx).get(key, []):
        statement = binding.node
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
        if target is None or not _bound_before(ctx, target, write):
            continue
        if isinstance(target, ast.Name) and isinstance(alias, NameKey):
            if alias.scope == id(model.scope_of(tensor).resolve(target.id)):
                return target.id
        elif isinstance(target, ast.Attribute) and isinstance(tensor, ast.Attribute):
            base = model.key_of(tensor.value)
            if base is not None and model.attribute_key(base, target.attr) == alias:
                return f"{ctx.code(tensor.value)}.{target.attr}"
    return None


_VIEWS: weakref.WeakKeyDictionary[SemanticModel, dict[Key, list[tuple[Key, Binding]]]] = weakref.WeakKeyDictionary()


def _numpy_views(ctx: RuleContext) -> dict[Key, list[tuple[Key, Binding]]]:
    """{a tensor's key: the names and members bound once to its ``.numpy()``}, built once per module."""
    model = ctx.facts.model
    views = _VIEWS.get(model)
    if views is None:
        views = {}
        for alias, bindings in model.bindings.items():
            expr = bindings[0].expr if len(bindings) == 1 and bindings[0].how == "expr" else None
            if (
                isinstance(expr, ast.Call)
                and not expr.args
                and not expr.keywords
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr == "numpy"
            ):
                of = model.alias_key(expr.func.value)
                if of is not None:
                    views.setdefault(of, []).append((alias, bindings[0]))
        _VIEWS[model] = views
    return views


_BODIES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)


def _bound_before(ctx: RuleContext, target: ast.expr, write: ScalarWrite) -> bool:
    """The view exists when the store runs: bound unconditionally (a statement of its function's or the module's
    own body, not inside a branch or loop), in another function (``__init__``) or earlier in this one."""
    model = ctx.facts.model
    statement = ctx.consumers.parent(target)
    if not isinstance(ctx.consumers.parent(statement) if statement is not None else None, _BODIES):
        return False
    if model.scope_of(target.value if isinstance(target, ast.Attribute) else target) is not model.scope_of(
        write.tensor
    ):
        return True
    return target.lineno < getattr(write.node, "lineno", 0)
