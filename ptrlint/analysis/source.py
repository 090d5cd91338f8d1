"""Positions for one decoded source text and its ast.

CPython's ast reports 1-based lines and UTF-8 *byte* columns. Findings report character
columns (1-based) and fixes work on character offsets into the decoded text, so every column
goes through :meth:`SourceMap.offset`. Lines split like CPython's tokenizer splits them
(``\\r\\n``, ``\\r`` or ``\\n``; a form feed is not a line break and does not restart columns).
Comments are tokenized on demand, one top-level statement at a time (only the statements that
hold a finding on a line with a ``#`` pay), so asking costs what the finding's statement costs,
never the whole module.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from collections.abc import Iterable
from itertools import accumulate, repeat
from operator import add

_NEWLINE = re.compile(r"\r\n|\r|\n")
Span = tuple[int, int]  # [start, end) character offsets into the text


def first_line(stmt: ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, for a decorated definition."""
    decorators: Iterable[ast.expr] = getattr(stmt, "decorator_list", ())
    return min([stmt.lineno, *(d.lineno for d in decorators)])


class SourceMap:
    def __init__(self, text: str, module: ast.Module | None = None) -> None:
        """``module``: the text's ast, whose top-level statements bound what a comment question tokenizes
        (without it, the first question tokenizes the whole text)."""
        self.text = text
        if "\r" in text:
            starts = [0]
            starts.extend(m.end() for m in _NEWLINE.finditer(text))
        else:  # every line ends in "\n": its start follows the previous one by its length + 1, in C
            starts = list(accumulate(map(add, map(len, text.split("\n")), repeat(1)), initial=0))
            starts.pop()  # past the end
        self.line_starts = starts
        match = _NEWLINE.search(text)
        self.newline = match.group(0) if match else "\n"
        self._comments: dict[int, list[str]] = {}
        self._tokenized: set[int] = set()  # first lines of the statements tokenized so far
        self._statements: tuple[list[int], list[int]] | None = (
            None  # (first lines, last lines) of the module's statements
        )
        if module is not None:  # statements that share a line (`a = 1; b = 2`) are tokenized together
            firsts: list[int] = []
            lasts: list[int] = []
            for stmt in module.body:
                first = first_line(stmt)
                last = stmt.end_lineno or stmt.lineno
                if lasts and first <= lasts[-1]:
                    lasts[-1] = max(lasts[-1], last)
                else:
                    firsts.append(first)
                    lasts.append(last)
            self._statements = (firsts, lasts)
        self._ascii = text.isascii()

    # ----- positions ---------------------------------------------------------------------------
    def offset(self, line: int, byte_column: int) -> int:
        """Character offset of ast's (line, UTF-8 byte column)."""
        start = self.line_starts[line - 1]
        if self._ascii:
            return start + byte_column
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        segment = self.text[start:end]
        if segment.isascii():
            return start + byte_column
        return start + len(segment.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def span(self, node: ast.AST) -> Span:
        return self.start(node), self.end(node)

    def attribute_name_span(self, node: ast.Attribute) -> Span:
        """The span of the name after the dot (ast keeps the attribute name as a plain string)."""
        end = self.end(node)
        return end - len(node.attr), end

    def line_column(self, offset: int) -> tuple[int, int]:
        """1-based (line, character column) of an offset."""
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def segment(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    # ----- comments ----------------------------------------------------------------------------
    def comments(self, line: int) -> list[str]:
        """Comment tokens on ``line``."""
        if "#" not in self.line_text(line):
            return []
        first, last = 1, len(self.line_starts)
        if self._statements is not None:
            firsts, lasts = self._statements
            at = bisect.bisect_right(firsts, line) - 1
            if at >= 0 and line <= lasts[at]:
                first, last = firsts[at], lasts[at]
            else:  # between statements: only comments and blank lines
                first = last = line
        if first not in self._tokenized:
            self._tokenized.add(first)
            self._tokenize(first, last)
        return self._comments.get(line, [])

    def _tokenize(self, first: int, last: int) -> None:
        """Record the comments of lines ``first``..``last`` (whole statements: the tokenizer starts
        there outside any string or bracket)."""
        start = self.line_starts[first - 1]
        end = self.line_starts[last] if last < len(self.line_starts) else len(self.text)
        try:
            for tok in tokenize.generate_tokens(io.StringIO(self.text[start:end], newline=None).readline):
                if tok.type == tokenize.COMMENT:
                    self._comments.setdefault(first - 1 + tok.start[0], []).append(tok.string)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
