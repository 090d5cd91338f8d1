"""The former libcst pipeline, findings only: ``analyse(text, path, config, enabled)``."""

from __future__ import annotations

import bisect

import libcst as cst
from libcst.metadata import MetadataWrapper

from ..config import Config
from ..engine import per_file_ignored
from ..model import Edit, Finding, Fix, Related
from ..suppression import is_suppressed
from .pointers import AnalysisOptions, NamePatterns, collect
from .rules import ALL_RULES
from .rules.base import RuleContext
from .sourcemap import SourceMap


def analyse(text: str, path: str, config: Config, enabled: frozenset[str]) -> list[Finding]:
    module = cst.parse_module(text)
    options = AnalysisOptions(NamePatterns(config.pointer_names, config.lookalike_names),
                              frozenset(config.buffer_factories), frozenset(config.pointer_functions))
    facts = collect(module, options)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    source = SourceMap(text, wrapper)
    ctx = RuleContext(module=module, facts=facts, source=source, config=config)
    ignored = per_file_ignored(path, config)
    findings: list[Finding] = []
    for rule_cls in ALL_RULES:
        if rule_cls.code not in enabled or rule_cls.code in ignored:
            continue
        for diag in rule_cls().check(ctx):
            span = source.range(diag.node)
            if is_suppressed(rule_cls.code, source.comments(span.start.line)):
                continue
            fix = None
            if diag.edits is not None:
                edits = diag.edits()
                if edits:
                    fix = Fix(diag.safe, (), diag.fix_title, tuple(sorted(_locate(source, e) for e in set(edits))))
            related = tuple(
                Related(source.range(node).start.line, source.range(node).start.column + 1, message)
                for node, message in diag.evidence
            )
            findings.append(Finding(path, span.start.line, span.start.column + 1, span.end.line, span.end.column + 1,
                                    rule_cls.code, rule_cls.name, diag.message, fix, related))
    findings.sort(key=Finding.sort_key)
    return findings


def _locate(source: SourceMap, edit: Edit) -> Edit:
    def pos(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(source.line_starts, offset)
        return line, offset - source.column_base(line) + 1

    return Edit(edit.start, edit.end, edit.text, pos(edit.start), pos(edit.end))


def fix_loop(text: str, path: str, config: Config, enabled: frozenset[str], unsafe: bool) -> str:
    """The former fix loop: apply the libcst engine's edits until none applies."""
    from ..rewrite.apply import apply_fixes

    for _ in range(10):
        findings = [f for f in analyse(text, path, config, enabled) if f.fix is not None and (f.fix.safe or unsafe)]
        if not findings:
            break
        new_text, applied = apply_fixes(text, findings)
        if applied == 0 or new_text == text:
            break
        text = new_text
    return text


def comparable(findings: list[Finding], text: str) -> list[tuple]:
    """Findings as comparable tuples; columns as character columns (libcst restarts columns
    after a form feed in a line's leading whitespace, CPython's ast does not)."""
    import re

    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]

    def shift(line: int) -> int:
        start = starts[line - 1]
        i = base = start
        while i < len(text) and text[i] in " \t\x0c":
            if text[i] == "\x0c":
                base = i + 1
            i += 1
        return base - start

    return [
        (f.line, f.column + shift(f.line), f.end_line, f.end_column + shift(f.end_line), f.code, f.message,
         f.fix is not None, f.fix.safe if f.fix else None, f.fix.title if f.fix else None,
         tuple((r.line, r.column + shift(r.line), r.message) for r in f.related))
        for f in findings
    ]
