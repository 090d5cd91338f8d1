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

from ..names import (
    CREATION_CALLS,
    ELEMENT_TYPE_NAMES,
    FILL_VALUE_INDEX,
    PASSTHROUGH_METHODS,
    UNSAFE_FUNCTIONS,
    UNSAFE_METHODS,
    VIEW_ATTRIBUTES,
    DtypeClass,
    classify_qualified_dtype,
    classify_string_dtype,
)
from ..project.layout import resolve_relative
from .device import is_device_function
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
    like_source: ast.expr | None = None  # `empty_like(src)`, `src.new_zeros(n)`: the dtype comes from `src`
    in_raises: bool = False  # inside `with pytest.raises(...)`: a deliberate failure, not a finding

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
    in_raises: bool = False


@dataclass
class CtypesCall:
    call: ast.Call
    ctype: str  # "c_long"
    arg: ast.expr
    scope: LiteScope | None
    valued: bool = False  # `c_int64(p).value`: a deliberate signed reinterpretation, not a kept object
    in_raises: bool = False


@dataclass
class ScalarWrite:
    """``T[i] = v`` or ``T.fill_(v)``; PTR005 candidates."""

    node: ast.AST  # the Assign statement or the fill_ Call
    tensor: ast.expr  # T
    value: ast.expr
    how: str  # "setitem" | "fill_"
    in_raises: bool = False


@dataclass
class Binding:
    how: str  # "expr" | "elem" (an element of expr) | "index" (a loop counter) | "telem" (item `index` of the
    #           tuple a call returns) | "elem-of" (extend) | "seq" (copy_)
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
NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_full", "new_ones", "new_tensor"})  # dtype of the receiver
_LIKE_SOURCE_KEYWORDS = ("input", "a", "prototype")
_COLLECTIVES = {
    "torch.distributed.all_gather": "all_gather",  # (out_list, t): every element of out_list gets t's values
    "torch.distributed.all_gather_into_tensor": "into",  # (out, t)
    "torch.distributed._all_gather_base": "into",
    "torch.distributed.broadcast": "broadcast",  # (t, src): t keeps the root's values
}
_RAISES_FUNCTIONS = frozenset({"pytest.raises"})
_RAISES_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})
_ARITHMETIC = (ast.Add, ast.Sub, ast.FloorDiv, ast.Mod, ast.Div, ast.RShift, ast.LShift, ast.Pow)
_AUG_ARITHMETIC = (ast.Add, ast.Sub, ast.FloorDiv, ast.Mod, ast.Div, ast.RShift, ast.LShift)
_ORDERING = (ast.Lt, ast.Gt, ast.LtE, ast.GtE)


@dataclass
class ModuleContext:
    """Where the module lives: its dotted name (for relative imports and the names of its classes)
    and, through the project index, what its imports tell about pointer values (or None)."""

    module: str = ""
    is_package: bool = False
    view: object | None = None  # project.view.ProjectView


class FactCollector:
    """The single traversal. Records facts; decides nothing.

    Names are recorded with *provisional* keys (the scope where the name is used) because a
    name's binding scope is only known once the whole function has been seen; :meth:`finalize`
    maps every provisional key to its canonical key, and classifies the calls whose meaning
    depends on imports (creation calls, casts, ctypes wrappers).
    """

    def __init__(self, options: AnalysisOptions, context: ModuleContext | None = None) -> None:
        self.options = options
        self.context = context or ModuleContext()
        self.view = self.context.view
        self.class_qualnames: dict[int, str] = {}  # id(class) -> "Outer.Inner" (module-level classes and their nests)
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
        self.function_scopes: dict[int, int] = {}  # id(function) -> id of its scope (parameter keys)
        self.creation_by_id: dict[int, Creation] = {}
        self.targets: dict[int, tuple[str, ast.AST]] = {}  # creation call id -> (target name, node)
        self.module_scope = LiteScope("module", None)
        self.node_scope: dict[int, LiteScope] = {}  # id(Name node) -> scope it appears in
        self.finalized = False
        self._scope = self.module_scope
        self._scopes: dict[int, LiteScope] = {id(self.module_scope): self.module_scope}
        self.calls: list[ast.Call] = []  # calls with arguments: candidates for parameter flow
        self.binops: list[ast.BinOp] = []  # `+`, `-`, `*`: candidates for PTR007
        self.gathers: list[tuple[str, ast.expr, ast.expr, ast.Call]] = []  # (collective, out, source, call)
        self.valued_calls: set[int] = set()  # ids of calls whose `.value` is read (`c_int64(p).value`)
        self.narrowed: set[int] = set()  # ids of expressions converted at once to a narrow dtype
        self.class_nodes: dict[int, ast.ClassDef] = {}
        self.method_class: dict[int, int] = {}  # id(method) -> id(class)
        self.method_kinds: dict[int, str] = {}  # id(method) -> "instance" | "class" | "static"
        self.module_constants: dict[str, ast.expr] = {}  # module-level NAME = <expr> bound once
        self.imports_numpy = False
        self._stack: list[ast.AST] = []
        self._edges: list[tuple[Key, Key]] = []  # aliasing recorded during the traversal
        # (location, creation): a creation stored into a name or attribute. Directional: what is written
        # through the location reaches the creation, but two creations stored into one location (a
        # dataclass field filled all over the module, a name reassigned) never alias each other.
        self.flows: list[tuple[Key, Key]] = []
        self._pending_calls: list[tuple[ast.Call, LiteScope, bool]] = []
        self._raises = 0  # depth of `with pytest.raises(...)` blocks around the current node
        self._raising_withs: set[int] = set()
        self._dtype_checks: list[tuple[ast.expr, list[ast.expr], ast.Compare]] = []
        self._types: dict[Key, int | None] | None = None

    # ----- the traversal ------------------------------------------------------------------------
    def run(self, module: ast.Module) -> None:
        for stmt in module.body:
            self._walk(stmt)
        self.finalize()

    def _walk(self, node: ast.AST) -> None:
        cls = node.__class__
        if (cls is ast.FunctionDef or cls is ast.AsyncFunctionDef) and node.decorator_list and is_device_function(node):
            self._scope.bind(node.name)  # a kernel: device code holds no host tensors (see analysis/device.py)
            return
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
            return self._attribute_key(base, node.attr)
        if isinstance(node, ast.Call) and self.is_creation_call(node):
            return ("c", id(node))
        return None

    def _attribute_key(self, base: Key, attr: str) -> Key:
        """``self.x`` and ``obj.x`` where ``obj`` is known to be an instance of a module class share a key."""
        class_id = self.self_params.get(base)
        if class_id is None and self._types is not None:
            class_id = self.type_of(base)
        if class_id is not None:
            return ("a", class_id, attr)
        return ("o", base, attr)

    def canonical(self, key: Key) -> Key:
        kind = key[0]
        if kind == "r":
            scope = self._scopes[key[1]]
            return ("n", id(scope.resolve(key[2])), key[2])
        if kind == "o":
            return self._attribute_key(self.canonical(key[1]), key[2])
        return key

    # ----- types: which module class an expression's value is an instance of --------------------
    def type_of(self, key: Key) -> int | str | None:
        """The module class whose instance ``key`` holds, from an annotation or a constructor/factory binding."""
        types = self._types
        if types is None:
            return None
        if key in types:
            return types[key]
        types[key] = None  # a cycle resolves to "unknown"
        found = self.self_params.get(key)
        if found is None:
            for annotation in self.annotations.get(key, []):
                found = self.class_of_annotation(annotation)
                if found is not None:
                    break
        if found is None:
            for binding in self.bindings.get(key, []):
                if binding.how == "expr":
                    found = self.class_of_expr(binding.expr)
                elif binding.how == "elem" and isinstance(binding.expr, (ast.Name, ast.Attribute)):
                    source = self.key_of(binding.expr)  # `for r in regions` with `regions: list[Region]`
                    for annotation in self.annotations.get(source, []) if source is not None else []:
                        found = self.element_class(annotation)
                        if found is not None:
                            break
                if found is not None:
                    break
        types[key] = found
        return found

    def class_of_name(self, node: ast.AST) -> int | str | None:
        """The class a name refers to: a class of this module (``Cls``, ``cls`` in a classmethod; its
        id) or, through the project index, a class of another module (``addresses.Region``; its
        qualified name)."""
        if isinstance(node, ast.Name):
            key = self.name_key(node)
            found = self.class_names.get(key) or self.cls_params.get(key)
            if found is not None:
                return found
        elif not isinstance(node, ast.Attribute):
            return None
        if self.view is not None:
            # an imported CamelCase name (`Region`, `addresses.Region`) is taken as the class it names; what
            # the project says about it (attributes, methods, writes into it) comes from the summaries
            for qname in self.qualified_names(node):
                last = qname.rpartition(".")[2]
                if last[:1].isupper() and not qname.startswith(("builtins.", "typing.")):
                    return qname
        return None

    def class_qualname(self, class_id: int | str) -> str | None:
        """The qualified name of a class (``pkg.mod.Cls``) as other modules spell it."""
        if isinstance(class_id, str):
            return class_id
        local = self.class_qualnames.get(class_id)
        if local is None or not self.context.module:
            return None
        return f"{self.context.module}.{local}"

    def class_of_annotation(self, annotation: ast.AST) -> int | str | None:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(annotation, (ast.Name, ast.Attribute)):
            return self.class_of_name(annotation)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # Cls | None
            return self.class_of_annotation(annotation.left) or self.class_of_annotation(annotation.right)
        if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in ("Optional", "Union"):
            inner = annotation.slice
            for item in inner.elts if isinstance(inner, ast.Tuple) else [inner]:
                found = self.class_of_annotation(item)
                if found is not None:
                    return found
        return None

    def element_class(self, annotation: ast.AST) -> int | str | None:
        """``list[Cls]``, ``Sequence[Cls]``, ``tuple[Cls, ...]``: the class of the elements."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in (
            "list", "List", "Sequence", "Iterable", "tuple", "Tuple", "set", "Set", "frozenset", "Iterator",
        ):
            inner = annotation.slice
            first = inner.elts[0] if isinstance(inner, ast.Tuple) and inner.elts else inner
            return self.class_of_annotation(first)
        return None

    def class_of_expr(self, expr: ast.AST) -> int | str | None:
        """``Cls(...)``, ``cls(...)``, ``Cls.create(...)`` (a factory returning the class), or a typed name."""
        if isinstance(expr, ast.Call):
            func = expr.func
            found = self.class_of_name(func)
            if found is not None:
                return found
            target = self.function_called(func)
            if target is not None:
                return self.returned_class(target)
            return None
        if isinstance(expr, (ast.Name, ast.Attribute)):
            key = self.key_of(expr)
            return self.type_of(key) if key is not None else None
        return None

    def returned_class(self, function: FunctionNode) -> int | str | None:
        if function.returns is not None:
            found = self.class_of_annotation(function.returns)
            if found is not None:
                return found
        for ret in self.returns.get(id(function), []):
            if isinstance(ret, ast.Call):
                found = self.class_of_name(ret.func)
                if found is not None:
                    return found
        return None

    def function_called(self, func: ast.AST) -> FunctionNode | None:
        """The module function or method a call's callee refers to: ``f``, ``self.m``, ``Cls.m``, ``obj.m``
        where ``obj`` is known to be a module class instance."""
        if isinstance(func, ast.Name):
            return self.functions.get(self.name_key(func))
        if isinstance(func, ast.Attribute):
            class_id = self._receiver_class(func.value)
            if isinstance(class_id, int):
                return self.class_methods.get(class_id, {}).get(func.attr)
        return None

    def _receiver_class(self, receiver: ast.AST) -> int | str | None:
        """The class of a method call's receiver: a class named directly, ``self``/``cls``, or a
        variable whose type is known (a module class id, or the qualified name of another module's)."""
        class_id = self.class_of_name(receiver)
        if class_id is None:
            key = self.key_of(receiver)
            if key is not None:
                class_id = self.self_params.get(key) or self.type_of(key)
        return class_id

    def external_callee(self, func: ast.AST) -> str | None:
        """The qualified name of a function or method of another project module that ``func`` calls."""
        if self.view is None:
            return None
        if isinstance(func, ast.Attribute):
            class_id = self._receiver_class(func.value)
            if isinstance(class_id, str):
                return f"{class_id}.{func.attr}"
            if class_id is not None:
                return None
        for qname in self.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else ():
            return qname
        return None

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
                    self.bind(elements[0], Binding("index", value, binding.node))
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
            self._link(key, self.alias_key(binding.expr))
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

    def _link(self, location: Key, source: Key | None) -> None:
        if source is None:
            return
        if source[0] == "c":
            self.flows.append((location, source))
        else:
            self._edges.append((location, source))

    def unsafe_use(self, expr: ast.expr, node: ast.AST, why: str) -> None:
        self._add(self.unsafe, self.alias_key(expr, through_index=True), (node, why))

    # ----- visitors: scopes ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        self.node_scope[id(node)] = self._scope

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports_numpy = self.imports_numpy or alias.name.partition(".")[0] == "numpy"
            if alias.asname is not None:
                self._scope.bind_import(alias.asname, alias.name)
            else:
                first = alias.name.partition(".")[0]
                self._scope.bind_import(first, first)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module if node.module is not None and not node.level else None
        if node.level and self.context.module:  # `from . import mod`, `from ..pkg.mod import f`
            module = resolve_relative(self.context.module, self.context.is_package, node.level, node.module)
        self.imports_numpy = self.imports_numpy or (module or "").partition(".")[0] == "numpy"
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
        self.class_nodes[id(node)] = node
        outer = self._stack[-1] if self._stack else None
        if outer is None:
            self.class_qualnames[id(node)] = node.name
        elif isinstance(outer, ast.ClassDef) and id(outer) in self.class_qualnames:
            self.class_qualnames[id(node)] = f"{self.class_qualnames[id(outer)]}.{node.name}"
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
        self.function_scopes[id(node)] = id(scope)
        args = node.args
        params = [*args.posonlyargs, *args.args]
        every = [*params, *args.kwonlyargs]
        every.extend(a for a in (args.vararg, args.kwarg) if a is not None)
        for param in every:
            scope.bind(param.arg)
            if param.annotation is not None:
                self._add(self.annotations, ("n", id(scope), param.arg), param.annotation)
        if isinstance(enclosing, ast.ClassDef):
            decorators = {attr_name(d) for d in node.decorator_list}
            kind = "static" if "staticmethod" in decorators else "class" if "classmethod" in decorators else "instance"
            self.method_class[id(node)] = id(enclosing)
            self.method_kinds[id(node)] = kind
            if params and kind != "static":
                first: Key = ("n", id(scope), params[0].arg)
                (self.cls_params if kind == "class" else self.self_params)[first] = id(enclosing)

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
                self.scalar_writes.append(ScalarWrite(node, target.value, node.value, "setitem", self._raises > 0))
            elif isinstance(target, ast.Name) and self._scope is self.module_scope:
                # module constants (`_TWO_64 = 1 << 64`); a name bound twice is not a constant
                known = target.id in self.module_constants
                self.module_constants[target.id] = node.value if not known else ast.Constant(None)

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
                self._link(key, self.alias_key(inner))
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

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        """``with pytest.raises(...)`` / ``self.assertRaises(...)``: what is built inside is meant to fail."""
        for item in node.items:
            call = item.context_expr
            if isinstance(call, ast.Call) and (
                attr_name(call.func) in _RAISES_METHODS or dotted(call.func) in ("pytest.raises", "raises")
            ):
                self._raises += 1
                self._raising_withs.add(id(node))
                return

    def leave_With(self, node: ast.With | ast.AsyncWith) -> None:
        if id(node) in self._raising_withs:
            self._raises -= 1

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "value" and node.value.__class__ is ast.Call:
            self.valued_calls.add(id(node.value))

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
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            self.binops.append(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, _ORDERING) for op in node.ops):
            self.unsafe_use(node.left, node, "ordering comparison")
            for comparator in node.comparators:
                self.unsafe_use(comparator, node, "ordering comparison")
        operands = [node.left, *node.comparators]
        for operand in operands:  # `table.dtype != torch.int64`: the consumer insists on int64
            if isinstance(operand, ast.Attribute) and operand.attr == "dtype":
                self._dtype_checks.append((operand.value, [o for o in operands if o is not operand], node))

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
        if node.args or node.keywords:
            self.calls.append(node)
        raising = self._raises > 0
        if receiver is not None and method in _CAST_METHODS:
            self._pending_calls.append((node, self._scope, raising))
            return
        if last is None:  # `kernel[grid](table, tl.int64)`: only the element-type consumer check applies
            if any(attr_name(a) in ELEMENT_TYPE_NAMES for a in (*node.args, *(k.value for k in node.keywords))):
                self._pending_calls.append((node, self._scope, raising))
            return
        if last in _CREATION_LAST_NAMES or last in self.options.buffer_factories or last in NEW_METHODS:
            self._pending_calls.append((node, self._scope, raising))
        elif (
            last in _UNSAFE_FUNCTION_LAST_NAMES
            or last.startswith("c_")
            or last in ("int64", "intp", "longlong", "int_", "int32")
            or last in ("all_gather", "all_gather_into_tensor", "_all_gather_base", "broadcast")
            or (isinstance(func, ast.Name) and (func.id[:1].isupper() or func.id == "cls" or bool(node.keywords)))
            or any(attr_name(a) in ELEMENT_TYPE_NAMES for a in (*node.args, *(k.value for k in node.keywords)))
        ):
            self._pending_calls.append((node, self._scope, raising))

    # ----- after the traversal ------------------------------------------------------------------
    def finalize(self) -> None:
        """Resolve provisional keys, classify import-dependent calls, type attribute keys, build the alias classes."""
        self.finalized = True
        self._rekey(self.canonical)
        for call, scope, raising in self._pending_calls:  # creations first: other calls take them as arguments
            func = call.func
            if isinstance(func, (ast.Name, ast.Attribute)) and not (isinstance(func, ast.Attribute) and func.attr in _CAST_METHODS):
                self._record_creation(call, self.qualified_names(func), scope, raising)
        for call, scope, raising in self._pending_calls:
            self._classify_call(call, scope, raising)
        for value, others, node in self._dtype_checks:
            if any(self.dtype_qname(o) in ("torch.int64", "torch.long", "numpy.int64") for o in others):
                self.unsafe_use(value, node, "a `.dtype` check against int64")
        # attributes of objects known to be module class instances share the class's keys; types come
        # from bindings, which themselves may be such attributes: iterate until nothing changes
        for _ in range(4):
            self._types = {}
            if not self._rekey(self.canonical):
                break
        self._types = {}
        for a, b in self._edges:
            self.uf.union(a, b)
        for key in (*self.bindings, *self.adds, *self.stores, *self.unsafe, *(loc for loc, _ in self.flows)):
            self.uf.find(key)

    def _rekey(self, canonical: Callable[[Key], Key]) -> bool:
        changed = False
        for table in (self.bindings, self.adds, self.stores, self.unsafe, self.annotations):
            rekeyed: dict[Key, list] = {}
            for key, items in table.items():
                new = canonical(key)
                changed = changed or new != key
                rekeyed.setdefault(new, []).extend(items)
            table.clear()
            table.update(rekeyed)
        edges = [(canonical(a), canonical(b)) for a, b in self._edges]
        flows = [(canonical(a), b) for a, b in self.flows]
        changed = changed or edges != self._edges or flows != self.flows
        self._edges, self.flows = edges, flows
        return changed

    def _classify_call(self, node: ast.Call, scope: LiteScope, raising: bool) -> None:
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        receiver = func.value if isinstance(func, ast.Attribute) else None
        args = positional(node)
        if receiver is not None and method in _CAST_METHODS:
            self._record_cast(node, method, receiver, args, scope, raising)
            return
        qnames = self.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        for qname in qnames:
            if qname in UNSAFE_FUNCTIONS:
                for arg in args[:2]:
                    self.unsafe_use(arg, node, f"{qname.rpartition('.')[2]}()")
                break
        self._record_element_type_args(node)
        if id(node) in self.creation_by_id:
            return
        if qnames & _NUMPY_SCALAR_CASTS and args:
            qname = next(iter(qnames & _NUMPY_SCALAR_CASTS))
            self.casts.append(Cast(node, args[0], func, None, qname, scope, raising))
            return
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module == "ctypes" and name.startswith("c_") and args:
                self.ctypes_calls.append(CtypesCall(node, name, args[0], scope, id(node) in self.valued_calls, raising))
                return
            collective = _COLLECTIVES.get(qname)
            if collective is not None and len(args) >= 1:
                source = args[1] if len(args) >= 2 else (keyword(node, "tensor").value if keyword(node, "tensor") else None)
                if collective == "all_gather" and source is not None:
                    self.gathers.append(("all_gather", args[0], source, node))
                elif collective == "into" and source is not None:
                    self._add(self.stores, self.alias_key(args[0]), Binding("seq", source, node))
                return
        self._record_constructor_arguments(node)

    def element_type_argument(self, node: ast.Call) -> ast.expr | None:
        """The signed 64-bit element type a call is given (``f(table, cutlass.Int64)``), if any; numpy's
        and torch's own ``int64`` dtypes are dtypes, not element types."""
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if attr_name(arg) in ELEMENT_TYPE_NAMES and not self.qualified_names(arg) & {"numpy.int64", "torch.int64"}:
                return arg
        return None

    def _record_element_type_args(self, node: ast.Call) -> None:
        """``f(table, cutlass.Int64)``: a consumer that names a signed 64-bit element type insists on int64."""
        element = self.element_type_argument(node)
        if element is not None:
            spelled = dotted(element) or attr_name(element)
            for other in (*node.args, *(k.value for k in node.keywords)):
                if other is not element:
                    self.unsafe_use(other, node, f"passed with `{spelled}`")

    def _record_creation(self, node: ast.Call, qnames: set[str], scope: LiteScope, raising: bool) -> bool:
        qname = next((q for q in qnames if q in CREATION_CALLS), None)
        spec = CREATION_CALLS[qname] if qname is not None else None
        func = node.func
        last = attr_name(func)
        new_method = spec is None and isinstance(func, ast.Attribute) and last in NEW_METHODS
        is_factory = spec is None and not new_method and last is not None and last in self.options.buffer_factories
        if spec is None and not is_factory and not new_method:
            return False
        dtype_kw = keyword(node, "dtype")
        args = positional(node)
        dtype: ast.expr | None = dtype_kw.value if dtype_kw is not None else None
        data = fill = like = None
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
            if qname and qname.endswith("_like"):
                like = args[0] if args else next((k.value for k in node.keywords if k.arg in _LIKE_SOURCE_KEYWORDS), None)
        elif new_method:
            assert isinstance(func, ast.Attribute)
            library, like = "torch", func.value
            qname = f"torch.Tensor.{last}"
            if last == "new_tensor" and args:
                data = args[0]
            elif last == "new_full" and len(args) > 1:
                fill = args[1]
        creation = Creation(
            call=node,
            qname=qname or f"factory:{last}",
            library=library,
            dtype=dtype,
            has_dtype_slot=not any(kw.arg is None for kw in node.keywords),
            data=data,
            fill=fill,
            scope=scope,
            like_source=like,
            in_raises=raising,
        )
        self.creations.append(creation)
        self.creation_by_id[id(node)] = creation
        self.uf.find(creation.key)
        return True

    def _record_cast(self, node: ast.Call, method: str | None, receiver: ast.expr, args: list[ast.expr],
                     scope: LiteScope, raising: bool) -> None:
        if method in ("long", "int", "short"):
            if not node.args and not node.keywords:
                names = {"long": "torch.int64", "int": "torch.int32", "short": "torch.int16"}
                if method != "long":
                    self.narrowed.add(id(receiver))
                self.casts.append(Cast(node, receiver, None, method, names[method], scope, raising))
            return
        dtype_kw = keyword(node, "dtype")
        dtype = dtype_kw.value if dtype_kw is not None else (args[0] if args else None)
        if dtype is None:
            return
        if self.narrow_dtype(dtype):
            self.narrowed.add(id(receiver))  # `torch.tensor(xs).to(torch.uint16)`: data, whatever its name
        qname = self.dtype_qname(dtype)
        if qname:
            self.casts.append(Cast(node, receiver, dtype, method, qname, scope, raising))

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

    def narrow_dtype(self, dtype: ast.expr) -> bool:
        """A dtype narrower than 64 bits or floating (``torch.uint16``, ``np.int32``, ``"float32"``)."""
        text = string_value(dtype)
        if text is not None:
            return classify_string_dtype(text) is DtypeClass.NARROW
        for qname in self.qualified_names(dtype) if isinstance(dtype, (ast.Name, ast.Attribute)) else ():
            classified = classify_qualified_dtype(qname)
            if classified is not None and classified[0] is DtypeClass.NARROW:
                return True
        return False

    def class_fields(self, class_id: int | str) -> list[str]:
        """Fields of a NamedTuple or dataclass in declaration order (what positional arguments bind)."""
        if isinstance(class_id, str):
            return self.view.class_fields(class_id) if self.view is not None else []  # type: ignore[attr-defined]
        node = self.class_nodes.get(class_id)
        if node is None:
            return []
        named_tuple = any("typing.NamedTuple" in self.qualified_names(b) or attr_name(b) == "NamedTuple"
                          for b in node.bases)
        dataclass_ = any(attr_name(d.func if isinstance(d, ast.Call) else d) == "dataclass" for d in node.decorator_list)
        if not (named_tuple or dataclass_):
            return []
        fields = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if "ClassVar" not in dotted(stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript)
                                           else stmt.annotation):
                    fields.append(stmt.target.id)
        return fields

    def _record_constructor_arguments(self, node: ast.Call) -> None:
        """``cls(src_ptrs=x)`` in a classmethod, ``Cls(x=...)`` or, for NamedTuples and dataclasses, ``Cls(x, y)``
        bind the instance's attributes; a field's name is then name evidence for the argument's creation."""
        class_id = self.class_of_name(node.func)
        if class_id is None:
            return
        bound: list[tuple[str, ast.expr, ast.AST]] = [(kw.arg, kw.value, kw) for kw in node.keywords if kw.arg]
        if node.args and not any(isinstance(a, ast.Starred) for a in node.args):
            fields = self.class_fields(class_id)
            bound += [(name, arg, arg) for name, arg in zip(fields, node.args)]
        for name, value, where in bound:
            attr_key: Key = ("a", class_id, name)
            self._add(self.bindings, attr_key, Binding("expr", value, where))
            self._link(attr_key, self.alias_key(value))
            if isinstance(where, ast.expr):  # a positional argument: the field names it
                self._mark_target(value, where, name)


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
    ast.With: FactCollector.visit_With,
    ast.AsyncWith: FactCollector.visit_With,
    ast.Attribute: FactCollector.visit_Attribute,
    ast.ExceptHandler: FactCollector.visit_ExceptHandler,
    ast.Delete: FactCollector.visit_Delete,
    ast.BinOp: FactCollector.visit_BinOp,
    ast.Compare: FactCollector.visit_Compare,
    ast.keyword: FactCollector.visit_keyword,
    ast.Call: FactCollector.visit_Call,
}  # type: ignore[dict-item]
_POST: dict[type, Callable[[FactCollector, ast.AST], None]] = {
    ast.ClassDef: FactCollector.leave_ClassDef,
    ast.With: FactCollector.leave_With,
    ast.AsyncWith: FactCollector.leave_With,
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
