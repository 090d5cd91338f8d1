"""Where Python ints enter a table and where its values leave it again (only Python ints
overflow a signed table), and the element stores of a table filled through a numpy view."""

from __future__ import annotations

import ast
from typing import Iterable

from ..names import PASSTHROUGH_METHODS, VIEW_ATTRIBUTES
from .lattice import Kind
from .records import Creation
from .syntax import is_slice_subscript
from .uses import ConsumersPart, Use, UseKind

class PythonInts(ConsumersPart):
    """Only Python ints overflow a signed table: where they enter one, and where its values leave."""

    def python_int_enters(self, creation: Creation) -> bool:
        """Whether a Python int (not a tensor's bits) is ever written into the creation's buffer."""
        facts, c = self.facts, self.c
        for part in (creation.data, creation.fill):
            if part is not None and self.may_hold_python_ints(part):
                return True
        for root in self.u.roots(creation):
            for member in facts.groups.get(root, [root]):
                if c.adds.get(member):
                    return True
                for binding in c.stores.get(member, []):
                    if binding.how != "seq" and self.python_values(binding.expr):
                        return True
                if facts.passes.get(member):
                    return True  # a module function writes into it: whatever it writes
        return False

    def may_hold_python_ints(self, part: ast.AST) -> bool:
        """A creation's data or fill: Python values unless known to be a tensor's bits or only indices."""
        value = self.facts.value(part)
        if value is None:
            return True  # `torch.tensor(pointers)` of a list ptrlint cannot trace: Python ints, as far as it knows
        if not value.is_pointer:
            return False  # built only from constants, shapes, lengths (contrary evidence), or wrapped on purpose
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def python_values(self, expr: ast.AST) -> bool:
        value = self.facts.value(expr)
        if value is None or not value.is_pointer:
            return False
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def values_leave(self, uses: Iterable[Use]) -> Use | None:
        """The first use that reads values back as Python values or lets them escape."""
        return next((u for u in uses if u.kind in (UseKind.READBACK, UseKind.ESCAPE)), None)

    def element_stores(self, creation: Creation) -> tuple[list[ast.Call], str | None]:
        """The numpy views (``table.numpy()`` calls) through which Python ints are stored into a torch
        table, and why a bit-preserving creation cannot cover the stores (or None). Element stores
        straight into the torch tensor are PTR005's to fix."""
        c = self.c
        sites: list[ast.Call] = []
        for root in self.u.roots(creation):
            for member in self.facts.groups.get(root, [root]):
                for binding in c.stores.get(member, []):
                    if binding.how == "seq" or not self.python_values(binding.expr):
                        continue
                    node = binding.node
                    target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
                    base = target.value if isinstance(target, ast.Subscript) else None
                    chains = [base] if base is not None else []
                    if isinstance(base, (ast.Name, ast.Attribute)):
                        chains += [b.expr for b in c.bindings.get(member, []) if b.how == "expr"]
                    found = next((s for s in map(numpy_view_call, chains) if s is not None), None)
                    if found is not None:
                        if found not in sites:
                            sites.append(found)
                    elif creation.library == "numpy":
                        return sites, f"Python ints are stored into the numpy array on line {node.lineno}"
                    elif any(through_view_attribute(b) for b in chains):
                        return sites, f"Python ints are stored through a buffer view on line {node.lineno}"
        return sites, None



def numpy_view_call(expr: ast.AST | None) -> ast.Call | None:
    """The ``x.numpy()`` call in an alias chain (``buf.numpy()[:n]``, ``view = t.numpy()``)."""
    while expr is not None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "numpy" and not expr.args:
                return expr
            expr = expr.func.value if expr.func.attr in PASSTHROUGH_METHODS else None
        elif isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            expr = expr.value
        else:
            return None
    return None


def through_view_attribute(expr: ast.AST | None) -> bool:
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False
