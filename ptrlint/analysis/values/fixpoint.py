"""The memo and the fixpoint of one module's value queries.

Values depend on each other in cycles (a buffer's class reads an expression that reads the buffer).
:class:`Evaluator` memoises the value of every expression and of every alias class, and computes
them with the rules it is given (:meth:`Transfer.compute <.transfer.Transfer.compute>` for an
expression, :meth:`Flow.compute_class_value <.flow.Flow.compute_class_value>` for a class). Memoised
answers are *provisional* when they met an unfinished computation or read a provisional answer; a
top-level query re-runs until no provisional answer changes (values only grow: unknown < index <
named < wrapped < raw), then its answers are final. The rules read the evaluator; the evaluator
knows them only as two functions, so nothing here depends on them.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, TypeVar

from ..semantic.records import Key, NameKey
from .lattice import PROVISIONAL, Value

_T = TypeVar("_T")
_K = TypeVar("_K")
ExpressionRule = Callable[[ast.AST], "Value | None"]
ClassRule = Callable[[Key, bool], "Value | None"]
# a memoised answer: (value, iteration, provisional)
Entry = tuple["Value | None", int, bool]
# (parameter values, expression memo, class memo) of a call evaluated with its arguments bound
Frame = tuple[dict[NameKey, "Value | None"], dict[int, Entry], dict[tuple[Key, bool], Entry]]


class Evaluator:
    MAX_ITERATIONS = 8

    def __init__(self) -> None:
        self._expression_rule: ExpressionRule | None = None
        self._class_rule: ClassRule | None = None
        self.class_memo: dict[tuple[Key, bool], Entry] = {}
        self._expr_memo: dict[int, Entry] = {}
        self._in_progress: set[tuple[object, ...]] = set()
        self._cycle_hits: list[object] = []
        self._iteration = 0
        self.querying = False
        self._changed = False
        self._fresh: list[tuple[dict[Any, tuple[Any, int, bool]], object]] = []
        self.in_progress_funcs: set[int] = set()  # ids of the functions whose returns are being evaluated
        # frames of the calls being evaluated with their arguments bound; a function's returns are
        # evaluated once per signature of its arguments
        self.bound: list[Frame] = []
        self.return_memo: dict[tuple[object, ...], Entry] = {}

    def use(self, expression_rule: ExpressionRule | None, class_rule: ClassRule | None) -> None:
        """The rules that compute a value (None, None: the analysis is done; see ModuleFacts.release)."""
        self._expression_rule, self._class_rule = expression_rule, class_rule

    def value(self, expr: ast.AST | None) -> Value | None:
        if expr is None:
            return None
        if not self.querying:
            return self.query(lambda: self.value(expr))
        depth = len(self.bound)
        memo = self.bound[-1][1] if depth else self._expr_memo
        rule = self._expression_rule
        assert rule is not None
        return self.memoised(("e", id(expr), depth), memo, id(expr), lambda: rule(expr))

    def kind(self, expr: ast.AST | None) -> Value | None:
        """The value of ``expr`` if it holds addresses (RAW, WRAPPED or NAMED), else None."""
        value = self.value(expr)
        return value if value is not None and value.is_pointer else None

    def class_value(self, root: Key, writes_only: bool = False) -> Value | None:
        memo_key = (root, writes_only)
        if not self.querying:
            return self.query(lambda: self.class_value(root, writes_only))
        depth = len(self.bound)
        memo = self.bound[-1][2] if depth else self.class_memo
        rule = self._class_rule
        assert rule is not None
        return self.memoised(("k", memo_key, depth), memo, memo_key, lambda: rule(root, writes_only))

    def query(self, compute: Callable[[], _T]) -> _T:
        self.querying = True
        try:
            for _ in range(self.MAX_ITERATIONS):
                self._iteration += 1
                self._changed = False
                self._fresh = []
                result = compute()
                if not self._changed:
                    break
            for memo, key in self._fresh:  # a fixpoint: what this last round computed is final
                value, iteration, provisional = memo[key]
                if provisional and iteration == self._iteration:
                    memo[key] = (value, iteration, False)
        finally:
            self.querying = False
            self._fresh = []
            self._cycle_hits.clear()
        return result

    def memoised(
        self, token: tuple[object, ...], memo: dict[_K, tuple[_T, int, bool]], key: _K, compute: Callable[[], _T]
    ) -> _T:
        entry = memo.get(key)
        if entry is not None and (not entry[2] or entry[1] == self._iteration):
            if entry[2]:
                self._cycle_hits.append(PROVISIONAL)
            return entry[0]
        if token in self._in_progress:  # a cycle: the last round's answer (or unknown) for now
            self._cycle_hits.append(token)
            return entry[0] if entry is not None else None  # type: ignore[return-value]
        self._in_progress.add(token)
        mark = len(self._cycle_hits)
        try:
            result = compute()
        finally:
            self._in_progress.discard(token)
        provisional = any(hit is PROVISIONAL or hit in self._in_progress for hit in self._cycle_hits[mark:])
        if (entry[0] if entry is not None else None) != result:
            self._changed = self._changed or provisional or entry is not None
        memo[key] = (result, self._iteration, provisional)
        if provisional:
            self._fresh.append((memo, key))
        if not self._in_progress:
            self._cycle_hits.clear()
        elif provisional:
            self._cycle_hits.append(PROVISIONAL)  # whoever reads this answer is provisional too
        return result
