"""Per-statement collection: what each statement kind records into the semantic model (the
traversal and dispatch are :mod:`.collector`')."""

from __future__ import annotations

import ast

from .assignments import bind
from .records import Binding, FunctionNode, Key, MemberKey, NameKey, ScalarWrite
from .scopes import resolve_relative
from .syntax import RAISES_METHODS, attr_name, dotted, entry_name, keyword
from .traversal import Traversal


def visit_Import(c: Traversal, node: ast.Import) -> None:
    for alias in node.names:
        c.m.imports_numpy = c.m.imports_numpy or alias.name.partition(".")[0] == "numpy"
        if alias.asname is not None:
            c.m.scope.bind_import(alias.asname, alias.name)
        else:
            first = alias.name.partition(".")[0]
            c.m.scope.bind_import(first, first)


def visit_ImportFrom(c: Traversal, node: ast.ImportFrom) -> None:
    module = node.module if node.module is not None and not node.level else None
    if node.level and c.m.context.module:  # `from . import mod`, `from ..pkg.mod import f`
        module = resolve_relative(c.m.context.module, c.m.context.is_package, node.level, node.module)
    c.m.imports_numpy = c.m.imports_numpy or (module or "").partition(".")[0] == "numpy"
    for alias in node.names:
        if alias.name == "*":
            return
        local = alias.asname or alias.name
        if module:
            c.m.scope.bind_import(local, f"{module}.{alias.name}")
        else:
            c.m.scope.bind(local)


def visit_Global(c: Traversal, node: ast.Global) -> None:
    c.m.scope.globals.update(node.names)


def visit_Nonlocal(c: Traversal, node: ast.Nonlocal) -> None:
    c.m.scope.nonlocals.update(node.names)


def visit_ClassDef(c: Traversal, node: ast.ClassDef) -> None:
    c.m.scope.bind(node.name)
    c.m.class_names[NameKey(id(c.m.scope), node.name)] = id(node)
    c.m.class_nodes[id(node)] = node
    outer = c.stack[-1] if c.stack else None
    if outer is None:
        c.m.class_qualnames[id(node)] = node.name
    elif isinstance(outer, ast.ClassDef) and id(outer) in c.m.class_qualnames:
        c.m.class_qualnames[id(node)] = f"{c.m.class_qualnames[id(outer)]}.{node.name}"
    c.stack.append(node)
    c.m.push("class")
    c.m.class_methods[id(node)] = {
        stmt.name: stmt for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def leave_ClassDef(c: Traversal, node: ast.ClassDef) -> None:
    c.stack.pop()
    c.m.pop()


def visit_FunctionDef(c: Traversal, node: FunctionNode) -> None:
    enclosing = c.stack[-1] if c.stack else None
    c.m.scope.bind(node.name)
    if not isinstance(enclosing, ast.ClassDef):
        c.m.functions[NameKey(id(c.m.scope), node.name)] = node
    c.stack.append(node)
    scope = c.m.push("function")
    c.m.function_scopes[id(node)] = id(scope)
    args = node.args
    params = [*args.posonlyargs, *args.args]
    every = [*params, *args.kwonlyargs]
    every.extend(a for a in (args.vararg, args.kwarg) if a is not None)
    for param in every:
        scope.bind(param.arg)
        if param.annotation is not None:
            c.m.add(c.m.annotations, NameKey(id(scope), param.arg), param.annotation)
    if isinstance(enclosing, ast.ClassDef):
        decorators = {attr_name(d) for d in node.decorator_list}
        kind = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "instance"
        c.m.method_class[id(node)] = id(enclosing)
        c.m.method_kinds[id(node)] = kind
        if params and kind != "static":
            first: Key = NameKey(id(scope), params[0].arg)
            (c.m.cls_params if kind == "class" else c.m.self_params)[first] = id(enclosing)


def leave_FunctionDef(c: Traversal, node: FunctionNode) -> None:
    c.stack.pop()
    c.m.pop()


def visit_Return(c: Traversal, node: ast.Return) -> None:
    if node.value is None:
        return
    for item in reversed(c.stack):
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            c.m.returns.setdefault(id(item), []).append(node.value)
            return


def visit_Assign(c: Traversal, node: ast.Assign) -> None:
    for target in node.targets:
        c.m.bind_target(target)
        bind(c.m, target, Binding("expr", node.value, node))
        if isinstance(target, ast.Subscript) and entry_name(target) is None:  # `d["ptrs"] = ...` binds an entry
            c.m.scalar_writes.append(ScalarWrite(node, target.value, node.value, "setitem", c.raises > 0))
        elif isinstance(target, ast.Attribute) and c.m.scope is c.m.module_scope and isinstance(node.value, ast.Name):
            c.m.patches.append((target, node.value))  # a monkey-patched constructor (`torch.empty = _empty`)
        elif isinstance(target, ast.Name) and c.m.scope is c.m.module_scope:
            # module constants (`_TWO_64 = 1 << 64`); a name bound twice is not a constant
            known = target.id in c.m.module_constants
            c.m.module_constants[target.id] = node.value if not known else ast.Constant(None)


def visit_AnnAssign(c: Traversal, node: ast.AnnAssign) -> None:
    target = node.target
    key: Key | None
    if isinstance(target, ast.Name) and c.stack and isinstance(c.stack[-1], ast.ClassDef):
        c.m.scope.bind(target.id)
        key = MemberKey(id(c.stack[-1]), target.id)  # dataclass-style field
        if node.value is not None:
            c.m.add(c.m.bindings, key, Binding("expr", node.value, node))
            inner = field_default(node.value)
            c.m.mark_target(inner, target)
            c.m.link(key, c.m.alias_key(inner))
    else:
        c.m.bind_target(target)
        key = c.m.key_of(target)
        if node.value is not None:
            bind(c.m, target, Binding("expr", node.value, node))
    c.m.add(c.m.annotations, key, node.annotation)


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


def visit_AugAssign(c: Traversal, node: ast.AugAssign) -> None:
    c.m.bind_target(node.target)
    if isinstance(node.op, ast.Add):
        c.m.add(c.m.adds, c.m.key_of(node.target), Binding("expr", node.value, node))


def visit_For(c: Traversal, node: ast.For | ast.AsyncFor) -> None:
    c.m.bind_target(node.target)
    bind(c.m, node.target, Binding("elem", node.iter, node))


def visit_withitem(c: Traversal, node: ast.withitem) -> None:
    if node.optional_vars is not None:
        c.m.bind_target(node.optional_vars)


def visit_With(c: Traversal, node: ast.With | ast.AsyncWith) -> None:
    """``with pytest.raises(...)`` / ``c.assertRaises(...)``: what is built inside is meant to fail."""
    for item in node.items:
        call = item.context_expr
        if isinstance(call, ast.Call) and (
            attr_name(call.func) in RAISES_METHODS or dotted(call.func) in ("pytest.raises", "raises")
        ):
            c.raises += 1
            c.raising_withs.add(id(node))
            return


def leave_With(c: Traversal, node: ast.With | ast.AsyncWith) -> None:
    if id(node) in c.raising_withs:
        c.raises -= 1


def visit_ExceptHandler(c: Traversal, node: ast.ExceptHandler) -> None:
    if node.name is not None:
        c.m.scope.bind(node.name)


def visit_Delete(c: Traversal, node: ast.Delete) -> None:
    for target in node.targets:
        c.m.bind_target(target)
