"""Formatters: findings -> text, JSON, GitHub annotations, SARIF 2.1.0. Pure; no I/O."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from . import __version__
from .model import FileError, Finding
from .rules import ALL_RULES, RULES_BY_CODE

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(findings: list[Finding], errors: list[FileError], show_evidence: bool = False,
         unsafe_fixes: bool = False) -> str:
    lines: list[str] = []
    for f in findings:
        marker = ""
        if f.fix is not None and (f.fix.safe or unsafe_fixes):
            marker = " [*]"
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}{marker}")
        if show_evidence:
            for r in f.related:
                lines.append(f"    {r.path or f.path}:{r.line}:{r.column}: {r.message}")
    for e in errors:
        where = f"{e.path}:{e.line}:{e.column}" if e.line else e.path
        lines.append(f"{where}: E999 {e.message}")
    return "\n".join(lines) + ("\n" if lines else "")


def summary(findings: list[Finding], errors: list[FileError], fixed: int, unsafe_fixes: bool) -> str:
    parts: list[str] = []
    total = len(findings)
    if total or fixed:
        head = f"Found {total + fixed} finding{'s' if total + fixed != 1 else ''}"
        if fixed:
            head += f" ({fixed} fixed, {total} remaining)"
        parts.append(head + ".")
    elif not errors:
        parts.append("All checks passed!")
    fixable = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    hidden = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    if fixable:
        parts.append(f"[*] {fixable} fixable with `ptrlint --fix`.")
    if hidden and not unsafe_fixes:
        parts.append(f"{hidden} more fix{'es' if hidden != 1 else ''} available with `--fix --unsafe-fixes` (unsafe: review them).")
    if errors:
        parts.append(f"{len(errors)} file{'s' if len(errors) != 1 else ''} could not be checked (see E999 lines).")
    return "\n".join(parts) + "\n"


def statistics(findings: list[Finding]) -> str:
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.safe)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        lines.append(f"{n:5d}\t{code}\t{mark} {RULES_BY_CODE[code].name}")
    return "\n".join(lines) + ("\n" if lines else "")


def as_json(findings: list[Finding], errors: list[FileError]) -> str:
    data: list[dict[str, Any]] = [f.to_json() for f in findings]
    return json.dumps(data, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(findings: list[Finding], errors: list[FileError]) -> str:
    lines = []
    for f in findings:
        props = (
            f"file={_escape_property(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={_escape_property(f.code + ' ' + f.name)}"
        )
        lines.append(f"::error {props}::{_escape_data(f.code + ' ' + f.message)}")
    for e in errors:
        props = f"file={_escape_property(e.path)}" + (f",line={e.line},col={e.column}" if e.line else "")
        lines.append(f"::error {props},title=E999::{_escape_data(e.message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def _uri(path: str) -> str:
    return Path(path).as_posix()


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def sarif(findings: list[Finding], errors: list[FileError]) -> str:
    rules = []
    index = {}
    for i, rule in enumerate(ALL_RULES):
        index[rule.code] = i
        rules.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.doc.strip().split("## Why is this bad?")[0].replace("## What it does", "").strip()},
            "help": {"text": rule.doc.strip(), "markdown": rule.doc.strip()},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fix": rule.fix_availability},
        })
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error",
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path)},
                    "region": _region(f.line, f.column, f.end_line, f.end_column),
                }
            }],
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
        if f.fix is not None:
            result["fixes"] = [{
                "description": {"text": f.fix.title + ("" if f.fix.safe else " (unsafe)")},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path)},
                    "replacements": [
                        {
                            "deletedRegion": _region(*e.location, *e.end_location),
                            "insertedContent": {"text": e.text},
                        }
                        for e in f.fix.edits
                    ],
                }],
            }]
        results.append(result)
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
