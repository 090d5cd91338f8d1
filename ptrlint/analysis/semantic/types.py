"""Types: which module class an expression's value is an instance of, which function a call
reaches, and which dtype a dtype expression names. Queries over the semantic model, memoised in
``model.type_memo`` once the traversal has settled the keys."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Protocol

from ...names import (
    ELEMENT_TYPE_NAMES,
    SIGNED_DTYPE_QNAMES,
    SIGNED_DTYPE_STRINGS,
    DtypeClass,
    classify_qualified_dtype,
    classify_string_dtype,
)
from .records import FunctionNode, Key, NameKey, PendingNameKey
from .syntax import annotation_expr, attr_name, ctypes_fields, dotted, string_value

if TYPE_CHECKING:
    from ..boundary import ModuleContext, ProjectLookup
    from .records import Binding


class TypedTables(Protocol):
    """What type questions read of the semantic model (:class:`~.model.SemanticModel`, which asks
    them while it settles its keys: the model depends on this module, not the other way)."""

    context: ModuleContext
    view: ProjectLookup | None
    type_memo: dict[Key, int | str | None] | None
    bindings: dict[Key, list[Binding]]
    annotations: dict[Key, list[ast.expr]]
    returns: dict[int, list[ast.expr]]
    functions: dict[NameKey, FunctionNode]
    self_params: dict[Key, int]
    cls_params: dict[Key, int]
    class_names: dict[Key, int]
    class_methods: dict[int, dict[str, FunctionNode]]
    class_nodes: dict[int, ast.ClassDef]
    class_qualnames: dict[int, str]

    def key_of(self, node: ast.AST) -> Key | None: ...

    def name_key(self, node: ast.Name) -> NameKey | PendingNameKey: ...

    def qualified_names(self, node: ast.AST) -> set[str]: ...


class TypeResolver:
    """Type questions over one semantic model (``model.types``)."""

    def __init__(self, model: TypedTables) -> None:
        self.model = model

    def type_of(self, key: Key) -> int | str | None:
        """The module class whose instance ``key`` holds, from an annotation or a constructor/factory binding."""
        types = self.model.type_memo
        if types is None:
            return None
        if key in types:
            return types[key]
        types[key] = None  # a cycle resolves to "unknown"
        found: int | str | None = self.model.self_params.get(key)
        if found is None:
            for annotation in self.model.annotations.get(key, []):
                found = self.class_of_annotation(annotation)
                if found is not None:
                    break
        if found is None:
            for binding in self.model.bindings.get(key, []):
                if binding.how == "expr":
                    found = self.class_of_expr(binding.expr)
                elif binding.how == "elem" and isinstance(binding.expr, (ast.Name, ast.Attribute)):
                    source = self.model.key_of(binding.expr)  # `for r in regions` with `regions: list[Region]`
                    for annotation in self.model.annotations.get(source, []) if source is not None else []:
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
            key = self.model.name_key(node)
            found = self.model.class_names.get(key) or self.model.cls_params.get(key)
            if found is not None:
                return found
        elif not isinstance(node, ast.Attribute):
            return None
        if self.model.view is not None:
            # an imported CamelCase name (`Region`, `addresses.Region`) is taken as the class it names; what
            # the project says about it (attributes, methods, writes into it) comes from the summaries
            for qname in self.model.qualified_names(node):
                last = qname.rpartition(".")[2]
                if last[:1].isupper() and not qname.startswith(("builtins.", "typing.")):
                    return qname
        return None

    def class_qualname(self, class_id: int | str) -> str | None:
        """The qualified name of a class (``pkg.mod.Cls``) as other modules spell it."""
        if isinstance(class_id, str):
            return class_id
        local = self.model.class_qualnames.get(class_id)
        if local is None or not self.model.context.module:
            return None
        return f"{self.model.context.module}.{local}"

    def class_of_annotation(self, annotation: ast.AST) -> int | str | None:
        parsed = annotation_expr(annotation)
        if parsed is None:
            return None
        annotation = parsed
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
        parsed = annotation_expr(annotation)
        if parsed is None:
            return None
        annotation = parsed
        if isinstance(annotation, ast.Subscript) and attr_name(annotation.value) in (
            "list",
            "List",
            "Sequence",
            "Iterable",
            "tuple",
            "Tuple",
            "set",
            "Set",
            "frozenset",
            "Iterator",
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
            key = self.model.key_of(expr)
            return self.type_of(key) if key is not None else None
        return None

    def returned_class(self, function: FunctionNode) -> int | str | None:
        if function.returns is not None:
            found = self.class_of_annotation(function.returns)
            if found is not None:
                return found
        for ret in self.model.returns.get(id(function), []):
            if isinstance(ret, ast.Call):
                found = self.class_of_name(ret.func)
                if found is not None:
                    return found
        return None

    def function_called(self, func: ast.AST) -> FunctionNode | None:
        """The module function or method a call's callee refers to: ``f``, ``self.m``, ``Cls.m``, ``obj.m``
        where ``obj`` is known to be a module class instance."""
        if isinstance(func, ast.Name):
            key = self.model.name_key(func)
            return self.model.functions.get(key) if isinstance(key, NameKey) else None
        if isinstance(func, ast.Attribute):
            class_id = self.receiver_class(func.value)
            if isinstance(class_id, int):
                return self.model.class_methods.get(class_id, {}).get(func.attr)
        return None

    def receiver_class(self, receiver: ast.AST) -> int | str | None:
        """The class of a method call's receiver: a class named directly, ``self``/``cls``, or a
        variable whose type is known (a module class id, or the qualified name of another module's)."""
        class_id = self.class_of_name(receiver)
        if class_id is None:
            key = self.model.key_of(receiver)
            if key is not None:
                class_id = self.model.self_params.get(key) or self.type_of(key)
        return class_id

    def external_callee(self, func: ast.AST) -> str | None:
        """The qualified name of a function or method of another project module that ``func`` calls."""
        if self.model.view is None:
            return None
        if isinstance(func, ast.Attribute):
            class_id = self.receiver_class(func.value)
            if isinstance(class_id, str):
                return f"{class_id}.{func.attr}"
            if class_id is not None:
                return None
        for qname in self.model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else ():
            return qname
        return None

    def class_fields(self, class_id: int | str) -> list[str]:
        """Fields of a NamedTuple, dataclass or ctypes Structure in declaration order (what positional
        arguments bind)."""
        if isinstance(class_id, str):
            return self.model.view.class_fields(class_id) if self.model.view is not None else []
        node = self.model.class_nodes.get(class_id)
        if node is None:
            return []
        named_tuple = any(
            "typing.NamedTuple" in self.model.qualified_names(b) or attr_name(b) == "NamedTuple" for b in node.bases
        )
        dataclass_ = any(
            attr_name(d.func if isinstance(d, ast.Call) else d) == "dataclass" for d in node.decorator_list
        )
        if not (named_tuple or dataclass_):
            structure = any(
                q.startswith("ctypes.") and q.endswith(("Structure", "Union"))
                for b in node.bases
                for q in self.model.qualified_names(b)
            )
            return list(ctypes_fields(node)) if structure else []  # ctypes: `_fields_` in order
        fields = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if "ClassVar" not in dotted(
                    stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation
                ):
                    fields.append(stmt.target.id)
        return fields

    def element_type_argument(self, node: ast.Call) -> ast.expr | None:
        """The signed 64-bit element type a call is given (``f(table, cutlass.Int64)``), if any; numpy's
        and torch's own ``int64`` dtypes are dtypes, not element types."""
        for arg in (*node.args, *(k.value for k in node.keywords)):
            if attr_name(arg) in ELEMENT_TYPE_NAMES and not self.model.qualified_names(arg) & {
                "numpy.int64",
                "torch.int64",
            }:
                return arg
        return None

    def dtype_qname(self, dtype: ast.expr) -> str | None:
        """Qualified name of a signed integer dtype expression, else None."""
        text = string_value(dtype)
        if text is not None:
            return SIGNED_DTYPE_STRINGS.get(text)
        if isinstance(dtype, (ast.Name, ast.Attribute)):
            for qname in self.model.qualified_names(dtype):
                if qname in SIGNED_DTYPE_QNAMES:
                    return qname
        return None

    def narrow_dtype(self, dtype: ast.expr) -> bool:
        """A dtype narrower than 64 bits or floating (``torch.uint16``, ``np.int32``, ``"float32"``)."""
        text = string_value(dtype)
        if text is not None:
            return classify_string_dtype(text) is DtypeClass.NARROW
        for qname in self.model.qualified_names(dtype) if isinstance(dtype, (ast.Name, ast.Attribute)) else ():
            classified = classify_qualified_dtype(qname)
            if classified is not None and classified[0] is DtypeClass.NARROW:
                return True
        return False
