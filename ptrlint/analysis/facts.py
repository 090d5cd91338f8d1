"""The single traversal over a module's ast: facts, recorded once, decided later.

:class:`FactCollector` walks the tree once and records bindings of names and ``self``
attributes, list appends, element stores, ``copy_``/``fill_`` calls, creation calls, casts,
ctypes calls and the uses that uint64 buffers do not support. :class:`~.values.ModuleFacts`
answers the rules' questions from these facts; no rule walks the tree again.

Keys name storage locations: a local/global name in its scope, a ``self`` attribute of a class
(all methods share it), an attribute of another object, or a creation call itself. Keys that
alias one buffer (``a = b``, ``v = buf.numpy()``, ``self.x = x``, ``cls(x=x)``, slices,
``.to(device)``) are merged with union-find, so evidence anywhere reaches the creation site.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Sequence

from ..names import CREATION_CALLS, FILL_VALUE_INDEX, PASSTHROUGH_METHODS, UNSAFE_FUNCTIONS, UNSAFE_METHODS, VIEW_ATTRIBUTES
from .names import AnalysisOptions
from .scopes import LiteScope

Key = tuple  # ("n", scope_id, name) | ("a", class_id, attr) | ("o", base_key, attr) | ("c", call_id) | ("r", ...) provisional
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Creation:
    """A tensor/array creation call (or configured buffer factory)."""

    call: ast.Call
    qname: str  # "torch.zeros", "numpy.array", or "factory:make_buffer"
    library: str | None  # "torch", "numpy", or None for factories (decided by the dtype)
    dtype: ast.expr | None
    has_dtype_slot: bool  # False when **kwargs might carry a dtype
    data: ast.expr | None
    fill: ast.expr | None
    scope: LiteScope | None
    target_name: str | None = None
    target_node: ast.AST | None = None

    @property
    def key(self) -> Key:
        return ("c", id(self.call))


@dataclass
class Cast:
    """A value conversion: ``x.long()``, ``x.to(torch.int64)``, ``x.astype(np.int64)``, ``np.int64(x)``."""

    call: ast.Call
    operand: ast.expr
    dtype: ast.expr | None  # None for .long()/.int()
    method: str | None  # "long", "to", "type", "astype" or None for the function form
    dtype_qname: str
    scope: LiteScope | None


@dataclass
class CtypesCall:
    call: ast.Call
    ctype: str  # "c_long"
    arg: ast.expr
    scope: LiteScope | None


@dataclass
class ScalarWrite:
    """``T[i] = v`` or ``T.fill_(v)``; PTR005 candidates."""

    node: ast.AST  # the Assign statement or the fill_ Call
    tensor: ast.expr  # T
    value: ast.expr
    how: str  # "setitem" | "fill_"


@dataclass
class Binding:
    how: str  # "expr" | "elem" (an element of expr) | "telem" (item `index` of the tuple a call returns) | "elem-of" | "seq"
    expr: ast.expr
    node: ast.AST
    index: int = -1


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Key, Key] = {}

    def find(self, key: Key) -> Key:
        parent = self.parent.setdefault(key, key)
        if parent == key:
            return key
        root = self.find(parent)
        self.parent[key] = root
        return root

    def union(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def members(self) -> dict[Key, list[Key]]:
        groups: dict[Key, list[Key]] = {}
        for key in list(self.parent):
            groups.setdefault(self.find(key), []).append(key)
        return groups


# ----- small helpers over ast shapes ---------------------------------------------------------------
def attr_name(node: ast.AST) -> str | None:
    """The last name of a Name or Attribute (``torch.zeros`` -> "zeros")."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def string_value(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_slice_subscript(node: ast.Subscript) -> bool:
    index = node.slice
    if isinstance(index, ast.Slice):
        return True
    return isinstance(index, ast.Tuple) and bool(index.elts) and all(isinstance(e, ast.Slice) for e in index.elts)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def positional(call: ast.Call) -> list[ast.expr]:
    return [a for a in call.args if not isinstance(a, ast.Starred)]


def unstarred(node: ast.expr) -> ast.expr:
    return node.value if isinstance(node, ast.Starred) else node


def dotted(node: ast.AST) -> str:
    """``a.b.c`` as text for Name/Attribute chains; "" otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def raw_view_of(call: ast.Call) -> ast.expr | None:
    """``ctypes.cast(buf.data_ptr(), POINTER(c_int64))`` is a raw view of ``buf``: writes through it land in ``buf``."""
    if attr_name(call.func) != "cast" or not call.args:
        return None
    first = call.args[0]
    if (
        isinstance(first, ast.Call)
        and isinstance(first.func, ast.Attribute)
        and first.func.attr == "data_ptr"
        and not first.args
        and not first.keywords
    ):
        return first.func.value
    return None


_CREATION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in CREATION_CALLS)
_UNSAFE_FUNCTION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in UNSAFE_FUNCTIONS)
_NUMPY_SCALAR_CASTS = frozenset({"numpy.int64", "numpy.intp", "numpy.longlong", "numpy.int_", "numpy.int32"})
SIGNED_DTYPE_QNAMES = frozenset({
    "torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16", "torch.short",
    "numpy.int64", "numpy.intp", "numpy.longlong", "numpy.int_", "numpy.int32", "builtins.int",
})
_SIGNED_DTYPE_STRINGS = {"int64": "numpy.int64", "i8": "numpy.int64", "<i8": "numpy.int64", "int32": "numpy.int32",
                         "i4": "numpy.int32", "intp": "numpy.intp", "long": "numpy.int64"}
_CAST_METHODS = ("long", "int", "short", "to", "type", "astype")
_ARITHMETIC = (ast.Add, ast.Sub, ast.FloorDiv, ast.Mod, ast.Div, ast.RShift, ast.LShift, ast.Pow)
_AUG_ARITHMETIC = (ast.Add, ast.Sub, ast.FloorDiv, ast.Mod, ast.Div, ast.RShift, ast.LShift)
_ORDERING = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)


class FactCollector:
    """The single traversal. Records facts; decides nothing.

    Names are recorded with *provisional* keys (the scope where the name is used) because a
    name's binding scope is only known once the whole function has been seen; :meth:`finalize`
    maps every provisional key to its canonical key, and classifies the calls whose meaning
    depends on imports (creation calls, casts, ctypes wrappers).
    """

    def __init__(self, options: AnalysisOptions) -> None:
        self.options = options
        self.uf = UnionFind()
        self.bindings: dict[Key, list[Binding]] = {}
        self.adds: dict[Key, list[Binding]] = {}  # append/extend/insert/+=
        self.stores: dict[Key, list[Binding]] = {}  # setitem, copy_, fill_ (flow evidence)
        self.unsafe: dict[Key, list[tuple[ast.AST, str]]] = {}
        self.annotations: dict[Key, list[ast.expr]] = {}
        self.creations: list[Creation] = []
        self.casts: list[Cast] = []
        self.ctypes_calls: list[CtypesCall] = []
        self.scalar_writes: list[ScalarWrite] = []
        self.returns: dict[int, list[ast.expr]] = {}
        self.self_params: dict[Key, int] = {}  # canonical key of a method's first parameter -> class id
        self.cls_params: dict[Key, int] = {}  # canonical key of a classmethod's first parameter -> class id
        self.class_methods: dict[int, dict[str, FunctionNode]] = {}
        self.class_names: dict[Key, int] = {}  # canonical key of a class name -> class id
        self.functions: dict[Key, FunctionNode] = {}
        self.creation_by_id: dict[int, Creation] = {}
        self.targets: dict[int, tuple[str, ast.AST]] = {}  # creation call id -> (target name, node)
        self.module_scope = LiteScope("module", None)
        self.node_scope: dict[int, LiteScope] = {}  # id(Name node) -> scope it appears in
        self.finalized = False
        self._scope = self.module_scope
        self._scopes: dict[int, LiteScope] = {id(self.module_scope): self.module_scope}
        self._stack: list[ast.AST] = []
        self._edges: list[tuple[Key, Key]] = []  # aliasing recorded during the traversal
        self._pending_calls: list[tuple[ast.Call, LiteScope]] = []

    # ----- the traversal ------------------------------------------------------------------------
    def run(self, module: ast.Module) -> None:
        for stmt in module.body:
            self._walk(stmt)
        self.finalize()

    def _walk(self, node: ast.AST) -> None:
        cls = node.__class__
        pre = _PRE.get(cls)
        if pre is not None:
            pre(self, node)
        order = _ORDER.get(cls)
        walk = self._walk
        if order is not None:
            for child in order(node):
                walk(child)
        else:
            fields = _CHILD_FIELDS.get(cls)
            if fields is None:
                fields = _CHILD_FIELDS[cls] = _child_fields(cls)
            for name in fields:
                value = getattr(node, name)
                if value.__class__ is list:
                    for item in value:
                        if item.__class__ is ast.Name:
                            self.node_scope[id(item)] = self._scope  # the commonest leaf, inlined
                        elif isinstance(item, ast.AST):
                            walk(item)
                elif value.__class__ is ast.Name:
                    self.node_scope[id(value)] = self._scope
                elif isinstance(value, ast.AST):
                    walk(value)
        post = _POST.get(cls)
        if post is not None:
            post(self, node)

    # ----- scopes and names ---------------------------------------------------------------------
    def _push(self, kind: str) -> LiteScope:
        scope = LiteScope(kind, self._scope)
        self._scopes[id(scope)] = scope
        self._scope = scope
        return scope

    def _pop(self, node: ast.AST | None = None) -> None:
        assert self._scope.parent is not None
        self._scope = self._scope.parent

    def _bind_target(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._scope.bind(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value)

    def scope_of(self, node: ast.AST) -> LiteScope:
        return self.node_scope.get(id(node), self._scope if not self.finalized else self.module_scope)

    def qualified_names(self, node: ast.AST) -> set[str]:
        """Import/builtin qualified names of a Name or dotted Attribute (empty for locals)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return set()
        base = self.scope_of(node).qualified(node.id)
        if base is None:
            return set()
        return {".".join([base, *reversed(parts)])}

    def name_key(self, node: ast.Name) -> Key:
        scope = self.scope_of(node)
        if self.finalized:
            return ("n", id(scope.resolve(node.id)), node.id)
        return ("r", id(scope), node.id)

    def key_of(self, node: ast.AST) -> Key | None:
        if isinstance(node, ast.Name):
            return self.name_key(node)
        if isinstance(node, ast.Attribute):
            base = self.key_of(node.value)
            if base is None:
                return None
            class_id = self.self_params.get(base)
            if class_id is not None:
                return ("a", class_id, node.attr)
            return ("o", base, node.attr)
        if isinstance(node, ast.Call) and self.is_creation_call(node):
            return ("c", id(node))
        return None

    def canonical(self, key: Key) -> Key:
        kind = key[0]
        if kind == "r":
            scope = self._scopes[key[1]]
            return ("n", id(scope.resolve(key[2])), key[2])
        if kind == "o":
            base = self.canonical(key[1])
            class_id = self.self_params.get(base)
            if class_id is not None:
                return ("a", class_id, key[2])
            return ("o", base, key[2])
        return key

    def is_creation_call(self, node: ast.Call) -> bool:
        if self.finalized:
            return id(node) in self.creation_by_id
        last = attr_name(node.func)  # by name until imports are known; finalize() decides
        return last in _CREATION_LAST_NAMES or last in self.options.buffer_factories

    def alias_root(self, expr: ast.expr, through_index: bool = False) -> ast.expr:
        """Strip views, slices and value-preserving calls: ``self.buf[:n].numpy()`` -> ``self.buf``."""
        while True:
            if isinstance(expr, ast.Subscript) and (through_index or is_slice_subscript(expr)):
                expr = expr.value
            elif isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
                expr = expr.value
            elif (
                isinstance(expr, ast.Call)
                and isinstance(expr.func, ast.Attribute)
                and expr.func.attr in PASSTHROUGH_METHODS
                and expr.func.attr not in ("tolist", "item")
            ):
                expr = expr.func.value
            elif isinstance(expr, ast.Call) and raw_view_of(expr) is not None:
                expr = raw_view_of(expr)  # type: ignore[assignment]
            else:
                return expr

    def alias_key(self, expr: ast.expr, through_index: bool = False) -> Key | None:
        return self.key_of(self.alias_root(expr, through_index))

    # ----- recording helpers --------------------------------------------------------------------
    @staticmethod
    def _add(table: dict[Key, list], key: Key | None, item: object) -> None:
        if key is not None:
            table.setdefault(key, []).append(item)

    def bind(self, target: ast.expr, binding: Binding) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            elements = [unstarred(el) for el in target.elts]
            value = binding.expr
            if binding.how == "expr" and isinstance(value, (ast.Tuple, ast.List)):
                if len(value.elts) == len(elements) and not any(isinstance(el, ast.Starred) for el in value.elts):
                    for t, v in zip(elements, value.elts):
                        self.bind(t, Binding("expr", v, binding.node))
                return
            if binding.how == "elem" and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                args = positional(value)
                if value.func.id == "enumerate" and len(elements) == 2 and args:
                    self.bind(elements[1], Binding("elem", args[0], binding.node))
                elif value.func.id == "zip" and len(args) == len(elements):
                    for t, a in zip(elements, args):
                        self.bind(t, Binding("elem", a, binding.node))
            elif binding.how == "expr" and isinstance(value, ast.Call):
                for i, t in enumerate(elements):  # a, b = f(): item i of what f returns
                    self.bind(t, Binding("telem", value, binding.node, i))
            return
        if isinstance(target, ast.Subscript):
            self._add(self.stores, self.alias_key(target.value), Binding("expr", binding.expr, binding.node))
            return
        key = self.key_of(target)
        if key is None:
            return
        self._add(self.bindings, key, binding)
        if binding.how == "expr":
            source = self.alias_key(binding.expr)
            if source is not None:
                self._edges.append((key, source))
            self._mark_target(binding.expr, target)

    def _mark_target(self, value: ast.expr, target: ast.AST, name: str | None = None) -> None:
        """Remember the assigned name of the creation call inside ``value`` (name evidence)."""
        inner = self.alias_root(value)
        if not isinstance(inner, ast.Call):
            return
        if name is None:
            if isinstance(target, ast.Name):
                name = target.id
            elif isinstance(target, ast.Attribute):
                name = target.attr
            else:
                return
        self.targets.setdefault(id(inner), (name, target))

    def unsafe_use(self, expr: ast.expr, node: ast.AST, why: str) -> None:
        self._add(self.unsafe, self.alias_key(expr, through_index=True), (node, why))

    # ----- visitors: scopes ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        self.node_scope[id(node)] = self._scope

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self._scope.bind_import(alias.asname, alias.name)
            else:
                first = alias.name.partition(".")[0]
                self._scope.bind_import(first, first)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module if node.module is not None and not node.level else None
        for alias in node.names:
            if alias.name == "*":
                return
            local = alias.asname or alias.name
            if module:
                self._scope.bind_import(local, f"{module}.{alias.name}")
            else:
                self._scope.bind(local)

    def visit_Global(self, node: ast.Global) -> None:
        self._scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._scope.nonlocals.update(node.names)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scope.bind(node.name)
        self.class_names[("n", id(self._scope), node.name)] = id(node)
        self._stack.append(node)
        self._push("class")
        self.class_methods[id(node)] = {
            stmt.name: stmt for stmt in node.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        }

    def leave_ClassDef(self, node: ast.ClassDef) -> None:
        self._stack.pop()
        self._pop()

    def visit_FunctionDef(self, node: FunctionNode) -> None:
        enclosing = self._stack[-1] if self._stack else None
        self._scope.bind(node.name)
        if not isinstance(enclosing, ast.ClassDef):
            self.functions[("n", id(self._scope), node.name)] = node
        self._stack.append(node)
        scope = self._push("function")
        args = node.args
        params = [*args.posonlyargs, *args.args]
        every = [*params, *args.kwonlyargs]
        every.extend(a for a in (args.vararg, args.kwarg) if a is not None)
        for param in every:
            scope.bind(param.arg)
            if param.annotation is not None:
                self._add(self.annotations, ("n", id(scope), param.arg), param.annotation)
        if isinstance(enclosing, ast.ClassDef) and params:
            decorators = {attr_name(d) for d in node.decorator_list}
            first: Key = ("n", id(scope), params[0].arg)
            if "staticmethod" in decorators:
                return
            if "classmethod" in decorators:
                self.cls_params[first] = id(enclosing)
            else:
                self.self_params[first] = id(enclosing)

    def leave_FunctionDef(self, node: FunctionNode) -> None:
        self._stack.pop()
        self._pop()

    def visit_Lambda(self, node: ast.Lambda) -> None:
        scope = self._push("function")
        for param in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            scope.bind(param.arg)

    def visit_comprehension_scope(self, node: ast.AST) -> None:
        self._push("comprehension")

    # ----- visitors: facts ----------------------------------------------------------------------
    def visit_Return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        for item in reversed(self._stack):
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.returns.setdefault(id(item), []).append(node.value)
                return

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind_target(target)
            self.bind(target, Binding("expr", node.value, node))
            if isinstance(target, ast.Subscript):
                self.scalar_writes.append(ScalarWrite(node, target.value, node.value, "setitem"))

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        target = node.target
        key: Key | None
        if isinstance(target, ast.Name) and self._stack and isinstance(self._stack[-1], ast.ClassDef):
            self._scope.bind(target.id)
            key = ("a", id(self._stack[-1]), target.id)  # dataclass-style field
            if node.value is not None:
                self._add(self.bindings, key, Binding("expr", node.value, node))
                inner = self._field_default(node.value)
                self._mark_target(inner, target)
                source = self.alias_key(inner)
                if source is not None:
                    self._edges.append((key, source))
        else:
            self._bind_target(target)
            key = self.key_of(target)
            if node.value is not None:
                self.bind(target, Binding("expr", node.value, node))
        self._add(self.annotations, key, node.annotation)

    @staticmethod
    def _field_default(value: ast.expr) -> ast.expr:
        """``field(default_factory=lambda: make())`` -> ``make()``."""
        if isinstance(value, ast.Call) and attr_name(value.func) == "field":
            factory = keyword(value, "default_factory")
            if factory is not None and isinstance(factory.value, ast.Lambda):
                return factory.value.body
            default = keyword(value, "default")
            if default is not None:
                return default.value
        return value

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._bind_target(node.target)
        if isinstance(node.op, ast.Add):
            self._add(self.adds, self.key_of(node.target), Binding("expr", node.value, node))
        if isinstance(node.op, _AUG_ARITHMETIC):
            self.unsafe_use(node.target, node, "in-place arithmetic")

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        scope = self._scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent  # a walrus in a comprehension binds in the enclosing scope
        scope.bind(node.target.id)
        self.bind(node.target, Binding("expr", node.value, node))

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._bind_target(node.target)
        self.bind(node.target, Binding("elem", node.iter, node))

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._bind_target(node.target)
        self.bind(node.target, Binding("elem", node.iter, node.target))

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._bind_target(node.optional_vars)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            self._scope.bind(node.name)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._bind_target(target)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, _ARITHMETIC):
            self.unsafe_use(node.left, node, "arithmetic")
            self.unsafe_use(node.right, node, "arithmetic")

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, _ORDERING) for op in node.ops):
            self.unsafe_use(node.left, node, "ordering comparison")
            for comparator in node.comparators:
                self.unsafe_use(comparator, node, "ordering comparison")

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and node.arg != "dtype":
            self._mark_target(node.value, node, node.arg)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        last = attr_name(func)
        receiver = func.value if isinstance(func, ast.Attribute) else None
        args = positional(node)

        if receiver is not None and method in ("append", "extend", "insert", "add"):
            if args:
                how = "elem-of" if method == "extend" else "expr"
                self._add(self.adds, self.key_of(receiver), Binding(how, args[-1], node))
        if receiver is not None and method == "copy_" and args:
            self._add(self.stores, self.alias_key(receiver), Binding("seq", args[0], node))
        if receiver is not None and method == "fill_" and args:
            self._add(self.stores, self.alias_key(receiver), Binding("expr", args[0], node))
            self.scalar_writes.append(ScalarWrite(func, receiver, args[0], "fill_"))
        if receiver is not None and method in UNSAFE_METHODS:
            self.unsafe_use(receiver, node, f".{method}()")
        if receiver is not None and method in _CAST_METHODS:
            self._pending_calls.append((node, self._scope))
            return
        if last is None:
            return
        if last in _CREATION_LAST_NAMES or last in self.options.buffer_factories:
            self._pending_calls.append((node, self._scope))
        elif (
            last in _UNSAFE_FUNCTION_LAST_NAMES
            or last.startswith("c_")
            or last in ("int64", "intp", "longlong", "int_", "int32")
            or (isinstance(func, ast.Name) and any(kw.arg is not None for kw in node.keywords))  # cls(x=...)
        ):
            self._pending_calls.append((node, self._scope))

    # ----- after the traversal ------------------------------------------------------------------
    def finalize(self) -> None:
        """Resolve provisional keys, classify import-dependent calls, build the alias classes."""
        self.finalized = True
        canonical = self.canonical
        for table in (self.bindings, self.adds, self.stores, self.unsafe, self.annotations):
            rekeyed: dict[Key, list] = {}
            for key, items in table.items():
                rekeyed.setdefault(canonical(key), []).extend(items)
            table.clear()
            table.update(rekeyed)
        for a, b in self._edges:
            self.uf.union(canonical(a), canonical(b))
        for call, scope in self._pending_calls:
            self._classify_call(call, scope)
        for key in (*self.bindings, *self.adds, *self.stores, *self.unsafe):
            self.uf.find(key)

    def _classify_call(self, node: ast.Call, scope: LiteScope) -> None:
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        receiver = func.value if isinstance(func, ast.Attribute) else None
        args = positional(node)
        if receiver is not None and method in _CAST_METHODS:
            self._record_cast(node, method, receiver, args, scope)
            return
        qnames = self.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        for qname in qnames:
            if qname in UNSAFE_FUNCTIONS:
                for arg in args[:2]:
                    self.unsafe_use(arg, node, f"{qname.rpartition('.')[2]}()")
                break
        if self._record_creation(node, qnames, scope):
            return
        if qnames & _NUMPY_SCALAR_CASTS and args:
            qname = next(iter(qnames & _NUMPY_SCALAR_CASTS))
            self.casts.append(Cast(node, args[0], func, None, qname, scope))
            return
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module == "ctypes" and name.startswith("c_") and args:
                self.ctypes_calls.append(CtypesCall(node, name, args[0], scope))
                return
        self._record_constructor_kwargs(node)

    def _record_creation(self, node: ast.Call, qnames: set[str], scope: LiteScope) -> bool:
        qname = next((q for q in qnames if q in CREATION_CALLS), None)
        spec = CREATION_CALLS[qname] if qname is not None else None
        last = attr_name(node.func)
        is_factory = spec is None and last is not None and last in self.options.buffer_factories
        if spec is None and not is_factory:
            return False
        dtype_kw = keyword(node, "dtype")
        args = positional(node)
        dtype: ast.expr | None = dtype_kw.value if dtype_kw is not None else None
        data = fill = None
        library: str | None = None
        if spec is not None:
            library, dtype_index, data_index, _inferred = spec
            if dtype is None and dtype_index is not None and len(args) > dtype_index:
                dtype = args[dtype_index]
            if data_index is not None and len(args) > data_index:
                data = args[data_index]
            fill_index = FILL_VALUE_INDEX.get(qname or "")
            if fill_index is not None and len(args) > fill_index:
                fill = args[fill_index]
        creation = Creation(
            call=node,
            qname=qname or f"factory:{last}",
            library=library,
            dtype=dtype,
            has_dtype_slot=not any(kw.arg is None for kw in node.keywords),
            data=data,
            fill=fill,
            scope=scope,
        )
        self.creations.append(creation)
        self.creation_by_id[id(node)] = creation
        self.uf.find(creation.key)
        return True

    def _record_cast(self, node: ast.Call, method: str | None, receiver: ast.expr, args: list[ast.expr],
                     scope: LiteScope) -> None:
        if method in ("long", "int", "short"):
            if not node.args and not node.keywords:
                names = {"long": "torch.int64", "int": "torch.int32", "short": "torch.int16"}
                self.casts.append(Cast(node, receiver, None, method, names[method], scope))
            return
        dtype_kw = keyword(node, "dtype")
        dtype = dtype_kw.value if dtype_kw is not None else (args[0] if args else None)
        if dtype is None:
            return
        qname = self.dtype_qname(dtype)
        if qname:
            self.casts.append(Cast(node, receiver, dtype, method, qname, scope))

    def dtype_qname(self, dtype: ast.expr) -> str | None:
        """Qualified name of a signed integer dtype expression, else None."""
        text = string_value(dtype)
        if text is not None:
            return _SIGNED_DTYPE_STRINGS.get(text)
        if isinstance(dtype, (ast.Name, ast.Attribute)):
            for qname in self.qualified_names(dtype):
                if qname in SIGNED_DTYPE_QNAMES:
                    return qname
        return None

    def _record_constructor_kwargs(self, node: ast.Call) -> None:
        """``cls(src_ptrs=x)`` in a classmethod (or ``ClassName(src_ptrs=x)``) binds ``self.src_ptrs``."""
        if not isinstance(node.func, ast.Name) or not any(kw.arg is not None for kw in node.keywords):
            return
        key = self.name_key(node.func)
        class_id = self.cls_params.get(key) or self.class_names.get(key)
        if class_id is None:
            return
        for kw in node.keywords:
            if kw.arg is not None:
                attr_key: Key = ("a", class_id, kw.arg)
                self._add(self.bindings, attr_key, Binding("expr", kw.value, kw))
                source = self.alias_key(kw.value)
                if source is not None:
                    self.uf.union(attr_key, source)


# ----- dispatch tables (class -> handler), and children in source order where ast's differs ---------
# Fields that never hold child nodes (identifiers, numbers, flags, a Constant's value, expression contexts).
_NOT_CHILDREN = frozenset({"id", "attr", "name", "arg", "asname", "module", "level", "kind", "type_comment",
                           "is_async", "conversion", "simple", "ctx"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: (), ast.Name: ()}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    return tuple(f for f in fields if f not in _NOT_CHILDREN)
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


_PRE: dict[type, Callable[[FactCollector, ast.AST], None]] = {
    ast.Name: FactCollector.visit_Name,
    ast.Import: FactCollector.visit_Import,
    ast.ImportFrom: FactCollector.visit_ImportFrom,
    ast.Global: FactCollector.visit_Global,
    ast.Nonlocal: FactCollector.visit_Nonlocal,
    ast.ClassDef: FactCollector.visit_ClassDef,
    ast.FunctionDef: FactCollector.visit_FunctionDef,
    ast.AsyncFunctionDef: FactCollector.visit_FunctionDef,
    ast.Lambda: FactCollector.visit_Lambda,
    ast.ListComp: FactCollector.visit_comprehension_scope,
    ast.SetComp: FactCollector.visit_comprehension_scope,
    ast.DictComp: FactCollector.visit_comprehension_scope,
    ast.GeneratorExp: FactCollector.visit_comprehension_scope,
    ast.Return: FactCollector.visit_Return,
    ast.Assign: FactCollector.visit_Assign,
    ast.AnnAssign: FactCollector.visit_AnnAssign,
    ast.AugAssign: FactCollector.visit_AugAssign,
    ast.NamedExpr: FactCollector.visit_NamedExpr,
    ast.For: FactCollector.visit_For,
    ast.AsyncFor: FactCollector.visit_For,
    ast.comprehension: FactCollector.visit_comprehension,
    ast.withitem: FactCollector.visit_withitem,
    ast.ExceptHandler: FactCollector.visit_ExceptHandler,
    ast.Delete: FactCollector.visit_Delete,
    ast.BinOp: FactCollector.visit_BinOp,
    ast.Compare: FactCollector.visit_Compare,
    ast.keyword: FactCollector.visit_keyword,
    ast.Call: FactCollector.visit_Call,
}  # type: ignore[dict-item]
_POST: dict[type, Callable[[FactCollector, ast.AST], None]] = {
    ast.ClassDef: FactCollector.leave_ClassDef,
    ast.FunctionDef: FactCollector.leave_FunctionDef,
    ast.AsyncFunctionDef: FactCollector.leave_FunctionDef,
    ast.Lambda: FactCollector._pop,
    ast.ListComp: FactCollector._pop,
    ast.SetComp: FactCollector._pop,
    ast.DictComp: FactCollector._pop,
    ast.GeneratorExp: FactCollector._pop,
}  # type: ignore[dict-item]
_ORDER: dict[type, Callable[[ast.AST], Sequence[ast.AST]]] = {
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
}  # type: ignore[dict-item]
