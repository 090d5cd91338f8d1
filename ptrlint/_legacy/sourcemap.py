"""Positions and offsets for one decoded source text (lazily computed: only files with findings pay)."""

from __future__ import annotations

import io
import re
import tokenize

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceMap:
    def __init__(self, text: str, wrapper: MetadataWrapper) -> None:
        self.text = text
        self._wrapper = wrapper
        self._positions: dict[cst.CSTNode, CodeRange] | None = None
        starts = [0]
        starts.extend(m.end() for m in _NEWLINE.finditer(text))
        self.line_starts = starts
        match = _NEWLINE.search(text)
        self.newline = match.group(0) if match else "\n"
        self._comments: dict[int, list[str]] | None = None

    def range(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            self._positions = dict(self._wrapper.resolve(PositionProvider))
        return self._positions[node]

    def line_of(self, node: cst.CSTNode) -> int:
        return self.range(node).start.line

    def column_base(self, line: int) -> int:
        """Offset from which libcst counts columns on ``line``.

        Like CPython's tokenizer, libcst restarts the column after a form feed in the leading
        whitespace of a line, so the base is just past the last such form feed.
        """
        start = self.line_starts[line - 1]
        if "\x0c" not in self.text[start:start + 256]:
            return start
        i = start
        base = start
        while i < len(self.text) and self.text[i] in " \t\x0c":
            if self.text[i] == "\x0c":
                base = i + 1
            i += 1
        return base

    def offset(self, line: int, column: int) -> int:
        return self.column_base(line) + column

    def start(self, node: cst.CSTNode) -> int:
        pos = self.range(node).start
        return self.offset(pos.line, pos.column)

    def end(self, node: cst.CSTNode) -> int:
        pos = self.range(node).end
        return self.offset(pos.line, pos.column)

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def line_end(self, offset: int) -> int:
        """Offset of the newline that ends the physical line holding ``offset``."""
        match = _NEWLINE.search(self.text, offset)
        return match.start() if match else len(self.text)

    def comments(self, line: int) -> list[str]:
        """Comment tokens that end on ``line`` (tokenized once, on demand)."""
        if self._comments is None:
            self._comments = {}
            try:
                for tok in tokenize.generate_tokens(io.StringIO(self.text).readline):
                    if tok.type == tokenize.COMMENT:
                        self._comments.setdefault(tok.start[0], []).append(tok.string)
            except (tokenize.TokenError, SyntaxError, IndentationError):
                pass
        return self._comments.get(line, [])
