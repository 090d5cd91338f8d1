"""Per-statement collection: what each statement kind records into the semantic model (the
traversal and dispatch are :mod:`.collector`')."""

from __future__ import annotations

import ast

from .assignments import bind
from .records import Binding, FunctionNode, Key, MemberKey, NameKey, ScalarWrite
from .scopes import resolve_relative
from .syntax import RAISES_METHODS, attr_name, dotted, entry_name, keyword
from .traversal import Traversal


def visit_Import(walk: Traversal, node: ast.Import) -> None:
    for alias in node.names:
        walk.model.imports_numpy = walk.model.imports_numpy or alias.name.partition(".")[0] == "numpy"
        if alias.asname is not None:
            walk.model.scope.bind_import(alias.asname, alias.name)
        else:
            first = alias.name.partition(".")[0]
            walk.model.scope.bind_import(first, first)


def visit_ImportFrom(walk: Traversal, node: ast.ImportFrom) -> None:
    module = node.module if node.module is not None and not node.level else None
    if node.level and walk.model.context.module:  # `from . import mod`, `from ..pkg.mod import f`
        module = resolve_relative(walk.model.context.module, walk.model.context.is_package, node.level, node.module)
    walk.model.imports_numpy = walk.model.imports_numpy or (module or "").partition(".")[0] == "numpy"
    for alias in node.names:
        if alias.name == "*":
            return
        local = alias.asname or alias.name
        if module:
            walk.model.scope.bind_import(local, f"{module}.{alias.name}")
        else:
            walk.model.scope.bind(local)


def visit_Global(walk: Traversal, node: ast.Global) -> None:
    walk.model.scope.globals.update(node.names)


def visit_Nonlocal(walk: Traversal, node: ast.Nonlocal) -> None:
    walk.model.scope.nonlocals.update(node.names)


def visit_ClassDef(walk: Traversal, node: ast.ClassDef) -> None:
    walk.model.scope.bind(node.name)
    walk.model.class_names[NameKey(id(walk.model.scope), node.name)] = id(node)
    walk.model.class_nodes[id(node)] = node
    outer = walk.stack[-1] if walk.stack else None
    if outer is None:
        walk.model.class_qualnames[id(node)] = node.name
    elif isinstance(outer, ast.ClassDef) and id(outer) in walk.model.class_qualnames:
        walk.model.class_qualnames[id(node)] = f"{walk.model.class_qualnames[id(outer)]}.{node.name}"
    walk.stack.append(node)
    walk.model.push("class")
    walk.model.class_methods[id(node)] = {
        stmt.name: stmt for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def leave_ClassDef(walk: Traversal, node: ast.ClassDef) -> None:
    walk.stack.pop()
    walk.model.pop()


def visit_FunctionDef(walk: Traversal, node: FunctionNode) -> None:
    enclosing = walk.stack[-1] if walk.stack else None
    walk.model.scope.bind(node.name)
    if not isinstance(enclosing, ast.ClassDef):
        walk.model.functions[NameKey(id(walk.model.scope), node.name)] = node
    walk.stack.append(node)
    scope = walk.model.push("function")
    walk.model.function_scopes[id(node)] = id(scope)
    args = node.args
    params = [*args.posonlyargs, *args.args]
    every = [*params, *args.kwonlyargs]
    every.extend(a for a in (args.vararg, args.kwarg) if a is not None)
    for param in every:
        scope.bind(param.arg)
        if param.annotation is not None:
            walk.model.add(walk.model.annotations, NameKey(id(scope), param.arg), param.annotation)
    if isinstance(enclosing, ast.ClassDef):
        decorators = {attr_name(d) for d in node.decorator_list}
        kind = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "instance"
        walk.model.method_class[id(node)] = id(enclosing)
        walk.model.method_kinds[id(node)] = kind
        if params and kind != "static":
            first: Key = NameKey(id(scope), params[0].arg)
            (walk.model.cls_params if kind == "class" else walk.model.self_params)[first] = id(enclosing)


def leave_FunctionDef(walk: Traversal, node: FunctionNode) -> None:
    walk.stack.pop()
    walk.model.pop()


def visit_Return(walk: Traversal, node: ast.Return) -> None:
    if node.value is None:
        return
    for item in reversed(walk.stack):
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            walk.model.returns.setdefault(id(item), []).append(node.value)
            return


def visit_Assign(walk: Traversal, node: ast.Assign) -> None:
    for target in node.targets:
        walk.model.bind_target(target)
        bind(walk.model, target, Binding("expr", node.value, node))
        if isinstance(target, ast.Subscript) and entry_name(target) is None:  # `d["ptrs"] = ...` binds an entry
            walk.model.scalar_writes.append(ScalarWrite(node, target.value, node.value, "setitem", walk.raises > 0))
        elif (
            isinstance(target, ast.Attribute)
            and walk.model.scope is walk.model.module_scope
            and isinstance(node.value, ast.Name)
        ):
            walk.model.patches.append((target, node.value))  # a monkey-patched constructor (`torch.empty = _empty`)
        elif isinstance(target, ast.Name) and walk.model.scope is walk.model.module_scope:
            # module constants (`_TWO_64 = 1 << 64`); a name bound twice is not a constant
            known = target.id in walk.model.module_constants
            walk.model.module_constants[target.id] = node.value if not known else ast.Constant(None)


def visit_AnnAssign(walk: Traversal, node: ast.AnnAssign) -> None:
    target = node.target
    key: Key | None
    if isinstance(target, ast.Name) and walk.stack and isinstance(walk.stack[-1], ast.ClassDef):
        walk.model.scope.bind(target.id)
        key = MemberKey(id(walk.stack[-1]), target.id)  # dataclass-style field
        if node.value is not None:
            walk.model.add(walk.model.bindings, key, Binding("expr", node.value, node))
            inner = field_default(node.value)
            walk.model.mark_target(inner, target)
            walk.model.link(key, walk.model.alias_key(inner))
    else:
        walk.model.bind_target(target)
        key = walk.model.key_of(target)
        if node.value is not None:
            bind(walk.model, target, Binding("expr", node.value, node))
    walk.model.add(walk.model.annotations, key, node.annotation)


def field_default(value: ast.expr) -> ast.expr:
    """``field(default_factory=lambda: make())`` -> ``make()``."""
    if isinstance(value, ast.Call) and attr_name(value.func) == "field":
        factory = keyword(value, "default_factory")
        if factory is not None and isinstance(factory.value, ast.Lambda):
            return factory.value.body
        default = keyword(value, "default")
        if default is not None:
            return default.value
    return value


def visit_AugAssign(walk: Traversal, node: ast.AugAssign) -> None:
    walk.model.bind_target(node.target)
    if isinstance(node.op, ast.Add):
        walk.model.add(walk.model.adds, walk.model.key_of(node.target), Binding("expr", node.value, node))


def visit_For(walk: Traversal, node: ast.For | ast.AsyncFor) -> None:
    walk.model.bind_target(node.target)
    bind(walk.model, node.target, Binding("elem", node.iter, node))


def visit_withitem(walk: Traversal, node: ast.withitem) -> None:
    if node.optional_vars is not None:
        walk.model.bind_target(node.optional_vars)


def visit_With(walk: Traversal, node: ast.With | ast.AsyncWith) -> None:
    """``with pytest.raises(...)`` / ``c.assertRaises(...)``: what is built inside is meant to fail."""
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and (
            attr_name(call.func) in RAISES_METHODS or dotted(call.func) in ("pytest.raises", "raises")
        ):
            walk.raises += 1
            walk.raising_withs.add(id(node))
            return


def leave_With(walk: Traversal, node: ast.With | ast.AsyncWith) -> None:
    if id(node) in walk.raising_withs:
        walk.raises -= 1


def visit_ExceptHandler(walk: Traversal, node: ast.ExceptHandler) -> None:
    if node.name is not None:
        walk.model.scope.bind(node.name)


def visit_Delete(walk: Traversal, node: ast.Delete) -> None:
    for target in node.targets:
        walk.model.bind_target(target)
