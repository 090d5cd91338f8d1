"""Per-module summaries: what one module tells the others about pointer values.

A summary is computed from the same facts as the module's findings (one ast pass) and holds:
functions and methods whose return values are known (addresses, wrapped, index values), the
parameters they write pointer values into, the values of class attributes and module-level
names, writes into attributes of classes defined in *other* modules, the classes themselves (with
their dataclass/NamedTuple fields) and what the module re-exports. Everything is plain JSON, with
evidence as (path, line, column, message), so summaries are cached by content and sent to workers.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from ..analysis.semantic.records import FunctionNode, MemberKey, NameKey
from ..analysis.semantic.syntax import CREATION_LAST_NAMES
from ..analysis.source import SourceMap
from ..analysis.values.facts import ModuleFacts
from ..analysis.values.lattice import Kind, Location, Origin, Value
from ..analysis.values.substitutions import REQUEST, asks_unsigned


@dataclass(frozen=True)
class ValueSummary:
    kind: str
    origin: int
    evidence: tuple[tuple[str, int, int, str], ...] = ()
    python_int: bool = True
    array: bool = False
    table_name: bool = True

    @classmethod
    def of(cls, value: Value, path: str, source: SourceMap) -> ValueSummary:
        evidence = []
        for node, message in value.evidence:
            if isinstance(node, Location):
                evidence.append((node.path, node.line, node.column, message))
            else:
                line, column = source.line_column(source.start(node))
                evidence.append((path, line, column, message))
        return cls(value.kind.name, int(value.origin), tuple(evidence), value.python_int, value.array, value.table_name)

    def to_value(self) -> Value:
        evidence = tuple((Location(p, line, col), message) for p, line, col, message in self.evidence)
        return Value(Kind[self.kind], Origin(self.origin), evidence, self.python_int, self.array, self.table_name)

    def to_json(self) -> list[Any]:
        return [self.kind, self.origin, [list(e) for e in self.evidence], self.python_int, self.array, self.table_name]

    @classmethod
    def from_json(cls, data: list[Any]) -> ValueSummary:
        kind, origin, evidence, python_int, array, table_name = data
        return cls(kind, origin, tuple(tuple(e) for e in evidence), python_int, array, table_name)


@dataclass
class ModuleSummary:
    module: str
    path: str
    functions: dict[str, ValueSummary] = field(default_factory=dict)  # "f", "Cls.method"
    param_writes: dict[str, dict[str, ValueSummary]] = field(default_factory=dict)
    attributes: dict[str, ValueSummary] = field(default_factory=dict)  # "Cls.attr"
    names: dict[str, ValueSummary] = field(default_factory=dict)  # module-level names
    external_writes: dict[str, ValueSummary] = field(default_factory=dict)  # "pkg.mod.Cls.attr"
    signatures: dict[str, list[str]] = field(default_factory=dict)  # parameters of functions with param_writes
    classes: dict[str, list[str]] = field(default_factory=dict)  # "Cls" -> dataclass/NamedTuple fields
    exports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name it imports
    imports: list[str] = field(default_factory=list)
    patches: dict[str, str] = field(default_factory=dict)  # "torch.empty" -> "pkg.mod._empty" (`torch.empty = _empty`)
    # names defined by statements a cut analysis left out (ptrlint/relevance.py): not summarised, so a
    # lookup of one asks for the module to be analysed whole
    omitted: frozenset[str] = frozenset()
    # module-level functions of one parameter that wrap an address into int64 range (``to_i64(p)``): a call
    # of one from another module wraps the address it is given, as a call in this module does
    wrappers: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (
            self.functions
            or self.param_writes
            or self.attributes
            or self.names
            or self.external_writes
            or self.classes
            or self.exports
            or self.patches
            or self.omitted
            or self.wrappers
        )

    def to_json(self) -> dict[str, Any]:
        def values(d: dict[str, ValueSummary]) -> dict[str, list[Any]]:
            return {k: v.to_json() for k, v in sorted(d.items())}

        return {
            "module": self.module,
            "path": self.path,
            "functions": values(self.functions),
            "param_writes": {k: values(v) for k, v in sorted(self.param_writes.items())},
            "attributes": values(self.attributes),
            "names": values(self.names),
            "external_writes": values(self.external_writes),
            "signatures": dict(sorted(self.signatures.items())),
            "classes": dict(sorted(self.classes.items())),
            "exports": dict(sorted(self.exports.items())),
            "imports": sorted(self.imports),
            "patches": dict(sorted(self.patches.items())),
            "omitted": sorted(self.omitted),
            "wrappers": sorted(self.wrappers),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModuleSummary:
        def values(d: dict[str, Any]) -> dict[str, ValueSummary]:
            return {k: ValueSummary.from_json(v) for k, v in d.items()}

        return cls(
            data["module"],
            data["path"],
            values(data["functions"]),
            {k: values(v) for k, v in data["param_writes"].items()},
            values(data["attributes"]),
            values(data["names"]),
            values(data["external_writes"]),
            dict(data["signatures"]),
            dict(data["classes"]),
            dict(data["exports"]),
            list(data["imports"]),
            dict(data.get("patches", {})),
            frozenset(data.get("omitted", ())),
            list(data.get("wrappers", ())),
        )

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]


def summarise(
    facts: ModuleFacts, module: str, path: str, source: SourceMap, names: frozenset[str] | None = None
) -> ModuleSummary:
    """The summary of one analysed module. With ``names`` (what the modules that import this one
    use of it), only those functions, classes and module names are evaluated; writes into other
    modules' classes are always recorded."""
    model = facts.model
    out = ModuleSummary(module, path)
    wanted: Callable[[str], bool] = (
        (lambda name: True) if names is None else (lambda name: name.partition(".")[0] in names)
    )

    def keep(value: Value | None) -> ValueSummary | None:
        """Only what can change another module's findings: addresses, names, wrapped and foreign values."""
        if value is None or value.origin < Origin.FOREIGN:
            return None
        return ValueSummary.of(value, path, source)

    module_scope = id(model.module_scope)
    class_id: int | str  # a class of this module, then an attribute's owner (a qualified name: another module's)
    value: ValueSummary | ast.expr | None  # a summary, then a patch's replacement
    for function_key, function in model.functions.items():
        if function_key.scope == module_scope and wanted(function_key.name):
            _summarise_function(facts, function, function_key.name, out, keep)
    for class_id in model.class_nodes:
        qualname = model.class_qualnames.get(class_id)
        if qualname is None:
            continue
        out.classes[qualname] = model.types.class_fields(class_id)
        if wanted(qualname):
            for name, method in model.class_methods.get(class_id, {}).items():
                _summarise_function(facts, method, f"{qualname}.{name}", out, keep)
    attribute_keys = {
        k for k in model.alias_classes.parent if isinstance(k, MemberKey)
    }  # every attribute the module binds, writes or aliases
    for member in sorted(attribute_keys, key=repr):
        class_id, attr = member.owner, member.attr
        if isinstance(class_id, str):  # an attribute of a class from another module, written here
            value = keep(facts.class_value(facts.root(member), writes_only=True))
            if value is not None:
                out.external_writes[f"{class_id}.{attr}"] = value
        elif class_id in model.class_qualnames and wanted(model.class_qualnames[class_id]):
            value = keep(facts.class_value(facts.root(member)))
            if value is not None:
                out.attributes[f"{model.class_qualnames[class_id]}.{attr}"] = value
    for key in model.bindings:
        if isinstance(key, NameKey) and key.scope == module_scope and key.name not in out.classes and wanted(key.name):
            value = keep(facts.class_value(facts.root(key)))
            if value is not None:
                out.names[key.name] = value
    for creation in model.creations:  # pointer tables asked of another module's dtype-substituting factory
        if creation.factory is not None and creation.substitutes and asks_unsigned(facts, creation):
            held = facts.pointer_holding(creation)
            value = keep(
                held.with_evidence(
                    creation.call,
                    f"asks `{creation.factory.rpartition('.')[2]}` for an unsigned table that holds addresses",
                )
                if held
                else None
            )
            if value is not None:
                out.external_writes[f"{creation.factory}.{REQUEST}"] = value
    for target, value in model.patches:  # `torch.empty = _empty`: every module's `torch.empty(...)` calls it
        if (
            isinstance(value, ast.Name)
            and NameKey(module_scope, value.id) in model.functions
            and target.attr in CREATION_LAST_NAMES
        ):
            for patched in sorted(model.qualified_names(target)):
                out.patches[patched] = f"{module}.{value.id}"
    out.wrappers = facts.flow.results.wrap_helpers(wanted)
    out.exports = dict(model.module_scope.imports)
    out.imports = sorted({q.rpartition(".")[0] if q.count(".") else q for q in model.module_scope.imports.values()})
    return out


def _summarise_function(
    facts: ModuleFacts,
    function: FunctionNode,
    qualname: str,
    out: ModuleSummary,
    keep: Callable[[Value | None], ValueSummary | None],
) -> None:
    returned = keep(facts.flow.results.returned_value(function, None))
    if returned is not None:
        out.functions[qualname] = returned
    args = function.args
    writes = {}
    for param in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        value = keep(facts.flow.results.param_received(function, param.arg))
        if value is not None:
            writes[param.arg] = value
    if writes:
        out.param_writes[qualname] = writes
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if facts.model.method_kinds.get(id(function)) in ("instance", "class"):
            positional = positional[1:]
        out.signatures[qualname] = positional + [a.arg for a in args.kwonlyargs]
