"""One module's link to the project index: what the planner lends the engine for one analysis.

The engine asks it for a fresh :class:`~ptrlint.analysis.semantic.records.ModuleContext` (the module's dotted
name and a view of the other modules) and hands back the finished facts, from which it keeps the
index's share: the module's summary, the answers it consulted and the modules it asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..analysis.boundary import ModuleContext
from ..analysis.source import SourceMap
from ..analysis.values.facts import ModuleFacts
from .layout import module_name, search_bases
from .summary import summarise
from .view import ProjectView


@dataclass(frozen=True)
class Shared:
    """The index's share of one analysis (the engine copies it into its Analysis)."""

    summary: object | None = None
    consulted: dict[str, str] | None = None
    wanted: set[str] | None = None


@dataclass(frozen=True)
class ModuleLink:
    view: ProjectView
    path: str
    summary: bool = False  # keep the module's summary (an index round); else only what it read
    partial: bool = False  # no module of the run imports this one: keep only its writes into other modules' classes
    whole: bool = False  # another module asked for a name a cut analysis left out: analyse every statement

    def context(self) -> ModuleContext:
        if self.path in ("-", ""):
            return ModuleContext()
        name, is_package = module_name(self.path)
        return ModuleContext(name, is_package, self.view.for_module(name, search_bases(self.path)))

    def whole_module(self) -> bool:
        return self.whole

    def finish(
        self, facts: ModuleFacts, source: SourceMap, context: ModuleContext, omitted: frozenset[str] = frozenset()
    ) -> Shared:
        view = context.view
        if not isinstance(view, ProjectView):
            return Shared()
        summary = None
        if self.summary:
            # partial: nothing of its own is evaluated
            names: frozenset[str] | None = frozenset() if self.partial else None
            summary = summarise(facts, context.module, os.path.abspath(self.path), source, names)
            summary.omitted = omitted
        return Shared(summary, dict(view.consulted), set(view.wanted))
