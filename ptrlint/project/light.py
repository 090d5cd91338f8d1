"""Light summaries: what a module with no pointer evidence tells the others, read without parsing
(its classes, with dataclass/NamedTuple fields for positional arguments, and its re-exports)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..analysis.semantic.syntax import CREATION_LAST_NAMES
from .imports import imported_bindings
from .summary import ModuleSummary


def light_summary(
    text: str, module: str, is_package: bool, path: str, bindings: dict[str, str] | None = None
) -> ModuleSummary:
    """What a module with no pointer evidence can tell the others, read without parsing: its classes
    (with dataclass/NamedTuple fields, for positional arguments) and what it re-exports."""
    summary = ModuleSummary(module, path)
    for match in _top_level_classes(text):
        name, bases = match.group(1), match.group(2) or ""
        line_start = match.start()
        previous = text[text.rfind("\n", 0, max(line_start - 1, 0)) + 1 : line_start]
        fields: list[str] = []
        if "dataclass" in previous or "NamedTuple" in bases:
            fields = _body_fields(text, text.find("\n", match.end()) + 1)
        summary.classes[name] = fields
    summary.exports = bindings if bindings is not None else imported_bindings(text, module, is_package)
    for match in _PATCH.finditer(text) if _PATCHED_CREATION.search(text) else ():
        alias, rest, function = match.groups()  # `torch.empty = _empty`: a module function in a creation's place
        if rest.rpartition(".")[2] not in CREATION_LAST_NAMES:
            continue
        if alias in summary.exports and re.search(rf"^(?:async\s+)?def\s+{re.escape(function)}\b", text, re.MULTILINE):
            summary.patches[f"{summary.exports[alias]}.{rest}"] = f"{module}.{function}"
    summary.imports = sorted({q.rpartition(".")[0] or q for q in summary.exports.values()})
    return summary


_PATCHED_CREATION = re.compile(
    r"\.(?:" + "|".join(sorted(CREATION_LAST_NAMES)) + r")[ \t]*=[ \t]*[A-Za-z_]"
)  # a cheap gate
_PATCH = re.compile(r"^([A-Za-z_]\w*)\.([A-Za-z_][\w.]*)[ \t]*=[ \t]*([A-Za-z_]\w*)[ \t]*(?:#[^\n]*)?$", re.MULTILINE)


def _top_level_classes(text: str) -> Iterable[re.Match[str]]:
    """``class`` statements at column 0 (found with ``str.find``: a regex scan is slower here)."""
    candidates = [0] if text.startswith("class") else []
    at = text.find("\nclass")
    while at != -1:
        candidates.append(at + 1)
        at = text.find("\nclass", at + 1)
    for start in candidates:
        match = _CLASS.match(text, start)
        if match is not None:
            yield match


def _body_fields(text: str, at: int) -> list[str]:
    """The annotated names at the first indentation level of the class body that starts at ``at``.
    Lines inside a triple-quoted string (the class docstring's ``Args:``) are no fields and do not
    end the body."""
    fields: list[str] = []
    body_indent = None
    open_quote = ""  # the delimiter of the triple-quoted string a line is inside, if any
    while 0 < at < len(text):
        end = text.find("\n", at)
        body = text[at:] if end == -1 else text[at:end]
        at = len(text) if end == -1 else end + 1
        if open_quote:
            if body.count(open_quote) % 2 == 1:
                open_quote = ""
            continue
        quote = _opened_string(body)
        if quote:
            open_quote = quote
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        indent = len(body) - len(body.lstrip())
        if body_indent is None:
            body_indent = indent
        if indent < body_indent or indent == 0:
            break
        field = _FIELD.match(body)
        if indent == body_indent and field and "ClassVar" not in body:
            fields.append(field.group(1))
    return fields


def _opened_string(line: str) -> str:
    """The triple quote a line leaves open (an odd count of the first one it holds), or ""."""
    found = [(line.find(q), q) for q in ('"""', "'''") if q in line]
    if not found:
        return ""
    quote = min(found)[1]
    return quote if line.count(quote) % 2 == 1 else ""


_CLASS = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_FIELD = re.compile(r"^[ \t]+(\w+)[ \t]*:(?!=)")
