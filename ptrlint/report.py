"""Formatters: findings -> text, JSON, GitHub annotations, SARIF 2.1.0. Pure; no I/O."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from . import __version__
from .catalog import load_rules, rule_name
from .findings import NOTE, FileError, Finding, Fix

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(
    findings: list[Finding], errors: list[FileError], show_evidence: bool = False, unsafe_fixes: bool = False
) -> str:
    lines: list[str] = []
    for f in findings:
        marker = ""
        if f.fix is not None and (f.fix.safe or unsafe_fixes):
            marker = " [*]"
        lines.append(f"{location(f.path, f.cell, f.line, f.column)}: {f.code} {_note(f)}{clean(f.message)}{marker}")
        if show_evidence:
            if f.failure:
                lines.append(f"    failure: {clean(f.failure)}")
            for r in f.related:
                lines.append(f"    {location(r.path or f.path, r.cell, r.line, r.column)}: {clean(r.message)}")
    for e in errors:
        where = f"{clean(e.path)}:{e.line}:{e.column}" if e.line else clean(e.path)
        lines.append(f"{where}: {e.code} {clean(e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


class SourceLines:
    """The lines a finding points at, for ``full`` output (files are read once; notebooks by cell).
    The only part of reporting that reads files, so the formatters stay pure."""

    def __init__(self, texts: dict[str, str] | None = None) -> None:
        self.texts = dict(texts or {})
        self._lines: dict[tuple[str, int | None], list[str]] = {}

    def get(self, path: str, cell: int | None) -> list[str]:
        key = (path, cell)
        if key not in self._lines:
            self._lines[key] = self._read(path, cell)
        return self._lines[key]

    def _read(self, path: str, cell: int | None) -> list[str]:
        try:
            if path in self.texts:
                text = self.texts[path]
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
                if cell is not None:
                    from .notebook import Notebook

                    return Notebook(data.decode("utf-8")).cell_lines(cell)
                from .sources import decode

                text = decode(data)[0]
        except (OSError, ValueError, SyntaxError, LookupError):
            return []
        return text.splitlines()


_STYLES = {"bold": "1", "red": "1;31", "blue": "1;34", "cyan": "1;36", "dim": "2"}


def full(
    findings: list[Finding],
    errors: list[FileError],
    sources: SourceLines,
    color: bool = False,
    show_evidence: bool = False,
    unsafe_fixes: bool = False,
) -> str:
    """Each finding with its source line, a marker under the span, and what the fix would change."""

    def paint(text: str, style: str) -> str:
        return f"\x1b[{_STYLES[style]}m{text}\x1b[0m" if color else text

    out: list[str] = []
    for f in findings:
        fixable = f.fix is not None and (f.fix.safe or unsafe_fixes)
        head = f"{paint(location(f.path, f.cell, f.line, f.column), 'bold')}: {paint(f.code, 'red')}"
        out.append(f"{head} {paint('[*] ', 'cyan') if fixable else ''}{_note(f)}{clean(f.message)}")
        lines = sources.get(f.path, f.cell)
        if 1 <= f.line <= len(lines):
            shown = range(max(1, f.line - 1), min(len(lines), f.line + 1) + 1)
            width = len(str(shown[-1]))
            bar = paint(" " * width + " |", "blue")
            out.append(bar)
            for number in shown:
                text = clean(lines[number - 1].expandtabs(1))
                out.append(f"{paint(str(number).rjust(width) + ' |', 'blue')} {text}")
                if number == f.line:
                    end = f.end_column if f.end_line == f.line else len(text) + 1
                    marker = "^" * max(1, end - f.column)
                    out.append(f"{bar} {' ' * (f.column - 1)}{paint(marker + ' ' + f.code, 'red')}")
            out.append(bar)
        pad = " " * (len(str(f.line + 1)) + 1)
        if f.fix is not None:
            label = f.fix.title or "apply the fix"
            change = _describe_edits(f.fix, lines)
            note = "" if f.fix.safe else " (unsafe: applied with --fix --unsafe-fixes)"
            out.append(f"{pad}{paint('= help:', 'cyan')} {clean(label)}{': ' + clean(change) if change else ''}{note}")
            for other in f.fix.alternatives:  # offered in editors; --fix applies only the fix above
                change = _describe_edits(other, lines)
                out.append(
                    f"{pad}{paint('= or:', 'cyan')} {clean(other.title)}{': ' + clean(change) if change else ''}"
                )
        if show_evidence:
            if f.failure:
                out.append(f"{pad}{paint('= failure:', 'dim')} {clean(f.failure)}")
            for r in f.related:
                where = location(r.path or f.path, r.cell, r.line, r.column)
                out.append(f"{pad}{paint('= evidence:', 'dim')} {where}: {clean(r.message)}")
        out.append("")
    for e in errors:
        where = f"{clean(e.path)}:{e.line}:{e.column}" if e.line else clean(e.path)
        out.append(f"{paint(where, 'bold')}: {paint(e.code, 'red')} {clean(e.message)}")
    return "\n".join(out) + "\n" if out else ""


def _note(finding: Finding) -> str:
    """``[note] `` before the message of a note (a doubt, not a failure ptrlint can reach)."""
    return "[note] " if finding.severity == NOTE else ""


def _describe_edits(fix: Fix, lines: list[str]) -> str:
    """``replace `torch.int64` with `torch.uint64```; ``insert `, dtype=torch.uint64```."""
    parts = []
    for e in fix.edits:
        (line, column), (end_line, end_column) = e.location, e.end_location
        old = ""
        if line == end_line and 1 <= line <= len(lines):
            old = lines[line - 1][column - 1 : end_column - 1]
        new = e.text.strip()
        if old:
            parts.append(f"replace `{old}` with `{new}`")
        elif new:
            parts.append(f"insert `{new.lstrip(', ')}`")
    return "; ".join(parts)


def location(path: str, cell: int | None, line: int, column: int) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` in a notebook (the path with control characters escaped)."""
    path = clean(path)
    return f"{path}:cell {cell}:{line}:{column}" if cell is not None else f"{path}:{line}:{column}"


_CONTROL = {i: f"\\x{i:02x}" for i in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
_CONTROL.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x2028: "\\u2028", 0x2029: "\\u2029", 0x1B: "\\x1b"})


def clean(text: str) -> str:
    """Text from the tree (file names, identifiers, string keys) with every control character and line
    separator escaped: one finding is one line, and nothing it quotes can start a line of its own (CI
    systems read lines such as ``::warning::`` as commands) or drive the terminal."""
    return text.translate(_CONTROL)


def summary(findings: list[Finding], errors: list[FileError], fixed: int, unsafe_fixes: bool) -> str:
    parts: list[str] = []
    total = len(findings)
    notes = sum(1 for f in findings if f.severity == NOTE)
    if total or fixed:
        head = f"Found {total + fixed} finding{'s' if total + fixed != 1 else ''}"
        if fixed:
            head += f" ({fixed} fixed, {total} remaining)"
        if notes:
            head += f"; {notes} of them {'are notes' if notes != 1 else 'is a note'} (doubts, not failures)"
        parts.append(head + ".")
    elif not errors:
        parts.append("All checks passed!")
    fixable = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    hidden = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    if fixable:
        parts.append(f"[*] {fixable} fixable with `ptrlint --fix`.")
    if hidden and not unsafe_fixes:
        parts.append(
            f"{hidden} more fix{'es' if hidden != 1 else ''} available with `--fix --unsafe-fixes` (unsafe: review them)."
        )
    if errors:
        parts.append(f"{len(errors)} file{'s' if len(errors) != 1 else ''} could not be checked (see the E9xx lines).")
    return "\n".join(parts) + "\n"


def statistics(findings: list[Finding]) -> str:
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.safe)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        lines.append(f"{n:5d}\t{code}\t{mark} {rule_name(code)}")
    return "\n".join(lines) + ("\n" if lines else "")


def statistics_json(findings: list[Finding]) -> str:
    """``--statistics --output-format json``: per code, its name, count and whether a safe fix exists."""
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.safe)
    data = [
        {"code": code, "name": rule_name(code), "count": n, "fixable": bool(fixable[code])}
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return json.dumps(data, indent=2) + "\n"


def fixes_applied(applied: list[Finding]) -> str:
    """``--show-fixes``: the fixes applied, per file and code (as ruff lists them), then each one with the
    form it took and the reader that chose it (the fix's title: ``... (.view(torch.int64)): line 12: ...``)."""
    by_file: dict[str, Counter[str]] = {}
    for finding in applied:
        by_file.setdefault(finding.path, Counter())[finding.code] += 1
    total = sum(sum(c.values()) for c in by_file.values())
    lines = [f"Fixed {total} finding{'s' if total != 1 else ''}:"]
    for path in sorted(by_file):
        lines.append(f"- {clean(path)}:")
        for code, n in sorted(by_file[path].items()):
            lines.append(f"    {n} \u00d7 {code} ({rule_name(code)})")
        for finding in sorted((f for f in applied if f.path == path), key=Finding.sort_key):
            title = finding.fix.title if finding.fix is not None else ""
            lines.append(
                f"      {location(finding.path, finding.cell, finding.line, finding.column)}: "
                f"{finding.code} {clean(title)}"
            )
    return "\n".join(lines) + "\n"


def as_json(findings: list[Finding], errors: list[FileError]) -> str:
    """The findings, then the files that could not be checked (code E902, E903 or E999, no fix)."""
    data: list[dict[str, Any]] = [f.to_json() for f in findings]
    data += [e.to_json() for e in sorted(errors, key=lambda e: (e.path, e.line, e.column))]
    return json.dumps(data, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(findings: list[Finding], errors: list[FileError]) -> str:
    lines = []
    for f in findings:
        if f.cell is not None:  # a notebook: the annotation points at the line of the .ipynb file itself
            line = f.raw_line or 1
            where = f"line={line},endLine={line}"
        else:
            where = f"line={f.line},col={f.column},endLine={f.end_line},endColumn={f.end_column}"
        props = f"file={_escape_property(f.path)},{where},title={_escape_property(f.code + ' ' + f.name)}"
        command = "notice" if f.severity == NOTE else "error"
        cell = f" (cell {f.cell}, line {f.line})" if f.cell is not None else ""
        lines.append(f"::{command} {props}::{_escape_data(f.code + ' ' + f.message + cell)}")
    for e in errors:
        props = f"file={_escape_property(e.path)}" + (f",line={e.line},col={e.column}" if e.line else "")
        lines.append(f"::error {props},title={e.code} {e.name}::{_escape_data(e.code + ' ' + e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _uri(path: str) -> str:
    """A SARIF ``uri``: the relative path, percent-encoded (RFC 3986) but for its ``/`` separators."""
    return quote(Path(path).as_posix(), safe="/")


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _sarif_result(f: Finding, rule_index: int) -> dict[str, Any]:
    """One finding as a SARIF result: its region (a notebook's: the .ipynb line), evidence, fixes."""
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": "note" if f.severity == NOTE else "error",
        "message": {"text": f.message + (f" Failure: {f.failure}" if f.failure else "")},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    # a notebook: the line of the .ipynb file itself; the cell and its line are properties
                    "region": _region(f.line, f.column, f.end_line, f.end_column)
                    if f.cell is None
                    else {"startLine": f.raw_line or 1},
                },
                **(
                    {"properties": {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column}}
                    if f.cell is not None
                    else {}
                ),
            }
        ],
    }
    if f.related:
        result["relatedLocations"] = [
            {
                "id": i,
                "message": {"text": r.message},
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(r.path or f.path)},
                    "region": {"startLine": r.line, "startColumn": r.column},
                },
            }
            for i, r in enumerate(f.related)
        ]
    if f.fix is not None:  # the fix first, then the unsafe alternatives it offers
        result["fixes"] = [
            {
                "description": {"text": fix.title + ("" if fix.safe else " (unsafe)")},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "replacements": [
                            {
                                "deletedRegion": _region(*e.location, *e.end_location),
                                "insertedContent": {"text": e.text},
                            }
                            for e in fix.edits
                        ],
                    }
                ],
            }
            for fix in (f.fix, *f.fix.alternatives)
        ]
    return result


def sarif(findings: list[Finding], errors: list[FileError]) -> str:
    rules = []
    index = {}
    for i, rule in enumerate(load_rules()):  # every rule's documentation: the classes are loaded
        index[rule.code] = i
        rules.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {
                    "text": rule.doc.strip().split("## Why is this bad?")[0].replace("## What it does", "").strip()
                },
                "help": {"text": rule.doc.strip(), "markdown": rule.doc.strip()},
                "defaultConfiguration": {"level": "error"},
                "properties": {"fix": rule.fix_availability},
            }
        )
    results = [_sarif_result(f, index[f.code]) for f in findings]
    for e in sorted(errors, key=lambda e: (e.path, e.line, e.column)):  # a file not checked is a result too
        location: dict[str, Any] = {"artifactLocation": {"uri": _uri(e.path)}}
        if e.line:
            location["region"] = {"startLine": e.line, "startColumn": max(1, e.column)}
        results.append(
            {
                "ruleId": e.code,
                "level": "error",
                "message": {"text": e.message},
                "locations": [{"physicalLocation": location}],
            }
        )
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}],
        }
        for e in errors
    ]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "ptrlint", "version": __version__, "rules": rules}},
        "results": results,
    }
    if notifications:
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": notifications}]
    else:
        run["invocations"] = [{"executionSuccessful": True}]
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"
