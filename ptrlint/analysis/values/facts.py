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

from ..boundary import ModuleContext
from ..options import AnalysisOptions
from ..semantic.collector import FactCollector
from ..semantic.model import SemanticModel
from ..semantic.records import Creation, Key
from .fixpoint import Evaluator
from .flow import Flow
from .lattice import Evidence, Kind, Location, Origin, Value
from .table_names import name_evidence
from .tensors import TensorKinds
from .transfer import Transfer

__all__ = ["Evidence", "Kind", "Location", "ModuleFacts", "Origin", "Value", "collect"]


class ModuleFacts:
    """The queries of one module, over its semantic model (``self.model``): what rules, consumers and the
    project summaries ask. It assembles the parts, each of which takes only what it reads: the
    tensor kinds (``self.tensors``) read the model; the flow into storage (``self.flow``) and the
    transfer functions (``self.transfer``) read the model and the evaluator (:mod:`.fixpoint`), whose
    memo and fixpoint compute with them. None of the parts knows this object."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.view = model.view  # the project index's view of the other modules, or None
        self.options = model.options
        self.names = model.options.names
        self.evaluator = Evaluator()
        self.tensors = TensorKinds(model)
        self.flow = Flow(model, self.evaluator, self.tensors)
        self.transfer = Transfer(model, self.evaluator, self.flow)
        self.evaluator.use(self.transfer.compute, self.flow.compute_class_value)
        self.groups, self.locations, self.stored = self.flow.groups, self.flow.locations, self.flow.stored
        self.passes, self.elements_of, self.copies_of = self.flow.passes, self.flow.elements_of, self.flow.copies_of

    def release(self) -> None:
        """The analysis of the module is done: drop the parts and the evaluator's rules (the evaluator
        and the parts point at each other), so that the tree and the facts are freed by reference
        counting as soon as their owner drops them, not by a scan of the cyclic collector (see
        ptrlint/gcpause.py). Querying the facts afterwards raises AttributeError."""
        self.evaluator.use(None, None)
        del self.flow.dicts  # it reads entries through the flow, which holds it
        del self.transfer, self.flow, self.tensors
        self.model.release()

    def root(self, key: Key) -> Key:
        return self.model.alias_classes.find(key)

    def value(self, expr: ast.AST | None) -> Value | None:
        return self.evaluator.value(expr)

    def kind(self, expr: ast.AST | None) -> Value | None:
        return self.evaluator.kind(expr)

    def class_value(self, root: Key, writes_only: bool = False) -> Value | None:
        return self.evaluator.class_value(root, writes_only)

    def holding(self, creation: Creation) -> Value | None:
        """The value of what a creation makes: RAW, WRAPPED, NAMED (name evidence only) or INDEX."""
        return self.flow.holding(creation)

    def name_evidence(self, creation: Creation) -> Value | None:
        """What the names say: the creation's target, its data argument, or the field it fills."""
        return name_evidence(self.model, self.tensors, creation)

    def pointer_holding(self, creation: Creation) -> Value | None:
        """Pointer-holding by value or flow (RAW) or by name only (NAMED); None otherwise."""
        value = self.holding(creation)
        return value if value is not None and value.is_pointer else None

    def like_copies(self, creation: Creation) -> list[Creation]:
        """``*_like``/``new_*`` copies of this creation's buffer (they inherit its dtype)."""
        roots = [self.root(creation.key), *self.locations.get(creation.key, [])]
        return [copy for root in roots for copy in self.copies_of.get(root, [])]


def collect(module: ast.Module, options: AnalysisOptions, context: ModuleContext | None = None) -> ModuleFacts:
    return ModuleFacts(FactCollector(options, context).run(module))
