"""Where a module's top-level statements start, found without parsing: a fix is rendered on the
statements that carry its edits, so its cost follows what it changes, not the module's size.

A top-level statement starts on a line whose first character is code at column 0, outside any
string, comment or open bracket, not after a line continuation, and not a clause that continues
the statement before (``else``, ``elif``, ``except``, ``finally``); a decorated definition starts
at its first decorator. Where the lexer is unsure (see :mod:`ptrlint.lexer`), the whole text is
one statement. A wrong guess can only cut a piece libcst cannot parse; the caller then renders
on the whole text.
"""

from __future__ import annotations

import re

from ..lexer import ProseMap

_CANDIDATE = re.compile(r"^[^\s#)\]}]", re.MULTILINE)
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")


def statement_starts(text: str) -> list[int]:
    """Offsets at which the top-level statements of ``text`` start, in order, 0 first."""
    prose = ProseMap(text)
    starts = [0]
    decorated = text.startswith("@")
    for match in _CANDIDATE.finditer(text):
        at = match.start()
        if at == 0:
            continue
        inside = prose.in_literal(at)
        brackets = prose.in_brackets(at) if inside is False else None
        if inside is None or (inside is False and brackets is None):
            return [0]  # unsure: one statement
        if inside or brackets or _continued(text, at) or _CONTINUES.match(text, at):
            continue
        if decorated:  # the definition after its decorators, or the next decorator
            decorated = text.startswith("@", at)
            continue
        decorated = text.startswith("@", at)
        starts.append(at)
    return starts


def _continued(text: str, at: int) -> bool:
    """Whether the line before ``at`` ends in a backslash (the statement goes on)."""
    end = at - 1
    if end > 0 and text[end] == "\n" and text[end - 1] == "\r":
        end -= 1
    return end > 0 and text[end - 1] == "\\"
