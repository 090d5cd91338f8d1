"""Positions for one decoded source text and its ast.

CPython's ast reports 1-based lines and UTF-8 *byte* columns. Findings report character
columns (1-based) and fixes work on character offsets into the decoded text, so every column
goes through :meth:`SourceMap.offset`. Lines split like CPython's tokenizer splits them
(``\\r\\n``, ``\\r`` or ``\\n``; a form feed is not a line break and does not restart columns).
Comments are tokenized once, on demand (only files with findings pay).
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from itertools import accumulate, repeat
from operator import add

_NEWLINE = re.compile(r"\r\n|\r|\n")
Span = tuple[int, int]  # [start, end) character offsets into the text


class SourceMap:
    def __init__(self, text: str) -> None:
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
        self._comments: dict[int, list[str]] | None = None
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
        if self._comments is None:
            self._comments = {}
            try:
                for tok in tokenize.generate_tokens(io.StringIO(self.text, newline=None).readline):
                    if tok.type == tokenize.COMMENT:
                        self._comments.setdefault(tok.start[0], []).append(tok.string)
            except (tokenize.TokenError, SyntaxError, IndentationError):
                pass
        return self._comments.get(line, [])
