"""The value lattice: what an expression holds, as far as addresses go, and how values join.

A :class:`Value` is a pointer value or a pointer-holding sequence (:class:`Kind`), with the
strength of its evidence (:class:`Origin`: an index < a value code outside the project handed out <
a name < a signed reinterpretation < a raw address) and the locations that show it. Values only grow along the order, so the fixpoint in
:class:`~.facts.ModuleFacts` terminates; :func:`strongest` is the join.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum, IntEnum

Evidence = tuple[tuple["ast.AST | Location", str], ...]
MAX_EVIDENCE = 6


@dataclass(frozen=True)
class Location:
    """Evidence in another module of the project (from its summary): 1-based line and column."""

    path: str
    line: int
    column: int


class Kind(Enum):
    SCALAR = "pointer value"
    SEQ = "pointer-holding"


class Origin(IntEnum):
    INDEX = 0
    FOREIGN = 1  # what code outside the project hands out (a binding's result): in that code's own encoding
    NAMED = 2
    WRAPPED = 3
    RAW = 4


@dataclass(frozen=True)
class Value:
    kind: Kind
    origin: Origin = Origin.RAW
    evidence: Evidence = ()
    python_int: bool = True  # a scalar that is a plain Python int (not `np.uint64(...)`, not an array element)
    array: bool = False  # a SEQ that is a tensor or array (its elements are numpy/torch scalars)
    table_name: bool = True  # NAMED only: the name says "table" (plural, or `*_ptr_list`), not one pointer

    @property
    def is_pointer(self) -> bool:
        return self.origin in (Origin.RAW, Origin.NAMED)

    def as_kind(self, kind: Kind) -> Value:
        return self if self.kind is kind else replace(self, kind=kind)

    def with_evidence(self, node: ast.AST, message: str) -> Value:
        return replace(self, evidence=add_evidence(self.evidence, node, message))


PROVISIONAL = object()  # marks a memoised answer read before its cycle was settled
INDEX_SCALAR = Value(Kind.SCALAR, Origin.INDEX)
INDEX_SEQ = Value(Kind.SEQ, Origin.INDEX)
INDEX_ARRAY = Value(Kind.SEQ, Origin.INDEX, python_int=False, array=True)  # `torch.arange(n)`, `np.arange(n)`
FOREIGN_SCALAR = Value(Kind.SCALAR, Origin.FOREIGN)


def strongest(values: Iterable[Value | None]) -> Value | None:
    best: Value | None = None
    for value in values:
        if value is not None and (best is None or value.origin > best.origin):
            best = value
    return best


def add_evidence(evidence: Evidence, node: ast.AST, message: str) -> Evidence:
    return ((node, message), *evidence)[:MAX_EVIDENCE]
