"""Flow: the value of a storage location (an alias class of names, attributes and creations)
from everything that reaches it: bindings, appends, element stores and copies, parameters (with
the callers' arguments bound), returns (:mod:`.function_results`), collectives, the names a creation
is stored in and, through the project index, what other modules write into this module's classes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import cast

from ...addresses import tuple_address_position
from ..semantic.model import SemanticModel
from ..semantic.records import Binding, Creation, CreationKey, FunctionNode, Key, MemberKey, NameKey
from ..semantic.syntax import attr_name
from .dicts import Dicts
from .fixpoint import Evaluator
from .function_results import FunctionResults
from .lattice import INDEX_SCALAR, INDEX_SEQ, Kind, Origin, Value, strongest
from .parameters import Parameters
from .table_names import name_evidence
from .tensors import TensorKinds


@dataclass(frozen=True)
class ExternalFunction:
    """A function of another project module that writes pointer values into some parameters."""

    qname: str
    writes: dict[str, Value]


class Flow:
    """Values of storage locations of one module (``facts.flow``), computed for the evaluator."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator, tensors: TensorKinds) -> None:
        self.model, self.evaluator, self.tensors = model, evaluator, tensors
        self.view = model.view
        self.parameters = Parameters(model)
        self.results = FunctionResults(model, evaluator)
        self.dicts = Dicts(model, evaluator, self)
        self.groups = model.alias_classes.members()
        for creation in model.creations:
            target = model.targets.get(id(creation.call))
            if target is not None:
                creation.target_name, creation.target_node = target
        self.locations: dict[CreationKey, list[Key]] = {}  # creation -> roots of the names/attributes it was stored in
        self.stored: dict[Key, list[CreationKey]] = {}  # location root -> creations stored in it
        for location, creation_key in model.flows:
            root = self.root(location)
            if root not in self.locations.setdefault(creation_key, []):
                self.locations[creation_key].append(root)
                self.stored.setdefault(root, []).append(creation_key)
        self.passes, self.elements_of, self.copies_of = self.index_flows()

    def root(self, key: Key) -> Key:
        return self.model.alias_classes.find(key)

    def holding(self, creation: Creation) -> Value | None:
        """The value of what a creation makes: RAW, WRAPPED, NAMED (name evidence only) or INDEX."""
        value = self.evaluator.class_value(self.root(creation.key))
        return replace(value, kind=Kind.SEQ, array=True) if value is not None else None

    def index_flows(
        self,
    ) -> tuple[
        dict[Key, list[tuple[FunctionNode | ExternalFunction, str, ast.Call]]],
        dict[Key, list[Key]],
        dict[Key, list[Creation]],
    ]:
        model = self.model
        passes: dict[Key, list[tuple[FunctionNode | ExternalFunction, str, ast.Call]]] = {}
        target: FunctionNode | ExternalFunction | None
        names = {n[2] for n in model.functions} | {m for methods in model.class_methods.values() for m in methods}
        for call in model.calls:
            target = model.types.function_called(call.func) if attr_name(call.func) in names else None
            if target is not None:
                pairs = self.results.bind_arguments(target, call)
            elif self.view is not None:
                external = model.types.external_callee(call.func)
                found = self.view.param_writes(external) if external else None
                if found is None:
                    continue
                params, writes = found
                pairs = [(p, a) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)]
                pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in params]
                target = ExternalFunction(cast(str, external), writes)  # found: external is a name
            else:
                continue
            for param, arg in pairs:
                key = model.alias_key(arg)
                if key is not None:
                    passes.setdefault(self.root(key), []).append((target, param, call))
        containers: dict[Key, list[Key]] = {}  # an element's class -> the lists that hold it
        for key, adds in model.adds.items():
            for binding in adds:
                if binding.how == "expr":
                    element = model.alias_key(binding.expr)
                    if element is not None:
                        containers.setdefault(self.root(element), []).append(self.root(key))
        for key, bindings in model.bindings.items():
            for binding in bindings:
                if binding.how == "expr" and isinstance(binding.expr, (ast.List, ast.ListComp, ast.Tuple)):
                    items = [binding.expr.elt] if isinstance(binding.expr, ast.ListComp) else binding.expr.elts
                    for item in items:
                        element = model.alias_key(item)
                        if element is not None:
                            containers.setdefault(self.root(element), []).append(self.root(key))
        copies: dict[Key, list[Creation]] = {}
        for creation in model.creations:
            if creation.like_source is not None:
                source = model.alias_key(creation.like_source)
                if source is not None:
                    copies.setdefault(self.root(source), []).append(creation)
        return passes, containers, copies

    def key_value(self, key: Key | None) -> Value | None:
        if key is None:
            return None
        for bound, _, _ in reversed(self.evaluator.bound):
            if key in bound:
                return bound[key]
        return self.evaluator.class_value(self.root(key))

    def contributions(self, root: Key, writes_only: bool = False) -> Iterator[tuple[Value | None, bool | None]]:
        """Every value written into (or bound to) the class: ``(value, is_write)``; ``is_write`` is None for
        what the names of a creation say."""
        model = self.model
        members = self.groups.get(root, [root])
        for key in members:
            yield from self.statement_writes(key)
            yield from self.call_writes(key)
            creation = model.creation_by_id.get(key.call) if isinstance(key, CreationKey) else None
            if creation is not None:
                for part in creation.parts:
                    value = self.evaluator.value(part)
                    yield (value.as_kind(Kind.SEQ) if value is not None else None), True
                for location in self.locations.get(creation.key, []):  # written through the names it was stored in
                    yield from self.contributions(location, writes_only=True)
            if isinstance(key, MemberKey) and self.view is not None:
                qualname = model.types.class_qualname(key.owner)
                if isinstance(key.owner, str):  # an attribute of a class of another module: its summary
                    if not writes_only:
                        yield self.view.attribute(key.owner, key.attr), False
                elif qualname is not None:  # writes other modules make into this module's class
                    for value in self.view.external_writes(qualname, key.attr):
                        yield value.as_kind(Kind.SEQ), True
            if writes_only:
                continue
            yield from self.bound(key, creation)

    def statement_writes(self, key: Key) -> Iterator[tuple[Value | None, bool | None]]:
        """What the module's statements put into one location: appends, element stores and copies."""
        for binding in self.model.adds.get(key, []):
            value = self.evaluator.value(binding.expr)
            if binding.how == "elem-of":
                value = value if value is not None and value.kind is Kind.SEQ else None
                yield (
                    (
                        value.with_evidence(binding.node, "pointer values added here")
                        if value and value.is_pointer
                        else value
                    ),
                    True,
                )
            else:
                yield (
                    (
                        value.as_kind(Kind.SEQ).with_evidence(binding.node, "pointer value added here")
                        if value and value.is_pointer
                        else value.as_kind(Kind.SEQ)
                        if value
                        else None
                    ),
                    True,
                )
        for binding in self.model.stores.get(key, []):
            value = self.evaluator.value(binding.expr)
            if binding.how == "seq" and value is not None and value.kind is not Kind.SEQ:
                value = None
            yield (
                (
                    value.as_kind(Kind.SEQ).with_evidence(binding.node, "pointer value stored here")
                    if value and value.is_pointer
                    else value.as_kind(Kind.SEQ)
                    if value
                    else None
                ),
                True,
            )

    def call_writes(self, key: Key) -> Iterator[tuple[Value | None, bool | None]]:
        """What calls write into one location: a function (of this module or, through the index, of
        another) that writes pointer values into the parameter it is passed to, a collective that
        receives into a list holding it."""
        for function, param, call in self.passes.get(key, []):
            if isinstance(function, ExternalFunction):
                received, name = function.writes.get(param), function.qname.rpartition(".")[2]
            else:
                received, name = self.results.param_received(function, param), function.name
            if received is not None:
                yield (
                    received.as_kind(Kind.SEQ).with_evidence(
                        call, f"`{name}()` writes pointer values into its parameter `{param}`"
                    ),
                    True,
                )
        for container in self.elements_of.get(key, []):
            for kind, out, source, call in self.model.gathers:
                out_key = self.model.alias_key(out)
                if out_key is not None and self.root(out_key) == container:
                    value = self.evaluator.value(source)
                    if value is not None and value.is_pointer:
                        yield (
                            value.as_kind(Kind.SEQ).with_evidence(call, f"receives pointer values through `{kind}`"),
                            True,
                        )

    def bound(self, key: Key, creation: Creation | None) -> Iterator[tuple[Value | None, bool | None]]:
        """What reading one location sees besides the writes: what the names of its creation say, the
        creations stored in it, the values bound to it and, for a parameter, what the module's calls pass."""
        model = self.model
        if creation is not None:
            named = name_evidence(self.model, self.tensors, creation)
            if named is not None:
                yield named, None  # what the names say (None: neither a write nor a bound value)
        stored = [
            self.holding(model.creation_by_id[k.call])
            for k in self.stored.get(key, [])
            if k.call in model.creation_by_id
        ]
        if len(stored) > 1 and not all(v is not None and v.is_pointer for v in stored):
            # a field that holds addresses for some instances and data for others (`handle.data`):
            # reading it says nothing about one read
            yield None, False
        else:  # reading a location sees what was stored in it
            for value in stored:
                yield value, False
        for binding in model.bindings.get(key, []):
            yield self.binding_value(binding), False
        if isinstance(key, NameKey):
            for argument in self.parameters.caller_arguments(key):  # a parameter: what the module's calls pass
                yield self.evaluator.value(argument), False
            named = self.parameters.names_table(key)
            if named is not None:
                yield named, False

    def binding_value(self, binding: Binding) -> Value | None:
        model = self.model
        if binding.how == "telem":
            assert isinstance(binding.expr, ast.Call)
            target = model.types.function_called(binding.expr.func)
            if target is not None:
                return self.results.returned_value(target, binding.expr, binding.index)
            source = _reordered(model, binding.expr)
            if source is not None:  # `values, order = torch.sort(ptrs)`: the values, then indices or counts
                inner = self.evaluator.value(source) if binding.index == 0 else INDEX_SEQ
                return inner if inner is not None and inner.kind is Kind.SEQ else None
            position = tuple_address_position(attr_name(binding.expr.func))
            if position is not None:  # `err, ptr = cudart.cudaMalloc(n)`: item 1 is the address, item 0 the status
                whole = self.evaluator.value(binding.expr)
                return whole.as_kind(Kind.SCALAR) if whole is not None and binding.index == position else None
            whole = self.evaluator.value(binding.expr)  # `raddr, rkey = runtime.get_mr_info()`: a binding's results
            return whole if whole is not None and whole.origin is Origin.FOREIGN else None
        if binding.how == "index":
            return INDEX_SCALAR
        if binding.how == "expr" and isinstance(binding.expr, ast.Call) and id(binding.expr) in model.creation_by_id:
            return None  # the creation itself: its class is this class
        value = self.evaluator.value(binding.expr)
        if binding.how == "elem":
            return value.as_kind(Kind.SCALAR) if value is not None and value.kind is Kind.SEQ else None
        return value

    def compute_class_value(self, root: Key, writes_only: bool) -> Value | None:
        contributions = list(self.contributions(root, writes_only))
        best = strongest(v for v, _ in contributions)
        if best is None:
            return None
        if best.origin in (Origin.RAW, Origin.WRAPPED):
            return best  # one raw write makes it pointer-holding; only wrapped ones make int64 right
        writes = [v for v, is_write in contributions if is_write]
        # a value bound to it that says addresses (a parameter typed and named as an address table, a
        # pointer-named getter's result) is more than the target's name: indices written beside it do not
        # overrule it (`values = [int(a) for a in addresses]; values += [0] * pad`)
        named_value = any(
            v is not None and v.origin is Origin.NAMED for v, is_write in contributions if is_write is False
        )
        if writes and not named_value and all(v is not None and v.origin is Origin.INDEX for v in writes):
            return next(v for v in writes if v is not None)  # contrary value evidence overrules names
        if any(v is not None and v.origin is Origin.FOREIGN for v in writes) and all(
            v is not None and v.origin in (Origin.INDEX, Origin.FOREIGN) for v in writes
        ):
            # only what bindings handed out (and indices) enters it: values in their producer's own
            # encoding (a binding returning int64_t hands out wrapped addresses), whatever the names say
            return next(v for v in writes if v is not None and v.origin is Origin.FOREIGN)
        if best.origin is Origin.NAMED:
            return best
        if all(v is not None and v.origin in (Origin.INDEX, best.origin) for v, _ in contributions):
            return best  # only indices, or only what bindings handed out (and indices)
        return None


_REORDERING = frozenset({"sort", "topk", "unique", "kthvalue", "mode", "max", "min", "unique_consecutive"})


def _reordered(model: SemanticModel, call: ast.Call) -> ast.expr | None:
    """What a torch/numpy call that returns (values, indices or counts) takes its values from:
    ``torch.sort(x)``, ``np.unique(x, return_counts=True)``, ``x.topk(k)``."""
    func = call.func
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return None
    qnames = model.qualified_names(func)
    if qnames:
        library = {q.partition(".")[0] for q in qnames}
        if library & {"torch", "numpy"} and attr_name(func) in _REORDERING and call.args:
            return call.args[0]
        return None
    if isinstance(func, ast.Attribute) and func.attr in _REORDERING:
        return func.value
    return None
