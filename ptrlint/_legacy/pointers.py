"""The evidence model: which expressions are pointer values, which buffers hold them.

One traversal (:class:`FactCollector`) records facts about a module: bindings of names and
``self`` attributes, list appends, element stores, ``copy_``/``fill_`` calls, creation calls,
casts, ctypes calls and the uses that uint64 buffers do not support. Rules then *query* the
facts (:class:`ModuleFacts`) lazily; no rule walks the tree again.

Vocabulary
- A *pointer value* (``Kind.SCALAR``): ``t.data_ptr()``, ``a.ctypes.data``,
  ``ctypes.addressof(x)``, ``ctypes.cast(x, c_void_p).value``, ``a.__array_interface__["data"][0]``,
  a configured pointer function, pointer +/- integer, an element of a pointer-holding value.
  pointer - pointer is an offset; integer constants are never pointers.
- A *pointer-holding* value (``Kind.SEQ``): a list/tuple/comprehension of pointer values, a
  list that gets pointer values appended, a tensor/array created from one, a buffer written with
  pointer values (``buf[i] = p``, ``buf.np[i] = p``, ``view = buf.numpy(); view[i] = p``,
  ``buf.copy_(ptr_tensor)``, ``buf.fill_(p)``), or a creation call whose *target* is named like a
  pointer buffer (name evidence).
- A *key* names a storage location: a local/global name in its scope, a ``self.attr`` of a class
  (all methods share it), an attribute of another object, or a creation call itself. Keys that
  alias the same buffer (``a = b``, ``v = buf.numpy()``, ``self.x = x``, ``cls(x=x)``, slices,
  ``.to(device)``) are merged with union-find, so evidence anywhere reaches the creation site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterator, Sequence

import libcst as cst

from ..analysis.scopes import LiteScope
from ..names import (
    CREATION_CALLS,
    FILL_VALUE_INDEX,
    PASSTHROUGH_METHODS,
    UNSAFE_FUNCTIONS,
    UNSAFE_METHODS,
    VIEW_ATTRIBUTES,
)

Key = tuple  # ("n", scope_id, name) | ("a", class_id, attr) | ("o", base_key, attr) | ("c", call_id)
Evidence = tuple[tuple[cst.CSTNode, str], ...]
MAX_EVIDENCE = 4


class Kind(Enum):
    SCALAR = "pointer value"
    SEQ = "pointer-holding"


@dataclass(frozen=True)
class Value:
    kind: Kind
    evidence: Evidence = ()


@dataclass
class Creation:
    """A tensor/array creation call (or configured buffer factory)."""

    call: cst.Call
    qname: str  # "torch.zeros", "numpy.array", or "factory:make_buffer"
    library: str | None  # "torch", "numpy", or None for factories (decided by the dtype)
    dtype: cst.BaseExpression | None
    has_dtype_slot: bool  # False when **kwargs might carry a dtype
    data: cst.BaseExpression | None
    fill: cst.BaseExpression | None
    scope: LiteScope | None
    target_name: str | None = None
    target_node: cst.CSTNode | None = None

    @property
    def key(self) -> Key:
        return ("c", id(self.call))


@dataclass
class Cast:
    """A value conversion: ``x.long()``, ``x.to(torch.int64)``, ``x.astype(np.int64)``, ``np.int64(x)``."""

    call: cst.Call
    operand: cst.BaseExpression
    dtype: cst.BaseExpression | None  # None for .long()/.int()
    method: str | None  # "long", "to", "type", "astype" or None for the function form
    report_node: cst.CSTNode
    dtype_qname: str
    scope: LiteScope | None


@dataclass
class CtypesCall:
    call: cst.Call
    ctype: str  # "c_long"
    arg: cst.BaseExpression
    scope: LiteScope | None


@dataclass
class ScalarWrite:
    """``T[i] = v`` or ``T.fill_(v)``; PTR005 candidates."""

    node: cst.CSTNode  # the Assign statement or the fill_ Call
    report_node: cst.CSTNode
    tensor: cst.BaseExpression  # T
    value: cst.BaseExpression
    how: str  # "setitem" | "fill_"


@dataclass
class _Binding:
    how: str  # "expr" | "elem" (an element of expr) | "telem" (item `index` of the tuple a call returns)
    expr: cst.BaseExpression
    node: cst.CSTNode
    index: int = -1


class _UnionFind:
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


def _attr_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Name):
        return node.value
    return None


def _simple_string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd prefixes: treat as unknown
            return None
        return value if isinstance(value, str) else None
    return None


def _is_slice_subscript(node: cst.Subscript) -> bool:
    return all(isinstance(el.slice, cst.Slice) for el in node.slice)


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


class NamePatterns:
    """Name evidence: configured pointer-name and look-alike patterns (full match, case-insensitive)."""

    def __init__(self, pointer: Sequence[str], lookalike: Sequence[str]) -> None:
        self.pointer = [re.compile(p, re.IGNORECASE) for p in pointer]
        self.lookalike = [re.compile(p, re.IGNORECASE) for p in lookalike]

    def is_pointer_name(self, name: str) -> bool:
        bare = name.strip("_")
        if not bare or not any(p.fullmatch(bare) for p in self.pointer):
            return False
        return not any(p.fullmatch(bare) for p in self.lookalike)


@dataclass
class AnalysisOptions:
    names: NamePatterns
    buffer_factories: frozenset[str]
    pointer_functions: frozenset[str]  # qualified names or bare names; matched on the last name too

    @property
    def pointer_function_names(self) -> frozenset[str]:
        return frozenset(f.rpartition(".")[2] for f in self.pointer_functions)


_CREATION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in CREATION_CALLS)
_UNSAFE_FUNCTION_LAST_NAMES = frozenset(q.rpartition(".")[2] for q in UNSAFE_FUNCTIONS)
_NUMPY_SCALAR_CASTS = frozenset({"numpy.int64", "numpy.intp", "numpy.longlong", "numpy.int_", "numpy.int32"})
_SIGNED_DTYPE_QNAMES = frozenset({
    "torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16", "torch.short",
    "numpy.int64", "numpy.intp", "numpy.longlong", "numpy.int_", "numpy.int32", "builtins.int",
})
_SIGNED_DTYPE_STRINGS = {"int64": "numpy.int64", "i8": "numpy.int64", "<i8": "numpy.int64", "int32": "numpy.int32",
                         "i4": "numpy.int32", "intp": "numpy.intp", "long": "numpy.int64"}


class FactCollector(cst.CSTVisitor):
    """The single traversal. Records facts; decides nothing.

    Names are recorded with *provisional* keys (the scope where the name is used) because a
    name's binding scope is only known once the whole function has been seen; :meth:`finalize`
    maps every provisional key to its canonical key, and classifies the calls whose meaning
    depends on imports (creation calls, casts, ctypes wrappers).
    """

    def __init__(self, options: AnalysisOptions) -> None:
        super().__init__()
        self.options = options
        self.uf = _UnionFind()
        self.bindings: dict[Key, list[_Binding]] = {}
        self.adds: dict[Key, list[_Binding]] = {}  # append/extend/insert/+=
        self.stores: dict[Key, list[_Binding]] = {}  # setitem, copy_, fill_ (flow evidence)
        self.unsafe: dict[Key, list[tuple[cst.CSTNode, str]]] = {}
        self.annotations: dict[Key, list[cst.BaseExpression]] = {}
        self.creations: list[Creation] = []
        self.casts: list[Cast] = []
        self.ctypes_calls: list[CtypesCall] = []
        self.scalar_writes: list[ScalarWrite] = []
        self.returns: dict[int, list[cst.BaseExpression]] = {}
        self.self_params: dict[Key, int] = {}  # canonical key of a method's first parameter -> class id
        self.cls_params: dict[Key, int] = {}  # canonical key of a classmethod's first parameter -> class id
        self.class_methods: dict[int, dict[str, cst.FunctionDef]] = {}
        self.class_names: dict[Key, int] = {}  # canonical key of a class name -> class id
        self.functions: dict[Key, cst.FunctionDef] = {}
        self.creation_by_id: dict[int, Creation] = {}
        self.module_scope = LiteScope("module", None)
        self.node_scope: dict[int, LiteScope] = {}  # id(Name node) -> scope it appears in
        self.finalized = False
        self._scope = self.module_scope
        self._scopes: dict[int, LiteScope] = {id(self.module_scope): self.module_scope}
        self._stack: list[cst.CSTNode] = []
        self._targets: dict[int, tuple[str, cst.CSTNode]] = {}  # creation call id -> (target name, node)
        self._edges: list[tuple[Key, Key]] = []  # aliasing recorded during the traversal
        self._pending_calls: list[tuple[cst.Call, LiteScope]] = []

    # ----- scopes and names ---------------------------------------------------------------------
    def _push(self, kind: str) -> LiteScope:
        scope = LiteScope(kind, self._scope)
        self._scopes[id(scope)] = scope
        self._scope = scope
        return scope

    def _pop(self) -> None:
        assert self._scope.parent is not None
        self._scope = self._scope.parent

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._scope.bind(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def scope_of(self, node: cst.CSTNode) -> LiteScope:
        return self.node_scope.get(id(node), self._scope if not self.finalized else self.module_scope)

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Import/builtin qualified names of a Name or dotted Attribute (empty for locals)."""
        parts: list[str] = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if not isinstance(node, cst.Name):
            return set()
        base = self.scope_of(node).qualified(node.value)
        if base is None:
            return set()
        return {".".join([base, *reversed(parts)])}

    def name_key(self, node: cst.Name) -> Key:
        scope = self.scope_of(node)
        if self.finalized:
            return ("n", id(scope.resolve(node.value)), node.value)
        return ("r", id(scope), node.value)

    def key_of(self, node: cst.BaseExpression) -> Key | None:
        if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
            return None  # constants, not storage (libcst spells them as names; ast as Constant)
        if isinstance(node, cst.Name):
            return self.name_key(node)
        if isinstance(node, cst.Attribute):
            base = self.key_of(node.value)
            if base is None:
                return None
            class_id = self.self_params.get(base)
            if class_id is not None:
                return ("a", class_id, node.attr.value)
            return ("o", base, node.attr.value)
        if isinstance(node, cst.Call) and self.is_creation_call(node):
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

    def is_creation_call(self, node: cst.Call) -> bool:
        if self.finalized:
            return id(node) in self.creation_by_id
        last = _attr_name(node.func)  # by name until imports are known; finalize() decides
        return last in _CREATION_LAST_NAMES or last in self.options.buffer_factories

    def alias_root(self, expr: cst.BaseExpression, through_index: bool = False) -> cst.BaseExpression:
        """Strip views, slices and value-preserving calls: ``self.buf[:n].numpy()`` -> ``self.buf``."""
        while True:
            if isinstance(expr, cst.Subscript) and (through_index or _is_slice_subscript(expr)):
                expr = expr.value
            elif isinstance(expr, cst.Attribute) and expr.attr.value in VIEW_ATTRIBUTES:
                expr = expr.value
            elif (
                isinstance(expr, cst.Call)
                and isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value in PASSTHROUGH_METHODS
                and expr.func.attr.value not in ("tolist", "item")
            ):
                expr = expr.func.value
            elif isinstance(expr, cst.Call) and _raw_view_of(expr) is not None:
                expr = _raw_view_of(expr)  # type: ignore[assignment]
            else:
                return expr

    def alias_key(self, expr: cst.BaseExpression, through_index: bool = False) -> Key | None:
        return self.key_of(self.alias_root(expr, through_index))

    # ----- recording helpers --------------------------------------------------------------------
    @staticmethod
    def _add(table: dict[Key, list], key: Key | None, item: object) -> None:
        if key is not None:
            table.setdefault(key, []).append(item)

    def _alias(self, a: Key, b: Key) -> None:
        self._edges.append((a, b))

    def bind(self, target: cst.BaseExpression, binding: _Binding) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [el.value for el in target.elements]
            value = binding.expr
            if binding.how == "expr" and isinstance(value, (cst.Tuple, cst.List)):
                values = [el.value for el in value.elements]
                if len(values) == len(elements) and not any(isinstance(el, cst.StarredElement) for el in value.elements):
                    for t, v in zip(elements, values):
                        self.bind(t, _Binding("expr", v, binding.node))
                return
            if binding.how == "elem" and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                args = _positional(value)
                if value.func.value == "enumerate" and len(elements) == 2 and args:
                    self.bind(elements[1], _Binding("elem", args[0].value, binding.node))
                elif value.func.value == "zip" and len(args) == len(elements):
                    for t, a in zip(elements, args):
                        self.bind(t, _Binding("elem", a.value, binding.node))
            elif binding.how == "expr" and isinstance(value, cst.Call):
                for i, t in enumerate(elements):  # a, b = f(): item i of what f returns
                    if not isinstance(t, cst.StarredElement):
                        self.bind(t, _Binding("telem", value, binding.node, i))
            return
        if isinstance(target, cst.Subscript):
            root = self.alias_key(target.value)
            self._add(self.stores, root, _Binding("expr", binding.expr, binding.node))
            return
        key = self.key_of(target)
        if key is None:
            return
        self._add(self.bindings, key, binding)
        if binding.how == "expr":
            source = self.alias_key(binding.expr)
            if source is not None:
                self._alias(key, source)
            self._mark_target(binding.expr, target)

    def _mark_target(self, value: cst.BaseExpression, target: cst.CSTNode) -> None:
        """Remember the assigned name of the creation call inside ``value`` (name evidence)."""
        inner = self.alias_root(value)
        if isinstance(inner, cst.Call):
            if isinstance(target, cst.Name):
                name = target.value
            elif isinstance(target, cst.Attribute):
                name = target.attr.value
            else:
                return
            self._targets.setdefault(id(inner), (name, target))

    def unsafe_use(self, expr: cst.BaseExpression, node: cst.CSTNode, why: str) -> None:
        key = self.alias_key(expr, through_index=True)
        self._add(self.unsafe, key, (node, why))

    # ----- traversal: scopes ------------------------------------------------------------------------
    def visit_Name(self, node: cst.Name) -> None:
        self.node_scope[id(node)] = self._scope

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._scope.bind_import(alias.asname.name.value, full)
            else:
                first = full.partition(".")[0]
                self._scope.bind_import(first, first)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        module = dotted(node.module) if node.module is not None and not node.relative else None
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            if module:
                self._scope.bind_import(local, f"{module}.{name}")
            else:
                self._scope.bind(local)

    def visit_Global(self, node: cst.Global) -> None:
        self._scope.globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._scope.nonlocals.update(item.name.value for item in node.names)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._scope.bind(node.name.value)
        self.class_names[("n", id(self._scope), node.name.value)] = id(node)
        self._stack.append(node)
        self._push("class")
        methods: dict[str, cst.FunctionDef] = {}
        for stmt in node.body.body:
            if isinstance(stmt, cst.FunctionDef):
                methods[stmt.name.value] = stmt
        self.class_methods[id(node)] = methods

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()
        self._pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        enclosing = self._stack[-1] if self._stack else None
        self._scope.bind(node.name.value)
        if not isinstance(enclosing, cst.ClassDef):
            self.functions[("n", id(self._scope), node.name.value)] = node
        self._stack.append(node)
        scope = self._push("function")
        params = list(node.params.posonly_params) + list(node.params.params)
        every = [*params, *node.params.kwonly_params]
        for extra in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        for param in every:
            scope.bind(param.name.value)
            if param.annotation is not None:
                self._add(self.annotations, ("n", id(scope), param.name.value), param.annotation.annotation)
        if isinstance(enclosing, cst.ClassDef) and params:
            decorators = {_attr_name(d.decorator) for d in node.decorators}
            first: Key = ("n", id(scope), params[0].name.value)
            if "staticmethod" in decorators:
                return
            if "classmethod" in decorators:
                self.cls_params[first] = id(enclosing)
            else:
                self.self_params[first] = id(enclosing)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()
        self._pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        scope = self._push("function")
        for param in [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]:
            scope.bind(param.name.value)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._pop()

    def _visit_comprehension(self, node: cst.CSTNode) -> None:
        self._push("comprehension")

    def _leave_comprehension(self, node: cst.CSTNode) -> None:
        self._pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension  # type: ignore[assignment]
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension  # type: ignore[assignment]

    # ----- traversal: facts ---------------------------------------------------------------------------
    def visit_Return(self, node: cst.Return) -> None:
        if node.value is None:
            return
        for item in reversed(self._stack):
            if isinstance(item, cst.FunctionDef):
                self.returns.setdefault(id(item), []).append(node.value)
                return

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target)
            self.bind(target.target, _Binding("expr", node.value, node))
            if isinstance(target.target, cst.Subscript):
                self.scalar_writes.append(ScalarWrite(node, node, target.target.value, node.value, "setitem"))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        target = node.target
        key: Key | None
        if isinstance(target, cst.Name) and self._stack and isinstance(self._stack[-1], cst.ClassDef):
            self._scope.bind(target.value)
            key = ("a", id(self._stack[-1]), target.value)  # dataclass-style field
            if node.value is not None:
                self._add(self.bindings, key, _Binding("expr", node.value, node))
                inner = self._field_default(node.value)
                self._mark_target(inner, target)
                source = self.alias_key(inner)
                if source is not None:
                    self._alias(key, source)
        else:
            self._bind_target(target)
            key = self.key_of(target)
            if node.value is not None:
                self.bind(target, _Binding("expr", node.value, node))
        self._add(self.annotations, key, node.annotation.annotation)

    @staticmethod
    def _field_default(value: cst.BaseExpression) -> cst.BaseExpression:
        """``field(default_factory=lambda: make())`` -> ``make()``."""
        if isinstance(value, cst.Call) and _attr_name(value.func) == "field":
            factory = _keyword(value, "default_factory")
            if factory is not None and isinstance(factory.value, cst.Lambda):
                return factory.value.body
            default = _keyword(value, "default")
            if default is not None:
                return default.value
        return value

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target)
        op = node.operator
        if isinstance(op, cst.AddAssign):
            self._add(self.adds, self.key_of(node.target), _Binding("expr", node.value, node))
        if isinstance(op, (cst.AddAssign, cst.SubtractAssign, cst.FloorDivideAssign, cst.ModuloAssign,
                           cst.DivideAssign, cst.RightShiftAssign, cst.LeftShiftAssign)):
            self.unsafe_use(node.target, node, "in-place arithmetic")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        scope = self._scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent  # a walrus in a comprehension binds in the enclosing scope
        if isinstance(node.target, cst.Name):
            scope.bind(node.target.value)
        self.bind(node.target, _Binding("expr", node.value, node))

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)
        self.bind(node.target, _Binding("elem", node.iter, node))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)
        self.bind(node.target, _Binding("elem", node.iter, node))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._scope.bind(node.name.name.value)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_target(node.target)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Add, cst.Subtract, cst.FloorDivide, cst.Modulo, cst.Divide,
                                      cst.RightShift, cst.LeftShift, cst.Power)):
            self.unsafe_use(node.left, node, "arithmetic")
            self.unsafe_use(node.right, node, "arithmetic")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        ordering = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)
        if any(isinstance(c.operator, ordering) for c in node.comparisons):
            self.unsafe_use(node.left, node, "ordering comparison")
            for c in node.comparisons:
                self.unsafe_use(c.comparator, node, "ordering comparison")

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None and node.keyword.value != "dtype":
            self._mark_target(node.value, node.keyword)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        last = _attr_name(func)
        receiver = func.value if isinstance(func, cst.Attribute) else None
        args = _positional(node)

        if receiver is not None and method in ("append", "extend", "insert", "add"):
            value = args[-1].value if args else None
            if value is not None:
                how = "elem-of" if method == "extend" else "expr"
                self._add(self.adds, self.key_of(receiver), _Binding(how, value, node))
        if receiver is not None and method == "copy_" and args:
            self._add(self.stores, self.alias_key(receiver), _Binding("seq", args[0].value, node))
        if receiver is not None and method == "fill_" and args:
            self._add(self.stores, self.alias_key(receiver), _Binding("expr", args[0].value, node))
            self.scalar_writes.append(ScalarWrite(node, func.attr, receiver, args[0].value, "fill_"))  # type: ignore[union-attr]
        if receiver is not None and method in UNSAFE_METHODS:
            self.unsafe_use(receiver, node, f".{method}()")
        if receiver is not None and method in ("long", "int", "short", "to", "type", "astype"):
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
            or (isinstance(func, cst.Name) and any(a.keyword is not None for a in node.args))  # cls(x=...)
        ):
            self._pending_calls.append((node, self._scope))

    # ----- after the traversal ------------------------------------------------------------------------
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

    def _classify_call(self, node: cst.Call, scope: LiteScope) -> None:
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        receiver = func.value if isinstance(func, cst.Attribute) else None
        args = _positional(node)
        if receiver is not None and method in ("long", "int", "short", "to", "type", "astype"):
            self._record_cast(node, method, receiver, args, scope)
            return
        qnames = self.qualified_names(func) if isinstance(func, (cst.Name, cst.Attribute)) else set()
        for qname in qnames:
            if qname in UNSAFE_FUNCTIONS:
                for arg in args[:2]:
                    self.unsafe_use(arg.value, node, f"{qname.rpartition('.')[2]}()")
                break
        if self._record_creation(node, qnames, scope):
            return
        if qnames & _NUMPY_SCALAR_CASTS and args:
            qname = next(iter(qnames & _NUMPY_SCALAR_CASTS))
            self.casts.append(Cast(node, args[0].value, func, None, func, qname, scope))
            return
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module == "ctypes" and name.startswith("c_") and args:
                self.ctypes_calls.append(CtypesCall(node, name, args[0].value, scope))
                return
        self._record_constructor_kwargs(node)

    def _record_creation(self, node: cst.Call, qnames: set[str], scope: LiteScope) -> bool:
        qname = next((q for q in qnames if q in CREATION_CALLS), None)
        spec = CREATION_CALLS[qname] if qname is not None else None
        last = _attr_name(node.func)
        is_factory = spec is None and last is not None and last in self.options.buffer_factories
        if spec is None and not is_factory:
            return False
        has_star_kwargs = any(a.star == "**" for a in node.args)
        dtype_arg = _keyword(node, "dtype")
        positional = _positional(node)
        dtype: cst.BaseExpression | None = dtype_arg.value if dtype_arg is not None else None
        data = fill = None
        library: str | None = None
        if spec is not None:
            library, dtype_index, data_index, _inferred = spec
            if dtype is None and dtype_index is not None and len(positional) > dtype_index:
                dtype = positional[dtype_index].value
            if data_index is not None and len(positional) > data_index:
                data = positional[data_index].value
            fill_index = FILL_VALUE_INDEX.get(qname or "")
            if fill_index is not None and len(positional) > fill_index:
                fill = positional[fill_index].value
        creation = Creation(
            call=node,
            qname=qname or f"factory:{last}",
            library=library,
            dtype=dtype,
            has_dtype_slot=not has_star_kwargs,
            data=data,
            fill=fill,
            scope=scope,
        )
        self.creations.append(creation)
        self.creation_by_id[id(node)] = creation
        self.uf.find(creation.key)
        return True

    def _record_cast(self, node: cst.Call, method: str | None, receiver: cst.BaseExpression,
                     args: list[cst.Arg], scope: LiteScope) -> None:
        func = node.func
        assert isinstance(func, cst.Attribute)
        if method in ("long", "int", "short"):
            if not node.args:
                names = {"long": "torch.int64", "int": "torch.int32", "short": "torch.int16"}
                self.casts.append(Cast(node, receiver, None, method, func.attr, names[method], scope))
            return
        dtype_arg = _keyword(node, "dtype")
        dtype = dtype_arg.value if dtype_arg is not None else (args[0].value if args else None)
        if dtype is None:
            return
        qname = self.dtype_qname(dtype)
        if qname:
            self.casts.append(Cast(node, receiver, dtype, method, func.attr, qname, scope))

    def dtype_qname(self, dtype: cst.BaseExpression) -> str | None:
        """Qualified name of a signed integer dtype expression, else None."""
        text = _simple_string_value(dtype)
        if text is not None:
            return _SIGNED_DTYPE_STRINGS.get(text)
        if isinstance(dtype, (cst.Name, cst.Attribute)):
            for qname in self.qualified_names(dtype):
                if qname in _SIGNED_DTYPE_QNAMES:
                    return qname
        return None

    def _record_constructor_kwargs(self, node: cst.Call) -> None:
        """``cls(src_ptrs=x)`` in a classmethod (or ``ClassName(src_ptrs=x)``) binds ``self.src_ptrs``."""
        if not isinstance(node.func, cst.Name) or not any(a.keyword is not None for a in node.args):
            return
        key = self.name_key(node.func)
        class_id = self.cls_params.get(key) or self.class_names.get(key)
        if class_id is None:
            return
        for arg in node.args:
            if arg.keyword is not None:
                attr_key: Key = ("a", class_id, arg.keyword.value)
                self._add(self.bindings, attr_key, _Binding("expr", arg.value, arg))
                source = self.alias_key(arg.value)
                if source is not None:
                    self.uf.union(attr_key, source)


def _raw_view_of(call: cst.Call) -> cst.BaseExpression | None:
    """``ctypes.cast(buf.data_ptr(), POINTER(c_int64))`` is a raw view of ``buf``: writes through it land in ``buf``."""
    if _attr_name(call.func) != "cast" or not call.args:
        return None
    first = call.args[0].value
    if (
        isinstance(first, cst.Call)
        and isinstance(first.func, cst.Attribute)
        and first.func.attr.value == "data_ptr"
        and not first.args
    ):
        return first.func.value
    return None


def dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` as text for Name/Attribute chains (import statements); "" otherwise."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


class ModuleFacts:
    """Queries over the collected facts. Results are memoised per key class."""

    def __init__(self, collector: FactCollector) -> None:
        self.c = collector
        self.options = collector.options
        self.groups = collector.uf.members()
        self._class_memo: dict[Key, Value | None] = {}
        self._in_progress: set[Key] = set()
        self._torch_memo: dict[Key, bool] = {}
        self._target_of = collector._targets
        self._in_progress_funcs: set[int] = set()
        for creation in collector.creations:
            target = self._target_of.get(id(creation.call))
            if target is not None:
                creation.target_name, creation.target_node = target

    # ----- pointer values ------------------------------------------------------------------------
    def kind(self, expr: cst.BaseExpression | None) -> Value | None:
        if expr is None:
            return None
        c = self.c
        if isinstance(expr, cst.Call):
            return self._call_kind(expr)
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            if attr == "data" and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "ctypes":
                return Value(Kind.SCALAR, ((expr, "pointer value: `.ctypes.data`"),))
            if attr == "value" and isinstance(expr.value, cst.Call) and "ctypes.cast" in c.qualified_names(expr.value.func):
                return Value(Kind.SCALAR, ((expr, "pointer value: `ctypes.cast(...).value`"),))
            if attr in VIEW_ATTRIBUTES:
                inner = self.kind(expr.value)
                if inner is not None and inner.kind is Kind.SEQ:
                    return inner
            return self._key_kind(c.key_of(expr))
        if isinstance(expr, cst.Name):
            return self._key_kind(c.key_of(expr))
        if isinstance(expr, cst.Subscript):
            inner_value = expr.value
            if (
                isinstance(inner_value, cst.Subscript)
                and isinstance(inner_value.value, cst.Attribute)
                and inner_value.value.attr.value in ("__array_interface__", "__cuda_array_interface__")
            ):
                return Value(Kind.SCALAR, ((expr, f"pointer value: `{inner_value.value.attr.value}[\"data\"][0]`"),))
            inner = self.kind(inner_value)
            if inner is None or inner.kind is not Kind.SEQ:
                return None
            if _is_slice_subscript(expr):
                return inner
            return Value(Kind.SCALAR, inner.evidence)
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.kind(expr.left), self.kind(expr.right)
            op = expr.operator
            if isinstance(op, cst.Add):
                if left and right and left.kind is right.kind is Kind.SEQ:
                    return Value(Kind.SEQ, left.evidence)  # list concatenation
                if left and left.kind is Kind.SCALAR and right is None:
                    return left
                if right and right.kind is Kind.SCALAR and left is None:
                    return right
                return None
            if isinstance(op, (cst.Subtract, cst.BitAnd, cst.BitOr)):
                if left and left.kind is Kind.SCALAR and right is None:
                    if isinstance(op, cst.Subtract) and _looks_like_base(expr.right, self.options.names):
                        return None  # `ptr - base`: an offset even when `base` is not traced
                    return left  # pointer - int (or alignment mask) is a pointer; pointer - pointer is not
                return None
            return None
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            for element in expr.elements:
                value = self.kind(element.value)
                if value is None:
                    continue
                if isinstance(element, cst.StarredElement):
                    if value.kind is Kind.SEQ:
                        return value
                else:
                    return Value(Kind.SEQ, value.evidence)
            return None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            value = self.kind(expr.elt)
            return Value(Kind.SEQ, value.evidence) if value is not None else None
        if isinstance(expr, cst.IfExp):
            return self.kind(expr.body) or self.kind(expr.orelse)
        if isinstance(expr, cst.Await):
            return self.kind(expr.expression)
        if isinstance(expr, cst.NamedExpr):
            return self.kind(expr.value)
        return None

    def _call_kind(self, call: cst.Call) -> Value | None:
        c = self.c
        func = call.func
        args = _positional(call)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "data_ptr" and not call.args:
                return Value(Kind.SCALAR, ((call, "pointer value: `data_ptr()`"),))
            if method in PASSTHROUGH_METHODS:
                inner = self.kind(func.value)
                if inner is not None and inner.kind is Kind.SEQ:
                    return inner
                return None
            if method == "item":
                inner = self.kind(func.value)
                if inner is not None:
                    return Value(Kind.SCALAR, inner.evidence)
                return None
        qnames = c.qualified_names(func) if isinstance(func, (cst.Name, cst.Attribute)) else set()
        last = _attr_name(func)
        if "ctypes.addressof" in qnames:
            return Value(Kind.SCALAR, ((call, "pointer value: `ctypes.addressof()`"),))
        funcs = self.options.pointer_functions
        if funcs and (last in self.options.pointer_function_names or qnames & funcs):
            return Value(Kind.SCALAR, ((call, f"pointer value: configured pointer function `{last}()`"),))
        if qnames & {"builtins.int"} and args:
            return self.kind(args[0].value)
        if qnames & {"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed"} and args:
            inner = self.kind(args[0].value)
            return inner if inner is not None and inner.kind is Kind.SEQ else None
        if qnames & {"torch.cat", "torch.stack", "numpy.concatenate", "numpy.stack"} and args:
            inner = self.kind(args[0].value)
            if inner is not None and isinstance(args[0].value, (cst.List, cst.Tuple)):
                return Value(Kind.SEQ, inner.evidence)
            return None
        creation = c.creation_by_id.get(id(call))
        if creation is not None:
            value = self.kind(creation.data) or self.kind(creation.fill)
            if value is not None:
                return Value(Kind.SEQ, value.evidence)
            return None
        # A call to a function of this module: the kind of what it returns.
        target = self._local_function(func)
        if target is not None and id(target) not in self._in_progress_funcs:
            self._in_progress_funcs.add(id(target))
            try:
                for ret in c.returns.get(id(target), []):
                    value = self.kind(ret)
                    if value is not None:
                        return value
            finally:
                self._in_progress_funcs.discard(id(target))
        return None

    def _returned_item_kind(self, call: cst.Call, index: int) -> Value | None:
        """Kind of item ``index`` of the tuple literal(s) a local function returns."""
        target = self._local_function(call.func)
        if target is None or id(target) in self._in_progress_funcs:
            return None
        self._in_progress_funcs.add(id(target))
        try:
            for ret in self.c.returns.get(id(target), []):
                if isinstance(ret, cst.Tuple) and index < len(ret.elements):
                    if any(isinstance(el, cst.StarredElement) for el in ret.elements[: index + 1]):
                        continue
                    value = self.kind(ret.elements[index].value)
                    if value is not None:
                        return value
        finally:
            self._in_progress_funcs.discard(id(target))
        return None

    def _local_function(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        c = self.c
        if isinstance(func, cst.Name):
            key = c.name_key(func)
            return c.functions.get(key) if key is not None else None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            base = c.name_key(func.value)
            class_id = c.self_params.get(base) if base is not None else None
            if class_id is not None:
                return c.class_methods.get(class_id, {}).get(func.attr.value)
        return None

    def _key_kind(self, key: Key | None) -> Value | None:
        if key is None:
            return None
        return self.class_kind(self.c.uf.find(key))

    def class_kind(self, root: Key) -> Value | None:
        if root in self._class_memo:
            return self._class_memo[root]
        if root in self._in_progress:
            return None
        self._in_progress.add(root)
        try:
            result = self._compute_class_kind(root)
        finally:
            self._in_progress.discard(root)
        self._class_memo[root] = result
        return result

    def _compute_class_kind(self, root: Key) -> Value | None:
        c = self.c
        scalar: Value | None = None
        members = self.groups.get(root, [root])
        for key in members:
            for binding in c.adds.get(key, []):
                value = self.kind(binding.expr)
                if value is None:
                    continue
                if binding.how == "elem-of" and value.kind is Kind.SEQ:
                    return Value(Kind.SEQ, _ev(value.evidence, binding.node, "pointer values added here"))
                if binding.how == "expr":
                    return Value(Kind.SEQ, _ev(value.evidence, binding.node, "pointer value added here"))
            for binding in c.stores.get(key, []):
                value = self.kind(binding.expr)
                if value is None:
                    continue
                if binding.how == "seq" and value.kind is not Kind.SEQ:
                    continue
                return Value(Kind.SEQ, _ev(value.evidence, binding.node, "pointer value stored here"))
        for key in members:
            creation = self._creation(key) if key[0] == "c" else None
            if creation is not None:
                value = self.kind(creation.data) or self.kind(creation.fill)
                if value is not None:
                    return Value(Kind.SEQ, value.evidence)
            for binding in c.bindings.get(key, []):
                value = self.kind(binding.expr) if binding.how != "telem" else Value(Kind.SCALAR)
                if value is None:
                    continue
                if binding.how == "elem":
                    if value.kind is Kind.SEQ and scalar is None:
                        scalar = Value(Kind.SCALAR, value.evidence)
                    continue
                if binding.how == "telem":
                    value = self._returned_item_kind(binding.expr, binding.index)  # type: ignore[arg-type]
                    if value is None:
                        continue
                if value.kind is Kind.SEQ:
                    return value
                if scalar is None:
                    scalar = value
        for key in members:
            if key[0] == "c":
                creation = self._creation(key)
                if creation is not None and self.name_evidence(creation):
                    node = creation.target_node or creation.call
                    return Value(Kind.SEQ, ((node, f"name `{creation.target_name}` says it holds addresses"),))
        return scalar

    def _creation(self, key: Key) -> Creation | None:
        return self.c.creation_by_id.get(key[1])

    # ----- questions the rules ask ---------------------------------------------------------------
    def name_evidence(self, creation: Creation) -> bool:
        return creation.target_name is not None and self.options.names.is_pointer_name(creation.target_name)

    def pointer_holding(self, creation: Creation) -> Value | None:
        """Value, flow or name evidence that a creation call makes a pointer-holding buffer."""
        value = self._key_kind(creation.key)
        return value if value is not None and value.kind is Kind.SEQ else None

    def unsafe_uses(self, key: Key) -> list[tuple[cst.CSTNode, str]]:
        root = self.c.uf.find(key)
        uses: list[tuple[cst.CSTNode, str]] = []
        for member in self.groups.get(root, [root]):
            uses.extend(self.c.unsafe.get(member, []))
        return uses

    def is_torch_tensor(self, expr: cst.BaseExpression) -> bool:
        """Known to be a torch tensor: torch creation, ``torch.Tensor`` annotation, ``.cpu``/``.gpu`` of a factory."""
        c = self.c
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("cpu", "gpu"):
            return self._is_factory_value(expr.value)
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("np", "T", "data"):
            return False
        if isinstance(expr, cst.Subscript) and _is_slice_subscript(expr):
            return self.is_torch_tensor(expr.value)
        if isinstance(expr, cst.Call):
            creation = c.creation_by_id.get(id(expr))
            if creation is not None:
                return creation.library == "torch"
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
                "to", "cuda", "cpu", "clone", "contiguous", "pin_memory", "detach", "view", "reshape", "copy_to_gpu"
            ):
                return self.is_torch_tensor(expr.func.value)
            return False
        key = c.key_of(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if key is None:
            return False
        if key in self._torch_memo:
            return self._torch_memo[key]
        self._torch_memo[key] = False
        result = any(self._is_torch_annotation(a) for a in c.annotations.get(key, [])) or any(
            b.how == "expr" and self.is_torch_tensor(b.expr) for b in c.bindings.get(key, [])
        )
        self._torch_memo[key] = result
        return result

    def _is_torch_annotation(self, annotation: cst.BaseExpression) -> bool:
        for node in _walk_names(annotation):
            if "torch.Tensor" in self.c.qualified_names(node):
                return True
        return False

    def _is_factory_value(self, expr: cst.BaseExpression) -> bool:
        c = self.c
        if isinstance(expr, cst.Call):
            return _attr_name(expr.func) in self.options.buffer_factories
        key = c.key_of(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if key is None:
            return False
        return any(b.how == "expr" and self._is_factory_value(b.expr) for b in c.bindings.get(key, []))


_BASE_WORDS = re.compile(r"(?:^|_)(?:base|start|begin|origin|lo|low|first)(?:_|$)", re.IGNORECASE)


def _looks_like_base(node: cst.BaseExpression, names: NamePatterns) -> bool:
    """An untraced operand named like a base address (``base``, ``pool_start``, ``base_ptr``)."""
    name = _attr_name(node)
    return name is not None and (bool(_BASE_WORDS.search(name)) or names.is_pointer_name(name))


def _walk_names(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    if isinstance(node, (cst.Name, cst.Attribute)):
        yield node
        if isinstance(node, cst.Attribute):
            return
    for child in node.children:
        yield from _walk_names(child)


def _ev(evidence: Evidence, node: cst.CSTNode, message: str) -> Evidence:
    return ((node, message), *evidence)[:MAX_EVIDENCE]


def collect(module: cst.Module, options: AnalysisOptions) -> ModuleFacts:
    collector = FactCollector(options)
    module.visit(collector)
    collector.finalize()
    return ModuleFacts(collector)
