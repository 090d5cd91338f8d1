"""Queries over the collected facts: which values are addresses, which buffers hold them (evidence model v2).

Every value the model knows carries a *kind* and an *origin*:
- kind ``SCALAR`` (one value) or ``SEQ`` (a list, tuple, tensor or array of values);
- origin, strongest first: ``RAW`` (a real address: ``t.data_ptr()``, ``a.ctypes.data``,
  ``ctypes.addressof``, ``ctypes.cast(...).value``, ``__array_interface__["data"][0]``, known
  address APIs, configured pointer functions, and anything address ± integer); ``WRAPPED`` (an
  address reinterpreted as signed on purpose: ``c_int64(p).value``, a module helper that wraps into
  int64 range, ``.view(np.int64)``: it fits int64 by construction); ``NAMED`` (only a name says
  so: a pointer-named getter, a creation's target or data argument); ``INDEX`` (contrary evidence:
  built only from integer constants, lengths, shapes, strides, ``numel``/``element_size``, loop
  counters, ``arange``/``meshgrid``/``indices`` results; pointer − pointer is an offset).

A buffer's value aggregates everything written into its alias class (appends, element stores,
``copy_``, collectives, parameters that a callee writes, its creation's data): one RAW write makes
it pointer-holding; otherwise wrapped writes make it correct as int64 whatever its name; otherwise
names count, unless every written value is an INDEX (contrary evidence overrules names). Evidence
flows through module functions' return values (evaluated with the caller's arguments bound to the
parameters), methods of module classes whose instances the module constructs, dataclass and
NamedTuple fields (by keyword or position) and ``*_like`` copies, which inherit their source's
dtype but are never aliases of it.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from .facts import FactCollector
from .flow import Flow
from .lattice import PROVISIONAL, Evidence, Kind, Location, Origin, Value
from .model import SemanticModel
from .records import Creation, Key
from .syntax import attr_name
from .tensors import TensorKinds
from .transfer import Transfer

__all__ = ["Evidence", "Kind", "Location", "ModuleFacts", "Origin", "Value", "collect"]


class ModuleFacts:
    """Queries over one module's facts. Results are memoised per alias class and per expression.

    The memo and the fixpoint of cyclic queries live here; the transfer functions
    (``self.transfer``), the flow into storage (``self.flow``) and the tensor/array kinds
    (``self.tensors``) are computed by their own objects, which read the memo through this one.
    """

    def __init__(self, model: SemanticModel) -> None:
        self.c = model
        self.view = model.view  # the project index's view of the other modules, or None
        self.options = model.options
        self.names = model.options.names
        self.groups = model.uf.members()
        self.class_memo: dict[tuple[Key, bool], Value | None] = {}
        self._expr_memo: dict[int, Value | None] = {}
        self._in_progress: set[tuple] = set()
        self._cycle_hits: list[object] = []
        self._iteration = 0
        self.querying = False
        self._changed = False
        self._fresh: list[tuple[dict, object]] = []
        self.in_progress_funcs: set[int] = set()
        # frames of the calls being evaluated with their arguments bound: (parameter values, expression
        # memo, class memo); a function's returns are evaluated once per signature of its arguments
        self.bound: list[tuple[dict[Key, Value | None], dict, dict]] = []
        self.return_memo: dict[tuple, Value | None] = {}
        for creation in model.creations:
            target = model.targets.get(id(creation.call))
            if target is not None:
                creation.target_name, creation.target_node = target
        self.locations: dict[Key, list[Key]] = {}  # creation -> roots of the names/attributes it was stored in
        self.stored: dict[Key, list[Key]] = {}  # location root -> creations stored in it
        for location, creation_key in model.flows:
            root = self.root(location)
            if root not in self.locations.setdefault(creation_key, []):
                self.locations[creation_key].append(root)
                self.stored.setdefault(root, []).append(creation_key)
        self.transfer, self.flow, self.tensors = Transfer(self), Flow(self), TensorKinds(self)
        self.passes, self.elements_of, self.copies_of = self.flow.index_flows()

    def release(self) -> None:
        """The analysis of the module is done: drop the helpers, which point back at these facts
        (and the model's), so that the tree and the facts are freed by reference counting as soon
        as their owner drops them, not by a scan of the cyclic collector (see ptrlint/gcpause.py).
        Querying the facts afterwards raises AttributeError."""
        del self.transfer, self.flow, self.tensors
        self.c.release()

    def root(self, key: Key) -> Key:
        return self.c.uf.find(key)

    def value(self, expr: ast.AST | None) -> Value | None:
        if expr is None:
            return None
        if not self.querying:
            return self.query(lambda: self.value(expr))
        depth = len(self.bound)
        memo = self.bound[-1][1] if depth else self._expr_memo
        return self.memoised(("e", id(expr), depth), memo, id(expr), lambda: self.transfer.compute(expr))

    # Values depend on each other in cycles (a buffer's class reads an expression that reads the
    # buffer). Memoised answers are *provisional* when they met an unfinished computation or read a
    # provisional answer; a top-level query re-runs until no provisional answer changes (values only
    # grow: unknown < index < named < wrapped < raw), then its answers are final.
    MAX_ITERATIONS = 8

    def query(self, compute):  # type: ignore[no-untyped-def]
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

    def memoised(self, token: tuple, memo: dict, key: object, compute):  # type: ignore[no-untyped-def]
        entry = memo.get(key)
        if entry is not None and (not entry[2] or entry[1] == self._iteration):
            if entry[2]:
                self._cycle_hits.append(PROVISIONAL)
            return entry[0]
        if token in self._in_progress:  # a cycle: the last round's answer (or unknown) for now
            self._cycle_hits.append(token)
            return entry[0] if entry is not None else None
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

    def kind(self, expr: ast.AST | None) -> Value | None:
        value = self.value(expr)
        return value if value is not None and value.is_pointer else None

    def class_value(self, root: Key, writes_only: bool = False) -> Value | None:
        memo_key = (root, writes_only)
        if not self.querying:
            return self.query(lambda: self.class_value(root, writes_only))
        depth = len(self.bound)
        memo = self.bound[-1][2] if depth else self.class_memo
        return self.memoised(("k", memo_key, depth), memo, memo_key, lambda: self.flow.compute_class_value(root, writes_only))

    def holding(self, creation: Creation) -> Value | None:
        """The value of what a creation makes: RAW, WRAPPED, NAMED (name evidence only) or INDEX."""
        value = self.class_value(self.root(creation.key))
        return replace(value, kind=Kind.SEQ, array=True) if value is not None else None

    def name_evidence(self, creation: Creation) -> Value | None:
        """What the names say: the creation's target, its data argument, or the field it fills."""
        if id(creation.call) in self.c.narrowed or creation.like_source is not None:
            return None  # converted at once to a narrow dtype: data; `*_like` copies need real evidence
        data = creation.data
        if data is not None and isinstance(data, ast.Constant):
            return None  # `torch.tensor(0)`: a scalar argument, not a table
        if creation.target_name is not None and self.names.is_pointer_name(creation.target_name):
            node = creation.target_node or creation.call
            return Value(Kind.SEQ, Origin.NAMED, ((node, f"name `{creation.target_name}` says it holds addresses"),),
                         table_name=self.names.is_table_name(creation.target_name))
        source = _data_name(data)
        if source is not None and self.names.is_pointer_name(source) and (
                self.names.is_table_name(source) or self._holds_list(data)):  # type: ignore[arg-type]
            return Value(Kind.SEQ, Origin.NAMED, ((data, f"data `{source}` is named like an address table"),))  # type: ignore[arg-type]
        return None

    def _holds_list(self, data: ast.expr) -> bool:
        """A singular address name that holds a list (``self.kv_base_addr: list[int] = []``): a table."""
        key = self.c.key_of(_listed(data))
        if key is None:
            return False
        if any(b.how == "expr" and self.tensors.is_python_list(b.expr) for b in self.c.bindings.get(key, [])):
            return True
        for annotation in self.c.annotations.get(key, []):
            base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
            if attr_name(base) in ("list", "List", "Sequence", "MutableSequence"):
                return True
        return False

    def pointer_holding(self, creation: Creation) -> Value | None:
        """Pointer-holding by value or flow (RAW) or by name only (NAMED); None otherwise."""
        value = self.holding(creation)
        return value if value is not None and value.is_pointer else None

    def like_copies(self, creation: Creation) -> list[Creation]:
        """``*_like``/``new_*`` copies of this creation's buffer (they inherit its dtype)."""
        roots = [self.root(creation.key), *self.locations.get(creation.key, [])]
        return [copy for root in roots for copy in self.copies_of.get(root, [])]


def _listed(data: ast.AST | None) -> ast.AST | None:
    """What ``list(...)``/``tuple(...)`` around a creation's data copy: ``list(handle.buffer_ptrs)``."""
    while isinstance(data, ast.Call) and attr_name(data.func) in ("list", "tuple") and data.args:
        data = data.args[0]
    return data


def _data_name(data: ast.AST | None) -> str | None:
    """The name of a creation's data argument (``torch.tensor(self.peer_ptrs)``, ``list(handle.buffer_ptrs)``)."""
    data = _listed(data)
    return attr_name(data) if isinstance(data, (ast.Name, ast.Attribute)) else None


def collect(module: ast.Module, options, context=None) -> ModuleFacts:  # type: ignore[no-untyped-def]
    return ModuleFacts(FactCollector(options, context).run(module))
