"""The per-file pipeline, one plain function per stage: prefilter -> parse -> facts -> values ->
rules -> fix intents (and, for fixes, the rewrite engine).

It works on one decoded text and knows nothing of files on disk, caches or the project index:
:mod:`ptrlint.planner` reads files, drives the cache and the index, and lends the analysis of a
module its view of the project through a :class:`ProjectLink`. Nothing here prints.
"""

from __future__ import annotations

import ast
import sys
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Protocol, cast

from .analysis.boundary import ModuleContext
from .analysis.options import analysis_options
from .analysis.semantic.device import parse_host
from .analysis.source import SourceMap
from .analysis.values.facts import ModuleFacts, collect
from .analysis.values.lattice import Location
from .config import Config
from .discovery import display_path
from .findings import INTERNAL_ERROR, SYNTAX_ERROR, Edit, FileError, FileResult, Finding, Fix, Intent, Related
from .gcpause import one_module
from .prefilter import prefilter
from .relevance import REDUCE_FROM, DroppedCheck, parsed_as_kept, relevant_text
from .rewrite.apply import apply_fixes
from .rules import ALL_RULES
from .rules.base import Diagnostic, RuleContext
from .settings import SelectionError, Settings, expand_selector, per_file_ignored, select_codes
from .suppression import is_suppressed

__all__ = [
    "Analysis",
    "ParseError",
    "ProjectLink",
    "SelectionError",
    "Settings",
    "analyse",
    "analyse_module",
    "applicable",
    "expand_selector",
    "fix_loop",
    "parse",
    "process_text",
    "render_fixes",
    "select_codes",
]

MAX_FIX_ITERATIONS = 10


class IndexShare(Protocol):
    """What the index keeps of one analysis (``project.link.Shared``, frozen: read-only here)."""

    @property
    def summary(self) -> object | None: ...

    @property
    def consulted(self) -> dict[str, str] | None: ...

    @property
    def wanted(self) -> set[str] | None: ...


class ProjectLink(Protocol):
    """What the planner lends the analysis of one module (``project.link.ModuleLink``): its place
    in the project, and what to keep of the analysis for the index."""

    def context(self) -> ModuleContext:
        """A fresh context (module name, view of the other modules) for one analysis."""

    def finish(
        self, facts: ModuleFacts, source: SourceMap, context: ModuleContext, omitted: frozenset[str] = frozenset()
    ) -> IndexShare:
        """The index's share of one analysis: summary, consulted answers, wanted modules. ``omitted``:
        the names defined by the statements the analysis left out (a large module cut to its relevant
        statements, :mod:`ptrlint.relevance`); the summary lists them, so a lookup of one of them asks
        for the module to be analysed whole."""

    def whole_module(self) -> bool:
        """Whether another module asked for a name only the whole module defines: then the analysis
        sees the whole module, never only its relevant statements."""


@dataclass
class Analysis:
    findings: list[Finding]
    summary: object | None = None  # project.summary.ModuleSummary
    consulted: dict[str, str] | None = None
    wanted: set[str] | None = None


# ----- analysis ----------------------------------------------------------------------------------
class ParseError(Exception):
    """A file that CPython cannot parse (reported as E999, exit 2; never rewritten)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def parse(text: str) -> ast.Module:
    """CPython's parser; pathological nesting (RecursionError/MemoryError) is a parse error too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are the file owner's business, not ours
            return ast.parse(text)
    except SyntaxError as exc:
        raise ParseError(f"syntax error: {exc.msg}", exc.lineno or 0, exc.offset or 0) from exc
    except (RecursionError, MemoryError) as exc:
        raise ParseError("too deeply nested for Python's parser") from exc
    except ValueError as exc:  # e.g. a NUL byte in the source
        raise ParseError(f"cannot parse: {exc}") from exc


def parse_relevant(
    text: str, config: Config, may_cut: bool = True
) -> tuple[ast.Module, frozenset[str], DroppedCheck | None]:
    """The tree the analysis needs (raises ParseError), the names its left-out statements define, and
    the check that each left-out statement parses (the file must parse; :class:`DroppedCheck` runs
    it beside the analysis): a large module's relevant statements alone where ``may_cut`` (an ast of
    the whole would be its size many times over); else the whole text. Kernel bodies are blanked
    either way (:func:`parse_host`)."""
    relevant = relevant_text(text, config) if may_cut and len(text) >= REDUCE_FROM else None
    if relevant is None:
        return parse_host(text, parse), frozenset(), None
    check = DroppedCheck(text, relevant.dropped)
    try:
        module = parse_host(relevant.text, parse)
    except ParseError:
        check.cancel()
        raise
    if parsed_as_kept(module, relevant):
        return module, relevant.omitted, check
    check.cancel()
    return parse_host(text, parse), frozenset(), None


def analyse(
    text: str, path: str, config: Config, enabled: frozenset[str], link: ProjectLink | None = None
) -> list[Finding]:
    """Findings of one decoded source text, with fix intents (raises ParseError).

    Kernel bodies (Triton, CuTe DSL, ...) are blanked before parsing when that checks out: they
    hold no host tensors, and they are most of a kernel-heavy file (analysis/semantic/device.py). ``link``
    answers what other modules of the project say.
    """
    return analyse_module(text, path, config, enabled, link).findings


ANALYSIS_RECURSION_LIMIT = 20_000


@contextmanager
def deep_enough() -> Iterator[None]:
    """The analysis walks the tree recursively, one Python frame a level: a 1,000-term sum, valid Python
    that CPython parses, nests 1,000 levels deep. From Python 3.11 a call between Python functions takes
    no C stack, so a higher limit costs nothing until it is used; it is restored afterwards."""
    before = sys.getrecursionlimit()
    if before < ANALYSIS_RECURSION_LIMIT:
        sys.setrecursionlimit(ANALYSIS_RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def analyse_module(
    text: str,
    path: str,
    config: Config,
    enabled: frozenset[str],
    link: ProjectLink | None = None,
    only_summary: bool = False,
    tree: ast.Module | None = None,
) -> Analysis:
    """Findings (unless ``only_summary``) and what ``link`` keeps of the analysis for the index.
    ``tree``: the text parsed already (:func:`parse_host` of this very text), taken over by the analysis."""
    with one_module(), deep_enough():  # the module's garbage is collected once, after its analysis has returned
        return _analyse_module(text, path, config, enabled, link, only_summary, tree)


def _analyse_module(
    text: str,
    path: str,
    config: Config,
    enabled: frozenset[str],
    link: ProjectLink | None,
    only_summary: bool,
    tree: ast.Module | None,
) -> Analysis:
    module, omitted, check = (
        (tree, frozenset[str](), None)
        if tree is not None
        else parse_relevant(text, config, link is None or not link.whole_module())
    )
    context = link.context() if link is not None else ModuleContext()
    try:
        facts = collect(module, analysis_options(config), context)
        source = SourceMap(text, module)
        findings = [] if only_summary else analyse_facts(facts, module, source, path, config, enabled)
    except BaseException:
        if check is not None:
            check.cancel()
        raise
    if check is not None and not check.passed():  # a left-out statement does not parse alone: the whole text
        facts.release()
        return _analyse_module(text, path, config, enabled, link, only_summary, parse_host(text, parse))
    shared = link.finish(facts, source, context, omitted) if link is not None else None
    facts.release()  # the tree and the facts are freed when this returns (ptrlint/gcpause.py)
    if shared is None:
        return Analysis(findings)
    return Analysis(findings, shared.summary, shared.consulted, shared.wanted)


def analyse_facts(
    facts: ModuleFacts, module: ast.Module, source: SourceMap, path: str, config: Config, enabled: frozenset[str]
) -> list[Finding]:
    """One fact-collecting traversal is done; every enabled rule queries it."""
    ctx = RuleContext(module=module, facts=facts, source=source, config=config)
    ignored = per_file_ignored(path, config)
    findings: list[Finding] = []
    for rule_cls in ALL_RULES:
        if rule_cls.code not in enabled or rule_cls.code in ignored:
            continue
        kept = [
            d
            for d in rule_cls().check(ctx)
            if not is_suppressed(rule_cls.code, source.comments(source.line_column(d.span[0])[0]))
        ]
        for diag in one_per_group(kept):
            start_line, start_column = source.line_column(diag.span[0])
            end_line, end_column = source.line_column(diag.span[1])
            fix = None
            if diag.intents is not None:
                intents = diag.intents()
                if intents:
                    alternatives = []
                    for title, make in diag.alternatives:
                        other = make()
                        if other and set(other) != set(intents):
                            alternatives.append(Fix(False, tuple(sorted(set(other))), title))
                    fix = Fix(diag.safe, tuple(sorted(set(intents))), diag.fix_title, alternatives=tuple(alternatives))
            related = tuple(_related(source, node, message) for node, message in diag.evidence)
            findings.append(
                Finding(
                    path,
                    start_line,
                    start_column,
                    end_line,
                    end_column,
                    rule_cls.code,
                    rule_cls.name,
                    diag.message,
                    fix,
                    related,
                    failure=diag.failure,
                    severity=diag.severity,
                )
            )
    findings.sort(key=Finding.sort_key)
    ctx.release()
    return findings


def one_per_group(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per group (notes about the tables of one object), at the group's first: its fix
    changes every table of the group (safe only if each one's is), the others are among its evidence."""
    groups: dict[object, list[Diagnostic]] = {}
    out: list[Diagnostic] = []
    for diag in diagnostics:
        if diag.group is None:
            out.append(diag)
        else:
            members = groups.setdefault(diag.group[0], [])
            if not members:
                out.append(diag)
            members.append(diag)
    for members in groups.values():
        if len(members) < 2:
            continue
        first, others = members[0], members[1:]
        name = first.group[1]  # type: ignore[index]
        first.failure += (
            " (the same holds for "
            + ", ".join(f"`{d.group[2]}`" for d in others)  # type: ignore[index]
            + f" of the same `{name}` objects)"
        )
        first.evidence = (
            *first.evidence,
            *(
                (
                    d.group[3],  # type: ignore[index]
                    f"the same holds for `{d.group[2]}` of the same "  # type: ignore[index]
                    f"`{name}` objects",
                )
                for d in others
            ),
        )
        first.intents = _joined([d.intents for d in members])
        first.safe = all(d.safe for d in members)
        first.alternatives = ()
    return out


def _joined(makers: list[Callable[[], list[Intent] | None] | None]) -> Callable[[], list[Intent] | None] | None:
    """The intents of several fixes as one fix (None when one of them has none)."""
    if any(make is None for make in makers):
        return None

    def intents() -> list[Intent] | None:
        out: list[Intent] = []
        for make in cast("list[Callable[[], list[Intent] | None]]", makers):  # none is None (above)
            part = make()
            if not part:
                return None
            out.extend(part)
        return out

    return intents


def _related(source: SourceMap, node: object, message: str) -> Related:
    if isinstance(node, Location):  # evidence in another module of the project
        return Related(node.line, node.column, message, display_path(node.path))
    return Related(*source.line_column(source.start(node)), message)  # type: ignore[arg-type]


def render_fixes(text: str, findings: list[Finding]) -> list[Finding]:
    """Fill in the text edits of every fix through the rewrite engine (one libcst parse of ``text``).

    A fix whose intents libcst cannot apply is dropped (the finding stays, without a fix).
    """
    intents = {
        i
        for f in findings
        if f.fix is not None and not f.fix.edits
        for fix in (f.fix, *f.fix.alternatives)
        for i in fix.intents
    }
    if not intents:
        return findings
    from .rewrite.render import render  # libcst is imported only by runs that apply or show fixes

    try:
        edits = render(text, intents)
    except Exception:  # noqa: BLE001 - libcst cannot parse what CPython accepted: no fixes for this file
        edits = {}
    out: list[Finding] = []
    for finding in findings:
        fix = finding.fix
        if fix is not None and not fix.edits:
            fix = _rendered(fix, edits)
            if fix is not None:
                kept = (_rendered(a, edits) for a in fix.alternatives)
                fix = replace(fix, alternatives=tuple(a for a in kept if a is not None))
            finding = replace(finding, fix=fix)
        out.append(finding)
    return out


def _rendered(fix: Fix, edits: dict[Intent, Edit | None]) -> Fix | None:
    """The fix with the text edits of its intents, or None where the rewrite engine could not apply one."""
    rendered = [edits.get(i) for i in fix.intents]
    if any(e is None for e in rendered):
        return None
    return replace(fix, edits=tuple(sorted(set(rendered))))  # type: ignore[arg-type]


# ----- one text ----------------------------------------------------------------------------------
def process_text(
    text: str,
    path: str,
    settings: Settings,
    link: ProjectLink | None = None,
    tree: ast.Module | None = None,
    findings: list[Finding] | None = None,
) -> FileResult:
    """Lint (and with settings.fixing, fix) one decoded text; never raises. The fixed text is
    returned in ``new_text``; writing it (or a diff) is the caller's. ``tree``: the text parsed
    already (see :func:`analyse_module`); ``findings``: the text analysed already, with ``link``'s
    answers (the project index's last round), so only the fixes are left to do."""
    result = FileResult(path=path)
    try:
        if settings.prefilter and not prefilter(text, settings.config, settings.enabled):
            return result
        with one_module(), deep_enough():  # fixing re-analyses and libcst-parses the module: one collection
            _lint_and_fix(text, path, settings, link, result, tree, findings)
    except ParseError as exc:
        result.error = FileError(path, exc.message, exc.line, exc.column)
    except RecursionError:
        result.error = FileError(
            path, "too deeply nested to analyse (recursion limit); file skipped", code=SYNTAX_ERROR
        )
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        result.error = FileError(
            path, f"internal error: {type(exc).__name__}: {exc} ({tb}); please report it", code=INTERNAL_ERROR
        )
    return result


def _lint_and_fix(
    text: str,
    path: str,
    settings: Settings,
    link: ProjectLink | None,
    result: FileResult,
    tree: ast.Module | None = None,
    findings: list[Finding] | None = None,
) -> None:
    """The body of :func:`process_text`, filling ``result`` (its caller turns errors into results)."""
    if findings is None:
        analysis = analyse_module(text, path, settings.config, settings.enabled, link, tree=tree)
        findings = analysis.findings
        result.summary, result.consulted, result.wanted = analysis.summary, analysis.consulted, analysis.wanted
    final_text = text
    if settings.fixing and any(applicable(f, settings) for f in findings):
        new_text, fixed, findings = fix_loop(text, path, settings, findings, link, result.applied)
        if new_text != text:
            result.new_text = final_text = new_text
            result.fixed = fixed
    if settings.render_edits:
        findings = render_fixes(final_text, findings)
    result.findings = findings


def applicable(finding: Finding, settings: Settings) -> bool:
    """A fix this run applies (safe, or unsafe with --unsafe-fixes)."""
    return settings.applies(finding)


def fix_loop(
    text: str,
    path: str,
    settings: Settings,
    findings: list[Finding],
    link: ProjectLink | None = None,
    applied_out: list[Finding] | None = None,
) -> tuple[str, int, list[Finding]]:
    """Apply fixes until none applies; every intermediate text must parse. Returns (text, fixed,
    remaining); the findings whose fixes were applied are appended to ``applied_out``."""
    fixed = 0
    for _ in range(MAX_FIX_ITERATIONS):
        ready = [f for f in render_fixes(text, [f for f in findings if applicable(f, settings)]) if f.fix]
        if not ready:
            break
        new_text, chosen = apply_fixes(text, ready)
        applied = len(chosen)
        if applied_out is not None:
            applied_out.extend(chosen)
        if applied == 0 or new_text == text:
            break
        try:  # the analysis parses the fixed text first: a fix that breaks the syntax is a bug, never written
            findings = analyse(new_text, path, settings.config, settings.enabled, link)
        except ParseError as exc:
            raise RuntimeError(f"a fix produced invalid Python ({exc.message}); nothing was written") from exc
        text = new_text
        fixed += applied
    return text, fixed, findings
