"""Queries over the collected facts: which expressions are pointer values, which buffers hold them.

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
Results are memoised per alias class.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterator

from ..names import PASSTHROUGH_METHODS, VIEW_ATTRIBUTES
from .facts import Creation, FactCollector, FunctionNode, Key, attr_name, is_slice_subscript, positional
from .names import NamePatterns

Evidence = tuple[tuple[ast.AST, str], ...]
MAX_EVIDENCE = 4


class Kind(Enum):
    SCALAR = "pointer value"
    SEQ = "pointer-holding"


@dataclass(frozen=True)
class Value:
    kind: Kind
    evidence: Evidence = ()


class ModuleFacts:
    """Queries over the collected facts. Results are memoised per key class."""

    def __init__(self, collector: FactCollector) -> None:
        self.c = collector
        self.options = collector.options
        self.groups = collector.uf.members()
        self._class_memo: dict[Key, Value | None] = {}
        self._in_progress: set[Key] = set()
        self._torch_memo: dict[Key, bool] = {}
        self._in_progress_funcs: set[int] = set()
        for creation in collector.creations:
            target = collector.targets.get(id(creation.call))
            if target is not None:
                creation.target_name, creation.target_node = target

    # ----- pointer values ------------------------------------------------------------------------
    def kind(self, expr: ast.AST | None) -> Value | None:
        if expr is None:
            return None
        c = self.c
        if isinstance(expr, ast.Call):
            return self._call_kind(expr)
        if isinstance(expr, ast.Attribute):
            attr = expr.attr
            if attr == "data" and isinstance(expr.value, ast.Attribute) and expr.value.attr == "ctypes":
                return Value(Kind.SCALAR, ((expr, "pointer value: `.ctypes.data`"),))
            if attr == "value" and isinstance(expr.value, ast.Call) and "ctypes.cast" in c.qualified_names(expr.value.func):
                return Value(Kind.SCALAR, ((expr, "pointer value: `ctypes.cast(...).value`"),))
            if attr in VIEW_ATTRIBUTES:
                inner = self.kind(expr.value)
                if inner is not None and inner.kind is Kind.SEQ:
                    return inner
            return self._key_kind(c.key_of(expr))
        if isinstance(expr, ast.Name):
            return self._key_kind(c.key_of(expr))
        if isinstance(expr, ast.Subscript):
            inner_value = expr.value
            if (
                isinstance(inner_value, ast.Subscript)
                and isinstance(inner_value.value, ast.Attribute)
                and inner_value.value.attr in ("__array_interface__", "__cuda_array_interface__")
            ):
                return Value(Kind.SCALAR, ((expr, f"pointer value: `{inner_value.value.attr}[\"data\"][0]`"),))
            inner = self.kind(inner_value)
            if inner is None or inner.kind is not Kind.SEQ:
                return None
            if is_slice_subscript(expr):
                return inner
            return Value(Kind.SCALAR, inner.evidence)
        if isinstance(expr, ast.BinOp):
            left, right = self.kind(expr.left), self.kind(expr.right)
            op = expr.op
            if isinstance(op, ast.Add):
                if left and right and left.kind is right.kind is Kind.SEQ:
                    return Value(Kind.SEQ, left.evidence)  # list concatenation
                if left and left.kind is Kind.SCALAR and right is None:
                    return left
                if right and right.kind is Kind.SCALAR and left is None:
                    return right
                return None
            if isinstance(op, (ast.Sub, ast.BitAnd, ast.BitOr)):
                if left and left.kind is Kind.SCALAR and right is None:
                    if isinstance(op, ast.Sub) and _looks_like_base(expr.right, self.options.names):
                        return None  # `ptr - base`: an offset even when `base` is not traced
                    return left  # pointer - int (or alignment mask) is a pointer; pointer - pointer is not
                return None
            return None
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            for element in expr.elts:
                if isinstance(element, ast.Starred):
                    value = self.kind(element.value)
                    if value is not None and value.kind is Kind.SEQ:
                        return value
                    continue
                value = self.kind(element)
                if value is not None:
                    return Value(Kind.SEQ, value.evidence)
            return None
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            value = self.kind(expr.elt)
            return Value(Kind.SEQ, value.evidence) if value is not None else None
        if isinstance(expr, ast.IfExp):
            return self.kind(expr.body) or self.kind(expr.orelse)
        if isinstance(expr, ast.Await):
            return self.kind(expr.value)
        if isinstance(expr, ast.NamedExpr):
            return self.kind(expr.value)
        return None

    def _call_kind(self, call: ast.Call) -> Value | None:
        c = self.c
        func = call.func
        args = positional(call)
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method == "data_ptr" and not call.args and not call.keywords:
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
        qnames = c.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        last = attr_name(func)
        if "ctypes.addressof" in qnames:
            return Value(Kind.SCALAR, ((call, "pointer value: `ctypes.addressof()`"),))
        funcs = self.options.pointer_functions
        if funcs and (last in self.options.pointer_function_names or qnames & funcs):
            return Value(Kind.SCALAR, ((call, f"pointer value: configured pointer function `{last}()`"),))
        if qnames & {"builtins.int"} and args:
            return self.kind(args[0])
        if qnames & {"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed"} and args:
            inner = self.kind(args[0])
            return inner if inner is not None and inner.kind is Kind.SEQ else None
        if qnames & {"torch.cat", "torch.stack", "numpy.concatenate", "numpy.stack"} and args:
            inner = self.kind(args[0])
            if inner is not None and isinstance(args[0], (ast.List, ast.Tuple)):
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

    def _returned_item_kind(self, call: ast.Call, index: int) -> Value | None:
        """Kind of item ``index`` of the tuple literal(s) a local function returns."""
        target = self._local_function(call.func)
        if target is None or id(target) in self._in_progress_funcs:
            return None
        self._in_progress_funcs.add(id(target))
        try:
            for ret in self.c.returns.get(id(target), []):
                if isinstance(ret, ast.Tuple) and index < len(ret.elts):
                    if any(isinstance(el, ast.Starred) for el in ret.elts[: index + 1]):
                        continue
                    value = self.kind(ret.elts[index])
                    if value is not None:
                        return value
        finally:
            self._in_progress_funcs.discard(id(target))
        return None

    def _local_function(self, func: ast.AST) -> FunctionNode | None:
        c = self.c
        if isinstance(func, ast.Name):
            return c.functions.get(c.name_key(func))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            class_id = c.self_params.get(c.name_key(func.value))
            if class_id is not None:
                return c.class_methods.get(class_id, {}).get(func.attr)
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
                    assert isinstance(binding.expr, ast.Call)
                    value = self._returned_item_kind(binding.expr, binding.index)
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

    def unsafe_uses(self, key: Key) -> list[tuple[ast.AST, str]]:
        root = self.c.uf.find(key)
        uses: list[tuple[ast.AST, str]] = []
        for member in self.groups.get(root, [root]):
            uses.extend(self.c.unsafe.get(member, []))
        return uses

    def is_torch_tensor(self, expr: ast.AST) -> bool:
        """Known to be a torch tensor: torch creation, ``torch.Tensor`` annotation, ``.cpu``/``.gpu`` of a factory."""
        c = self.c
        if isinstance(expr, ast.Attribute) and expr.attr in ("cpu", "gpu"):
            return self._is_factory_value(expr.value)
        if isinstance(expr, ast.Attribute) and expr.attr in ("np", "T", "data"):
            return False
        if isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            return self.is_torch_tensor(expr.value)
        if isinstance(expr, ast.Call):
            creation = c.creation_by_id.get(id(expr))
            if creation is not None:
                return creation.library == "torch"
            if isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                "to", "cuda", "cpu", "clone", "contiguous", "pin_memory", "detach", "view", "reshape", "copy_to_gpu"
            ):
                return self.is_torch_tensor(expr.func.value)
            return False
        key = c.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
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

    def _is_torch_annotation(self, annotation: ast.AST) -> bool:
        return any("torch.Tensor" in self.c.qualified_names(node) for node in _walk_names(annotation))

    def _is_factory_value(self, expr: ast.AST) -> bool:
        c = self.c
        if isinstance(expr, ast.Call):
            return attr_name(expr.func) in self.options.buffer_factories
        key = c.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        if key is None:
            return False
        return any(b.how == "expr" and self._is_factory_value(b.expr) for b in c.bindings.get(key, []))


_BASE_WORDS = re.compile(r"(?:^|_)(?:base|start|begin|origin|lo|low|first)(?:_|$)", re.IGNORECASE)


def _looks_like_base(node: ast.AST, names: NamePatterns) -> bool:
    """An untraced operand named like a base address (``base``, ``pool_start``, ``base_ptr``)."""
    name = attr_name(node)
    return name is not None and (bool(_BASE_WORDS.search(name)) or names.is_pointer_name(name))


def _walk_names(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, (ast.Name, ast.Attribute)):
        yield node
        if isinstance(node, ast.Attribute):
            return
    for child in ast.iter_child_nodes(node):
        yield from _walk_names(child)


def _ev(evidence: Evidence, node: ast.AST, message: str) -> Evidence:
    return ((node, message), *evidence)[:MAX_EVIDENCE]


def collect(module: ast.Module, options) -> ModuleFacts:  # type: ignore[no-untyped-def]
    collector = FactCollector(options)
    collector.run(module)
    return ModuleFacts(collector)
