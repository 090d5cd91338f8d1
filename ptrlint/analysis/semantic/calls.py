"""Call classification, after the traversal (a call's meaning depends on the module's imports):
creation calls and configured buffer factories, casts, numpy scalar casts, ctypes wrappers,
collectives, element-type arguments and constructor arguments that bind instance attributes."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, cast

from ...names import (
    CAST_METHODS,
    COLLECTIVES,
    CREATION_CALLS,
    FILL_VALUE_INDEX,
    NEW_METHODS,
    NUMPY_SCALAR_CASTS,
    RANGE_CALLS,
    DtypeClass,
    classify_qualified_dtype,
    classify_string_dtype,
)
from .factories import factory_signature
from .records import Binding, Cast, Creation, CtypesCall, FactorySignature, Key, MemberKey, NameKey
from .scopes import LiteScope
from .syntax import LIKE_SOURCE_KEYWORDS, attr_name, bind_arguments, keyword, positional, string_value

if TYPE_CHECKING:
    from .model import SemanticModel


class CallClassifier:
    """Classifies the calls the traversal set aside, recording into the model."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def classify(self, node: ast.Call, scope: LiteScope, raising: bool) -> None:
        func = node.func
        method = func.attr if isinstance(func, ast.Attribute) else None
        receiver = func.value if isinstance(func, ast.Attribute) else None
        args = positional(node)
        if receiver is not None and method in CAST_METHODS:
            self.record_cast(node, method, receiver, args, scope, raising)
            return
        qnames = self.model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        if id(node) in self.model.creation_by_id:
            return
        if qnames & NUMPY_SCALAR_CASTS and args:
            qname = next(iter(qnames & NUMPY_SCALAR_CASTS))
            self.model.casts.append(Cast(node, args[0], func, None, qname, scope, raising))
            return
        for qname in qnames:
            module, _, name = qname.rpartition(".")
            if module == "ctypes" and name.startswith("c_") and args:
                self.model.ctypes_calls.append(
                    CtypesCall(node, name, args[0], scope, id(node) in self.model.valued_calls, raising)
                )
                return
            flow = COLLECTIVES[name].flow if module == "torch.distributed" and name in COLLECTIVES else None
            if flow is not None and len(args) >= 1:
                source = (
                    args[1]
                    if len(args) >= 2
                    else (cast(ast.keyword, keyword(node, "tensor")).value if keyword(node, "tensor") else None)
                )
                if flow == "each" and source is not None:
                    self.model.gathers.append(("all_gather", args[0], source, node))
                elif flow == "whole" and source is not None:
                    self.model.add(self.model.stores, self.model.alias_key(args[0]), Binding("seq", source, node))
                return
        self.record_constructor_arguments(node)

    def record_creation(self, node: ast.Call, qnames: set[str], scope: LiteScope, raising: bool) -> bool:
        qname = next((q for q in qnames if q in CREATION_CALLS), None)
        spec = CREATION_CALLS[qname] if qname is not None else None
        func = node.func
        last = attr_name(func)
        new_method = spec is None and isinstance(func, ast.Attribute) and last in NEW_METHODS
        is_factory = (
            spec is None and not new_method and last is not None and last in self.model.options.buffer_factories
        )
        if spec is None and not is_factory and not new_method:
            return False
        args = positional(node)
        ranged = qname in RANGE_CALLS
        if ranged and (len(args) < 2 or any(isinstance(a, ast.Starred) for a in args[:2])):
            return False  # `np.arange(n)`: counts from zero, an index
        dtype_kw = keyword(node, "dtype")
        dtype: ast.expr | None = dtype_kw.value if dtype_kw is not None else None
        kwargs = [kw.value for kw in node.keywords if kw.arg is None]
        dtype_kwargs: ast.Name | None = None
        has_slot = not kwargs
        if dtype is None and len(kwargs) == 1 and isinstance(kwargs[0], ast.Name):
            known, entry = self.kwargs_entry(kwargs[0], "dtype")
            if entry is not None:  # `i64 = dict(dtype=torch.int64, device=d)` ... `torch.tensor(xs, **i64)`
                dtype, dtype_kwargs = entry, kwargs[0]
            has_slot = known and entry is None  # a dict that never carries a dtype: one can be added
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
                like = (
                    args[0] if args else next((k.value for k in node.keywords if k.arg in LIKE_SOURCE_KEYWORDS), None)
                )
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
            has_dtype_slot=has_slot,
            data=data,
            fill=fill,
            scope=scope,
            like_source=like,
            in_raises=raising,
            dtype_kwargs=dtype_kwargs,
            stop=args[1] if ranged else None,
        )
        self.model.creations.append(creation)
        self.model.creation_by_id[id(node)] = creation
        self.model.alias_classes.find(creation.key)
        return True

    def kwargs_entry(self, name: ast.Name, entry: str) -> tuple[bool, ast.expr | None]:
        """What the dict passed as ``**name`` holds under ``entry``: (whether every binding of the name is
        a dict display or ``dict(...)`` whose entries are all known, the one expression bound to the entry)."""
        model = self.model
        key = model.key_of(name)
        bindings = model.bindings.get(key, []) if key is not None else []
        if (
            not bindings or model.adds.get(cast(Key, key)) or model.stores.get(cast(Key, key))
        ):  # bindings: key is not None
            return False, None
        for binding in bindings:
            value = binding.expr
            if binding.how != "expr":
                return False, None
            if isinstance(value, ast.Dict):
                if any(k is None or string_value(k) is None for k in value.keys):
                    return False, None  # `{**base, ...}` or a computed key
            elif not (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "dict"
                and not value.args
                and all(kw.arg for kw in value.keywords)
            ):
                return False, None
        entries = model.bindings.get(model.attribute_key(key, f"[{entry}]"), [])  # type: ignore[arg-type]
        exprs = [b.expr for b in entries if b.how == "expr"]
        if len(entries) != 1 or len(exprs) != 1:
            return not entries, None
        return True, exprs[0]

    def record_cast(
        self,
        node: ast.Call,
        method: str | None,
        receiver: ast.expr,
        args: list[ast.expr],
        scope: LiteScope,
        raising: bool,
    ) -> None:
        if method in ("long", "int", "short"):
            if not node.args and not node.keywords:
                names = {"long": "torch.int64", "int": "torch.int32", "short": "torch.int16"}
                if method != "long":
                    self.model.narrowed.add(id(receiver))
                self.model.casts.append(Cast(node, receiver, None, method, names[method], scope, raising))
            return
        dtype_kw = keyword(node, "dtype")
        dtype = dtype_kw.value if dtype_kw is not None else (args[0] if args else None)
        if dtype is None:
            return
        if self.model.types.narrow_dtype(dtype):
            self.model.narrowed.add(id(receiver))  # `torch.tensor(xs).to(torch.uint16)`: data, whatever its name
        qname = self.model.types.dtype_qname(dtype)
        if qname:
            self.model.casts.append(Cast(node, receiver, dtype, method, qname, scope, raising))

    def record_constructor_arguments(self, node: ast.Call) -> None:
        """``cls(src_ptrs=x)`` in a classmethod, ``Cls(x=...)`` or, for NamedTuples and dataclasses, ``Cls(x, y)``
        bind the instance's attributes; a field's name is then name evidence for the argument's creation."""
        class_id = self.model.types.class_of_name(node.func)
        if class_id is None:
            return
        bound: list[tuple[str, ast.expr, ast.expr | ast.keyword]] = [
            (kw.arg, kw.value, kw) for kw in node.keywords if kw.arg
        ]
        if node.args and not any(isinstance(a, ast.Starred) for a in node.args):
            fields = self.model.types.class_fields(class_id)
            bound += [(name, arg, arg) for name, arg in zip(fields, node.args)]
        for name, value, where in bound:
            attr_key: Key = MemberKey(class_id, name)
            self.model.add(self.model.bindings, attr_key, Binding("expr", value, where))
            self.model.link(attr_key, self.model.alias_key(value))
            if isinstance(where, ast.expr):  # a positional argument: the field names it
                self.model.mark_target(value, where, name)

    def record_factory_calls(self) -> None:
        """Calls of factories (this module's, or through the project view another module's): the
        call site is the creation, with the caller's data and dtype (analysis/semantic/factories.py)."""
        model = self.model
        local: dict[int, FactorySignature | None] = {}
        external: str | None = None
        names = {key.name for key in model.functions} | {n for methods in model.class_methods.values() for n in methods}
        for call in model.calls:
            configured = model.creation_by_id.get(id(call))  # a `buffer-factories` call: the project may define it
            if configured is not None and configured.library is not None:
                self.record_patched_call(configured)
                continue
            if not isinstance(call.func, (ast.Name, ast.Attribute)):
                continue
            function = model.types.function_called(call.func) if attr_name(call.func) in names else None
            signature: FactorySignature | None = None
            if function is not None:
                if id(function) not in local:
                    found = factory_signature(model, function)
                    local[id(function)] = found[0] if found is not None else None
                signature = local[id(function)]
            elif model.view is not None and call.args and passes_dtype(call):  # another module's: asked of the view
                external = model.types.external_callee(call.func)
                if external is not None and model.view.is_project_symbol(external):
                    signature = model.view.factory(external, model.options)
            if signature is not None and configured is not None:
                configured.substitutes = signature.substitution is not None
                configured.factory = None if function is not None else external
            elif signature is not None:
                self.record_factory_call(call, signature, None if function is not None else external)

    def record_patched_call(self, creation: Creation) -> None:
        """``torch.empty(n, dtype=torch.uint64)`` where another module of the project monkey-patched
        ``torch.empty`` with a function that substitutes a signed dtype: that function makes it."""
        model = self.model
        if model.view is None or creation.dtype is None or creation.qname.startswith("factory:"):
            return
        if not unsigned64(model, creation.dtype):  # only a request for uint64 is what such a wrapper replaces
            return
        patcher = model.view.patched(creation.qname)
        if patcher is None or patcher.rpartition(".")[0] == model.context.module:
            return  # this module's own patch: analysis/values/substitutions.py reads its calls directly
        signature = model.view.factory(patcher, model.options)
        if signature is not None and signature.substitution is not None:
            creation.substitutes, creation.factory = True, patcher

    def record_closure_arguments(self) -> None:
        """The arguments of calls of a function nested in another (a closure, a local helper) bind its
        parameters: ``def add(addr): bases.append(addr)`` ... ``add(t.data_ptr())``. Each call's argument
        is one of the values a parameter takes; they are alternatives, never aliases of one another."""
        model = self.model
        for call in model.calls:
            if not isinstance(call.func, ast.Name):
                continue
            key = model.name_key(call.func)
            function = model.functions.get(key) if isinstance(key, NameKey) else None
            if function is None or model.scopes[key.scope].kind != "function":
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue  # `f(*xs)`: which parameter takes which value is not known
            scope_id = model.function_scopes[id(function)]
            for param, arg in bind_arguments(function, call):
                model.add(model.bindings, NameKey(scope_id, param), Binding("each", arg, call))

    def record_factory_call(self, call: ast.Call, signature: FactorySignature, external: str | None) -> None:
        args = positional(call)
        data: ast.expr | None = None
        if signature.data is not None:
            data = args[signature.data] if len(args) > signature.data else None
            if data is None and keyword(call, signature.data_name or "") is not None:
                data = keyword(call, signature.data_name or "").value  # type: ignore[union-attr]
            if data is None:
                return  # nothing passed to build from
        dtype: ast.expr | None = None
        if signature.dtype is not None and len(args) > signature.dtype:
            dtype = args[signature.dtype]
        elif keyword(call, signature.dtype_name) is not None:
            dtype = keyword(call, signature.dtype_name).value  # type: ignore[union-attr]
        if dtype is None and not (signature.default_signed and signature.dtype_name == "dtype"):
            return  # a default that is not signed (or no `dtype=` keyword to add)
        creation = Creation(
            call=call,
            qname=f"factory:{signature.name}",
            library=signature.library,
            dtype=dtype,
            has_dtype_slot=not any(kw.arg is None for kw in call.keywords),
            data=data,
            fill=None,
            scope=self.model.scope_of(_first_name(call.func)),
            implicit_signed=dtype is None,
            factory=external,
            substitutes=signature.substitution is not None,
            view_library=signature.returns,
        )
        self.model.creations.append(creation)
        self.model.creation_by_id[id(call)] = creation
        self.model.alias_classes.find(creation.key)


def unsigned64(model: SemanticModel, dtype: ast.expr) -> bool:
    """``torch.uint64``, ``np.uint64``, ``"uint64"`` (resolved through the module's imports)."""
    text = string_value(dtype)
    if text is not None:
        return classify_string_dtype(text) is DtypeClass.UNSIGNED64
    qnames = model.qualified_names(dtype) if isinstance(dtype, (ast.Name, ast.Attribute)) else set()
    return any((classify_qualified_dtype(q) or (None,))[0] is DtypeClass.UNSIGNED64 for q in qnames)


def _first_name(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


_DTYPE_WORDS = frozenset(
    {
        "int64",
        "uint64",
        "long",
        "int32",
        "uint32",
        "int",
        "intp",
        "uintp",
        "longlong",
        "ulonglong",
        "int16",
        "uint16",
        "int8",
        "uint8",
        "float32",
        "float64",
        "float16",
        "bfloat16",
        "float",
        "double",
        "half",
        "bool",
    }
)


def passes_dtype(call: ast.Call) -> bool:
    """The call passes a dtype (``dtype=...``, or a positional ``torch.int64`` / ``"int64"``): a call
    of a factory builds with the caller's dtype, so only such calls are asked of other modules."""
    if any(kw.arg == "dtype" for kw in call.keywords):
        return True
    for arg in call.args:
        if isinstance(arg, ast.Attribute) and arg.attr in _DTYPE_WORDS:  # `torch.int64`, `np.uint64`
            return True
        if isinstance(arg, ast.Name) and arg.id in _DTYPE_WORDS - {"int", "float", "bool"}:  # `from torch import int64`
            return True
        if string_value(arg) in _DTYPE_WORDS:  # numpy's `"int64"`
            return True
    return False
