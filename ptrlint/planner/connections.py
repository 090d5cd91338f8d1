"""What connects a candidate (a file with a site but no pointer evidence of its own) to pointer
evidence elsewhere in its project: the qualified names whose summaries hold pointer values, and
whether a candidate's text uses one of them (imported, or spelled ``module.name``)."""

from __future__ import annotations

from ..analysis.names import AnalysisOptions
from ..names import NamePatterns
from ..project.summary import ModuleSummary
from ..project.view import ProjectView
from .tasks import Task


def connections_of(view: ProjectView, known: dict[int, OwnSymbols] | None = None
                   ) -> tuple[set[str], dict[str, set[str]], set[str]]:
    """Pointer symbols, the names of each of their modules (or classes) that are one, and the modules
    whose classes others write addresses into."""
    symbols = _pointer_symbols(view, known)
    members: dict[str, set[str]] = {}
    for symbol in symbols:
        owner, _, name = symbol.rpartition(".")
        members.setdefault(owner, set()).add(name)
    return symbols, members, {k.rpartition(".")[0].rpartition(".")[0] for k in view.writes_by_target}


def _pointer_symbols(view: ProjectView, known: dict[int, OwnSymbols] | None = None) -> set[str]:
    """Qualified names whose summaries hold pointer values (functions, methods and their classes,
    attributes' classes, module names), the classes with a field named like an address (a positional
    argument of their constructor takes the field's name: name evidence in a module that spells
    none), and the names that re-export them.

    ``known``: each summary's own symbols and re-exports, kept by the caller across the settle
    rounds (a round changes few summaries, and a large tree has thousands)."""
    options = view.options
    names = options.names if isinstance(options, AnalysisOptions) else None
    out: set[str] = set()
    exporters: dict[str, list[str]] = {}  # a qualified name -> the names that re-export it
    for module, summary in view.summaries.items():
        own = known.get(id(summary)) if known is not None else None
        if own is None or own.summary is not summary or own.module != module:
            own = OwnSymbols(module, summary, names)
            if known is not None:
                known[id(summary)] = own
        out.update(own.symbols)
        for target, exporter in own.exports:
            exporters.setdefault(target, []).append(exporter)
    queue = [s for s in out if s in exporters]
    while queue:  # names that re-export a pointer symbol, through any chain of re-exports
        for exporter in exporters.get(queue.pop(), ()):
            if exporter not in out:
                out.add(exporter)
                queue.append(exporter)
    return out


class OwnSymbols:
    """The pointer symbols one summary defines, and its re-exports (target, qualified name)."""

    def __init__(self, module: str, summary: ModuleSummary, names: NamePatterns | None) -> None:
        self.module, self.summary = module, summary  # the summary is kept: its id keys the cache
        out: list[str] = []
        if names is not None:
            out.extend(f"{module}.{cls}" for cls, fields in summary.classes.items()
                       if any(names.is_pointer_name(f) for f in fields))
        for name, value in (*summary.functions.items(), *summary.attributes.items(), *summary.names.items()):
            if value.origin >= 1:  # named, wrapped or raw
                out.append(f"{module}.{name}")
                if "." in name:
                    out.append(f"{module}.{name.rpartition('.')[0]}")  # the class of a method or attribute
        out.extend(f"{module}.{name}" for name in summary.param_writes)
        self.symbols = out
        self.exports = [(target, f"{module}.{name}") for name, target in summary.exports.items()]


def uses_any(task: Task, symbols: set[str], members: dict[str, set[str]]) -> bool:
    """Whether a text imports one of ``symbols``, or a module of them and uses one as ``mod.name``."""
    for local, target in task.bindings().items():
        if target in symbols:
            return True
        names = members.get(target)
        if names is not None and task.spells_attribute(local, names):
            return True
    return False
