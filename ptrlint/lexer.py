"""Where a Python text's comments and prose strings lie, found without parsing.

The prefilter asks whether a word stands in code: a word in a comment, or in a triple-quoted string
that spans lines (a docstring, a message, a C++ or CUDA source held as a string), leaves no
identifier, attribute or string key in the ast, so it cannot be pointer evidence. One left-to-right
regex scan finds each comment and string as CPython's tokenizer does (prefixes, escapes, triple
quotes), and only as far as a question needs.

The scan is exact for the grammar up to Python 3.11. Where it cannot be sure (an f-string whose
replacement fields nest quotes, as Python 3.12 allows, or a quote that opens no string it knows),
everything from there on counts as code, so an unsure scan can only keep a file, never drop one.
"""

from __future__ import annotations

import bisect
import re

# A run of comment lines, a string (its prefix is read off the text before it, so that every
# alternative starts with `#` or a quote, which the regex engine finds at memchr speed), or a lone
# quote (no string this scan knows: unsure from here).
_LEXEME = re.compile(
    r"""
  \#[^\n]*(?:\n[ \t]*\#[^\n]*)*
| '''(?P<single3>[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*)'''
| \"\"\"(?P<double3>[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*)\"\"\"
| '[^'\\\n]*(?:\\.[^'\\\n]*)*'
| "[^"\\\n]*(?:\\.[^"\\\n]*)*"
| ['"]
""",
    re.VERBOSE | re.DOTALL,
)


class ProseMap:
    """Answers "is this offset in a comment or a multi-line string?" for one text, scanning lazily
    up to the furthest offset asked about."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lexemes = _LEXEME.finditer(text)
        self._starts: list[int] = []  # prose spans so far, in order
        self._ends: list[int] = []
        self._string_starts: list[int] = []  # spans of the other strings but f-strings, in order
        self._string_ends: list[int] = []
        self._scanned = 0  # the text before this offset is classified
        self._unsure = len(text) + 1  # from here on, everything counts as code
        self._fstring_starts: list[int] = []  # spans of the f-strings, in order
        self._fstring_ends: list[int] = []
        self._depth_at = (0, 0)  # (offset, brackets open there): where the last count of brackets stopped

    def is_prose(self, offset: int) -> bool:
        """Whether ``offset`` lies inside a comment or a triple-quoted string that spans lines."""
        while self._scanned <= offset and self._unsure > len(self._text):
            self._advance()
        if offset >= self._unsure:
            return False
        at = bisect.bisect_right(self._starts, offset) - 1
        return at >= 0 and offset < self._ends[at]

    def string_end(self, offset: int) -> int | None:
        """Where the string literal that holds ``offset`` ends (after its closing quote), for a string
        that is not prose and no f-string (whose replacement fields are code); None elsewhere."""
        while self._scanned <= offset and self._unsure > len(self._text):
            self._advance()
        if offset >= self._unsure:
            return None
        at = bisect.bisect_right(self._string_starts, offset) - 1
        return self._string_ends[at] if at >= 0 and offset < self._string_ends[at] else None

    def in_literal(self, offset: int) -> bool | None:
        """Whether ``offset`` lies inside a comment or any string (f-strings too), past its first
        character; None where the scan is unsure."""
        while self._scanned <= offset and self._unsure > len(self._text):
            self._advance()
        if offset >= self._unsure:
            return None
        for starts, ends in (
            (self._starts, self._ends),
            (self._string_starts, self._string_ends),
            (self._fstring_starts, self._fstring_ends),
        ):
            at = bisect.bisect_left(starts, offset) - 1
            if at >= 0 and offset < ends[at]:
                return True
        return False

    def in_brackets(self, offset: int) -> bool | None:
        """Whether a bracket of code (no comment's, no string's) is open at ``offset``: there a name
        followed by ``:`` is a key, a slice or a parameter's type, never an annotated statement.
        None where the scan is unsure. Counted on from the last offset asked about when that lies
        before ``offset`` (the prefilter asks in text order, and rarely)."""
        while self._scanned <= offset and self._unsure > len(self._text):
            self._advance()
        if offset >= self._unsure:
            return None
        start, depth = self._depth_at if self._depth_at[0] <= offset else (0, 0)
        skipped: list[tuple[int, int]] = []  # the comments and strings that overlap start:offset, in order
        for starts, ends in (
            (self._starts, self._ends),
            (self._string_starts, self._string_ends),
            (self._fstring_starts, self._fstring_ends),
        ):
            first = max(0, bisect.bisect_right(starts, start) - 1)
            last = bisect.bisect_left(starts, offset)
            skipped.extend((starts[i], ends[i]) for i in range(first, last) if ends[i] > start)
        skipped.sort()
        text, at = self._text, start
        for begin, end in (*skipped, (offset, offset)):
            if begin > at:
                depth += _opened(text, at, begin)
            at = max(at, end)
        self._depth_at = (offset, depth)
        return depth > 0

    def _advance(self) -> None:
        match = next(self._lexemes, None)
        if match is None:
            self._scanned = len(self._text) + 1
            return
        self._scanned = match.end()
        token = match.group()
        if token[0] == "#":
            self._starts.append(match.start())
            self._ends.append(match.end())
            return
        if len(token) == 1:  # a quote that opens no string: the rest of the text is unsure
            self._unsure = match.start()
            return
        if _is_fstring(self._text, match.start()):
            # an f-string's replacement fields are code; a field left open means a quote nested
            # inside it ended the scan's string early (Python 3.12): unsure from here
            if not _fields_closed(token):
                self._unsure = match.start()
            self._fstring_starts.append(match.start())
            self._fstring_ends.append(match.end())
            return
        body = match.group("single3")
        if body is None:
            body = match.group("double3")
        if body is not None and "\n" in body:
            self._starts.append(match.start())
            self._ends.append(match.end())
        else:
            self._string_starts.append(match.start())
            self._string_ends.append(match.end())


def is_word_char(char: str) -> bool:
    """``\\w`` of a str regex: letters, digits (Unicode's alphanumerics) and ``_``."""
    return char == "_" or char.isalnum()


def skip_space_back(text: str, at: int) -> int:
    """The offset after the last non-space character before ``at`` (line breaks and continuations count as space)."""
    while at > 0 and text[at - 1] in _SPACE:
        at -= 1
    return at


def skip_space_ahead(text: str, at: int) -> int:
    """The offset of the first non-space character from ``at`` on."""
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


_SPACE = " \t\f\r\n\\"


def _opened(text: str, start: int, end: int) -> int:
    """Brackets opened minus brackets closed in ``text[start:end]``."""
    count = text.count
    return (
        count("(", start, end)
        + count("[", start, end)
        + count("{", start, end)
        - count(")", start, end)
        - count("]", start, end)
        - count("}", start, end)
    )


def _fields_closed(literal: str) -> bool:
    """Every replacement field of an f-string literal is closed: outside a field ``{{`` and ``}}``
    are literal braces; inside one (a nested format spec, ``{x:>{width}}``) braces nest."""
    depth = 0
    skip = -1
    for brace in _BRACE.finditer(literal):
        at = brace.start()
        if at == skip:
            continue
        following = literal[at + 1 : at + 2]
        if brace.group() == "{":
            if depth == 0 and following == "{":
                skip = at + 1
            else:
                depth += 1
        elif depth == 0:
            if following != "}":
                return False
            skip = at + 1
        else:
            depth -= 1
    return depth == 0


_BRACE = re.compile(r"[{}]")


def _is_fstring(text: str, quote: int) -> bool:
    """Whether the string opening at ``quote`` has an ``f`` prefix (``f``, ``rf``, ``fr``, any case)."""
    last = text[quote - 1 : quote] if quote else ""
    if last in ("f", "F"):
        return True
    return last in ("r", "R", "b", "B") and quote >= 2 and text[quote - 2] in ("f", "F")


# ----- top-level statements ------------------------------------------------------------------------
# Code at column 0 (no space, comment or closing bracket): where a top-level statement may start.
_STATEMENT_CANDIDATE = re.compile(r"^[^\s#)\]}]", re.MULTILINE)
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")  # continues the compound statement before it
# A comment or a whole string (triple-quoted first), as _LEXEME reads them, removed before brackets are counted.
_LITERALS = re.compile(
    r"""
  \#[^\n]*
| '''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''
| \"\"\"[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*\"\"\"
| '[^'\\\n]*(?:\\.[^'\\\n]*)*'
| "[^"\\\n]*(?:\\.[^"\\\n]*)*"
""",
    re.VERBOSE | re.DOTALL,
)


def statement_starts(text: str) -> list[int]:
    """Offsets at which the top-level statements of ``text`` start, in order, 0 first.

    A top-level statement starts on a line whose first character is code at column 0, outside any
    string, comment or open bracket, not after a line continuation, and not a clause that continues
    the statement before (``else``, ``elif``, ``except``, ``finally``); a decorated definition
    starts at its first decorator. Where the lexer is unsure, the whole text is one statement."""
    return statement_codes(text)[0]


def statement_codes(text: str) -> tuple[list[int], list[str]]:
    """:func:`statement_starts`, and each statement's code: its text without comments and strings.

    The text between two candidate lines is read with one regex (its comments and strings removed,
    its brackets counted); where a string runs past such a line, the exact scan of
    :class:`ProseMap` decides instead."""
    starts = [0]
    codes: list[str] = []
    current: list[str] = []  # the code of the statement being read, piece by piece
    decorated = text.startswith("@")
    depth, previous = 0, 0
    for match in _STATEMENT_CANDIDATE.finditer(text, 1):
        at = match.start()
        code = _LITERALS.sub("", text[previous:at])
        previous = at
        depth += _opened(code, 0, len(code))
        if "'" in code or '"' in code or depth < 0:
            # a string spans the line (or the regex cannot read it): the exact scan
            exact = _statement_starts_exact(text)
            return exact, [_LITERALS.sub("", text[a:b]) for a, b in zip(exact, [*exact[1:], len(text)])]
        current.append(code)
        if depth:
            continue
        starts_here, decorated = _starts_statement(text, at, decorated)
        if starts_here:
            starts.append(at)
            codes.append("".join(current))
            current = []
    current.append(_LITERALS.sub("", text[previous:]))
    codes.append("".join(current))
    return starts, codes


def _statement_starts_exact(text: str) -> list[int]:
    """:func:`statement_starts` with every line asked of :class:`ProseMap` (strings that span lines)."""
    prose = ProseMap(text)
    starts = [0]
    decorated = text.startswith("@")
    for match in _STATEMENT_CANDIDATE.finditer(text, 1):
        at = match.start()
        inside = prose.in_literal(at)
        brackets = prose.in_brackets(at) if inside is False else None
        if inside is None or (inside is False and brackets is None):
            return [0]  # unsure: one statement
        if inside or brackets:
            continue
        starts_here, decorated = _starts_statement(text, at, decorated)
        if starts_here:
            starts.append(at)
    return starts


def _starts_statement(text: str, at: int, decorated: bool) -> tuple[bool, bool]:
    """Whether a line of code at column 0 outside brackets and strings starts a statement, and
    whether the statement open after it is a decorated definition still to come: not after a line
    continuation, not a clause of the statement before, not the definition after its decorators."""
    if _continued(text, at) or _CLAUSE.match(text, at):
        return False, decorated
    if decorated:  # the definition after its decorators, or the next decorator
        return False, text.startswith("@", at)
    return True, text.startswith("@", at)


def _continued(text: str, at: int) -> bool:
    """Whether the line before ``at`` ends in a backslash (the statement goes on)."""
    end = at - 1
    if end > 0 and text[end] == "\n" and text[end - 1] == "\r":
        end -= 1
    return end > 0 and text[end - 1] == "\\"
