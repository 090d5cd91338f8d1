"""Arithmetic on addresses: pointer ± integer is a pointer, pointer − pointer an offset, products and
quotients never addresses, and arithmetic with a tensor or an array gives that tensor's bits (torch
wraps a Python int operand into its dtype silently), not Python ints. ``v - 2**64`` wraps on purpose."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import cast

from ...pointer_names import NamePatterns
from ..semantic.model import SemanticModel
from ..semantic.syntax import attr_name
from .fixpoint import Evaluator
from .flow import Flow
from .lattice import INDEX_SCALAR, INDEX_SEQ, Kind, Origin, Value, add_evidence

TWO_64 = 1 << 64
SPINE_FROM = 16  # chains shorter than this recurse as usual
MAX_SPINE = 100_000


class Arithmetic:
    """The transfer function of binary operators (``facts.transfer.arithmetic``)."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator, flow: Flow) -> None:
        self.model, self.evaluator, self.flow, self.names = model, evaluator, flow, model.options.names

    def binop_value(self, expr: ast.BinOp) -> Value | None:
        self._settle_left_spine(expr)
        value = self._binop_value(expr)
        if value is None or value.array:
            return value
        left, right = self.evaluator.value(expr.left), self.evaluator.value(expr.right)
        tensors = self.flow.tensors
        if any(v is not None and v.kind is Kind.SEQ and v.array for v in (left, right)) or any(
            tensors.is_torch_tensor(side) or tensors.is_signed_numpy_array(side) for side in (expr.left, expr.right)
        ):
            # tensor or array arithmetic: the result is a tensor (torch wraps a Python int operand into its
            # dtype silently) or an array, whose elements are its bits, not Python ints
            return replace(value, kind=Kind.SEQ, array=True, python_int=False)
        return value

    def _settle_left_spine(self, expr: ast.BinOp) -> None:
        """A long chain (``a + b + c + ...`` nests to the left, one level a term) is evaluated from its
        innermost operation outward, each value kept by the evaluator, so that evaluating the chain never
        recurses more than one level deep (a 1,000-term sum is valid Python, and must not be E999)."""
        spine: list[ast.BinOp] = []
        node: ast.expr = expr.left
        while isinstance(node, ast.BinOp) and len(spine) < MAX_SPINE:
            spine.append(node)
            node = node.left
        if len(spine) < SPINE_FROM:
            return
        for inner in reversed(spine):
            self.evaluator.value(inner)

    def _binop_value(self, expr: ast.BinOp) -> Value | None:
        left, right = self.evaluator.value(expr.left), self.evaluator.value(expr.right)
        op = expr.op
        seq = Kind.SEQ if Kind.SEQ in (getattr(left, "kind", None), getattr(right, "kind", None)) else Kind.SCALAR
        if isinstance(op, (ast.Mult, ast.FloorDiv, ast.Mod, ast.Div, ast.Pow, ast.LShift, ast.RShift)):
            return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # products and quotients are never addresses
        raw_left = left is not None and left.is_pointer
        raw_right = right is not None and right.is_pointer
        index_left = left is not None and left.origin is Origin.INDEX
        index_right = right is not None and right.origin is Origin.INDEX
        if isinstance(op, ast.Add):
            if raw_left and raw_right:
                if left.kind is right.kind is Kind.SEQ:  # type: ignore[union-attr]
                    return left  # list concatenation
                return None
            if raw_left and not raw_right:
                return left.as_kind(seq)  # type: ignore[union-attr]  # pointer + integer is a pointer
            if raw_right and not raw_left:
                return right.as_kind(seq)  # type: ignore[union-attr]
            if index_left and index_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR
            return None
        if isinstance(op, ast.Sub):
            if raw_left and raw_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # pointer - pointer: an offset
            if raw_left:
                if self.int_constant(expr.right) == TWO_64:
                    evidence = add_evidence(left.evidence, expr, "reinterpreted as signed here")  # type: ignore[union-attr]
                    return Value(Kind.SCALAR, Origin.WRAPPED, evidence)
                if right is None and _looks_like_base(expr.right, self.names):
                    return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR  # `ptr - base`: an offset
                return left.as_kind(seq)  # type: ignore[union-attr]
            if index_left and index_right:
                return INDEX_SEQ if seq is Kind.SEQ else INDEX_SCALAR
            return None
        if isinstance(op, (ast.BitAnd, ast.BitOr)):
            if raw_left and not raw_right:
                return left.as_kind(seq)  # type: ignore[union-attr]  # alignment masks keep an address
            if index_left and index_right:
                return INDEX_SCALAR
        return None

    def int_constant(self, expr: ast.AST, depth: int = 0) -> int | None:
        """The value of an integer constant expression (``1 << 64``, ``2**64``, a module constant)."""
        if depth > 8:
            return None
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return expr.value
        if isinstance(expr, ast.Name):
            bound = self.model.module_constants.get(expr.id)
            scope = self.model.scope_of(expr).resolve(expr.id)
            return (
                self.int_constant(bound, depth + 1) if bound is not None and scope is self.model.module_scope else None
            )
        if isinstance(expr, ast.BinOp):
            a, b = self.int_constant(expr.left, depth + 1), self.int_constant(expr.right, depth + 1)
            if a is None or b is None:
                return None
            try:
                if isinstance(expr.op, ast.LShift) and 0 <= b <= 256:
                    return a << b
                if isinstance(expr.op, ast.Pow) and 0 <= b <= 256:
                    return cast(int, a**b)  # b >= 0: an int
                if isinstance(expr.op, ast.Add):
                    return a + b
                if isinstance(expr.op, ast.Sub):
                    return a - b
                if isinstance(expr.op, ast.Mult):
                    return a * b
            except (OverflowError, ValueError):
                return None
        return None


_BASE_WORDS = re.compile(r"(?:^|_)(?:base|start|begin|origin|lo|low|first)(?:_|$)", re.IGNORECASE)


def _looks_like_base(node: ast.AST, names: NamePatterns) -> bool:
    """An untraced operand named like a base address (``base``, ``pool_start``, ``base_ptr``)."""
    name = attr_name(node)
    return name is not None and (bool(_BASE_WORDS.search(name)) or names.is_pointer_name(name))
