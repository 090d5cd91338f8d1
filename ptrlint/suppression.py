"""Inline suppression: ``# ptrlint: ignore[PTR001,PTR002]``, ``# noqa: PTR001``, bare ``# noqa``.

Only a comment on the reported line counts (a comment on another line of a multi-line call
does not). Pure functions over comment strings.
"""

from __future__ import annotations

import re

_PTRLINT = re.compile(r"#\s*ptrlint\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def suppressed_codes(comments: list[str]) -> set[str] | None:
    """Codes suppressed by these comments; ``{"*"}`` for everything; None for nothing."""
    codes: set[str] = set()
    for comment in comments:
        for match in _PTRLINT.finditer(comment):
            listed = match.group("codes")
            if listed is None:
                codes.add("*")
            else:
                codes.update(c.strip().upper() for c in listed.split(",") if c.strip())
        for match in _NOQA.finditer(comment):
            listed = match.group("codes")
            if listed is None:
                codes.add("*")
            else:
                codes.update(c.upper() for c in re.split(r"[\s,]+", listed) if c)
    return codes or None


def is_suppressed(code: str, comments: list[str]) -> bool:
    codes = suppressed_codes(comments)
    return codes is not None and ("*" in codes or code in codes)
