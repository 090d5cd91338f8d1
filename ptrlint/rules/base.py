"""What a rule is, and the context it queries. Rules never print and never touch files."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from ..analysis.consumers.search import Consumers
from ..analysis.consumers.uses import FixChoice, choose_fix
from ..analysis.semantic.records import Creation
from ..analysis.source import SourceMap, Span
from ..analysis.values.facts import ModuleFacts
from ..analysis.values.lattice import Evidence
from ..config import Config
from ..findings import Intent


@dataclass(frozen=True)
class Invalid:
    """An example the rule must flag; ``fixed`` is the exact source after the fix (None: no fix)."""

    code: str
    fixed: str | None = None
    unsafe: bool = False  # the fix is applied only with --unsafe-fixes
    count: int = 1  # how many findings of this rule the example gives


@dataclass
class Diagnostic:
    """A finding before positions are attached: the rule says where (a span) and why."""

    span: Span
    message: str
    intents: Callable[[], list[Intent] | None] | None = None
    safe: bool = True
    fix_title: str = ""
    evidence: Evidence = ()
    # other fixes offered besides the main one, all unsafe: (title, intents)
    alternatives: tuple[tuple[str, Callable[[], list[Intent] | None]], ...] = ()
    failure: str = ""  # the harm model: what fails, for which values, where
    severity: str = "error"  # "note": a doubt, not a failure ptrlint can reach
    # notes about the tables of one object: (group id, the object's class name, this table's name, its
    # creation); the engine reports one note per group
    group: tuple[object, str, str, ast.AST] | None = None


@dataclass
class RuleContext:
    module: ast.Module
    facts: ModuleFacts
    source: SourceMap
    config: Config
    _consumers: Consumers | None = field(default=None, init=False, repr=False)

    @property
    def consumers(self) -> Consumers:
        """Where each buffer goes (computed on the first question, once per module)."""
        if self._consumers is None:
            model = self.facts.model
            options = self.facts.options
            self._consumers = Consumers(
                self.module,
                self.facts,
                options.int64_consumers,
                options.uint64_consumers,
                self.facts.view,
                model.context.module,
            )
        return self._consumers

    def release(self) -> None:
        """The rules are done with this module (see ``ModuleFacts.release``)."""
        if self._consumers is not None:
            self._consumers.release()
            self._consumers = None

    def code(self, node: ast.AST) -> str:
        return self.source.segment(node)

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def creation_target(self, creation: Creation) -> str:
        if creation.target_name:
            return f"`{creation.target_name}`"
        return "this buffer"

    def fix_choice(self, creation: Creation) -> FixChoice:
        """Which fix keeps every consumer of the creation's buffer working (analysis/consumers/search.py)."""
        return choose_fix(self.consumers.of_creation(creation))


class Rule:
    """Base class. Subclasses set the metadata below and implement :meth:`check`.

    Docs follow ruff's fixed sections; the registry test enforces them.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    doc: ClassVar[str]
    fix_availability: ClassVar[str]  # "safe", "unsafe", "sometimes" or "none"
    # The words every site of a finding leaves in the text (a creation call's last name, `ctypes`,
    # `pack`, ...) and the methods spelled after a dot (`.astype(`): the prefilter skips a file with
    # none of them for this rule. Gathered into ptrlint/catalog.py (`python -m ptrlint.catalog`).
    site_words: ClassVar[tuple[str, ...]]
    site_methods: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[tuple[str, ...]]
    INVALID: ClassVar[tuple[Invalid, ...]]

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        raise NotImplementedError

    @classmethod
    def explain(cls) -> str:
        header = f"{cls.code} ({cls.name})\n\n{cls.summary}\n\nFix: {cls.fix_availability}\n"
        return header + "\n" + cls.doc.strip() + "\n"
