"""Jupyter notebooks (``.ipynb``): their code cells as one Python text, and fixes written back.

The code cells are joined into one module (later cells see earlier cells' names), each preceded
by a marker comment line, so a position in the text maps to (cell, line) and a fixed text splits
back into cells. IPython magics are blanked: a cell that starts with ``%%`` and every line that
starts with ``%`` or ``!`` (inside a block: ``pass``). A fix rewrites only the JSON string(s) of
the lines it changed, so formatting, metadata and outputs stay byte for byte.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

MARKER = "# %% ptrlint cell {}\n"
_MARKER = re.compile(r"^# %% ptrlint cell (\d+)$")


class NotebookError(ValueError):
    """Not a notebook ptrlint can read (reported as E999 for that file, exit 2)."""


@dataclass
class Cell:
    number: int  # 1-based position among all the notebook's cells (what `cell N` reports)
    lines: list[str]  # the source lines, each with its newline (the last one may have none)
    code: list[str]  # the lines as the text holds them (magics blanked), each ending in a newline
    first_line: int  # 1-based line of the text where the cell's first line is
    span: tuple[int, int]  # where the cell's "source" value is in the raw JSON
    items: list[tuple[int, int]] | None  # spans of the source array's strings (None: one string)


class Notebook:
    def __init__(self, raw: str) -> None:
        self.raw = raw
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"invalid notebook JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("invalid notebook: no list of cells")
        metadata = data.get("metadata", {})
        if not isinstance(metadata, dict):
            raise NotebookError("invalid notebook: its metadata is not an object")
        info = metadata.get("language_info", {}) or {}
        language = info.get("name", "python") if isinstance(info, dict) else None
        self.python = language in ("python", "", None)
        try:
            spans = _source_spans(raw)
        except (AssertionError, IndexError, ValueError, KeyError) as exc:  # valid JSON, not a notebook's shape
            raise NotebookError("invalid notebook: cells of an unexpected shape") from exc
        self.cells: list[Cell] = []
        parts: list[str] = []
        line = 1
        for number, cell in enumerate(data["cells"], 1):
            if not isinstance(cell, dict):
                raise NotebookError(f"invalid notebook: cell {number} is not an object")
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            if not isinstance(source, (str, list)):
                raise NotebookError(f"invalid notebook: cell {number} has a non-text source")
            lines = source if isinstance(source, list) else source.splitlines(keepends=True)
            if not all(isinstance(s, str) for s in lines):
                raise NotebookError(f"invalid notebook: cell {number} has a non-text source")
            lines = _split("".join(lines))
            if number - 1 not in spans:
                raise NotebookError(f"invalid notebook: cannot locate the source of cell {number}")
            span, items = spans[number - 1]
            code = _blank_magics(lines)
            parts.append(MARKER.format(number))
            line += 1
            self.cells.append(Cell(number, lines, code, line, span, items))
            parts.extend(code)
            line += len(code)
        self.text = "".join(parts)

    # ----- positions -------------------------------------------------------------------------------
    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) of a 1-based line of :attr:`text`."""
        for cell in reversed(self.cells):
            if line >= cell.first_line:
                return cell.number, line - cell.first_line + 1
        return (self.cells[0].number if self.cells else 1), 1

    def raw_line(self, number: int, line: int) -> int:
        """The 1-based line of the raw JSON file where line ``line`` of cell ``number`` is written (the line
        of its string in a source array; of the cell's one source string otherwise), for tools that point
        into the file itself (GitHub annotations, SARIF regions)."""
        for cell in self.cells:
            if cell.number == number:
                if cell.items and 1 <= line <= len(cell.items):
                    offset = cell.items[line - 1][0]
                else:
                    offset = cell.span[0]
                return self.raw.count("\n", 0, offset) + 1
        return 1

    def cell_lines(self, number: int) -> list[str]:
        for cell in self.cells:
            if cell.number == number:
                return [s.rstrip("\r\n") for s in cell.lines]
        return []

    # ----- writing back ------------------------------------------------------------------------------
    def rewritten(self, new_text: str) -> str:
        """The raw notebook with the cells whose code ``new_text`` changed rewritten (and nothing else)."""
        segments = _segments(new_text)
        replacements: list[tuple[int, int, str]] = []
        ascii_only = self.raw.isascii()
        for cell in self.cells:
            new_code = segments.get(cell.number)
            if new_code is None or new_code == cell.code:
                continue
            new_lines = _restore_magics(cell, new_code)
            if cell.items is None:
                replacements.append((*cell.span, json.dumps("".join(new_lines), ensure_ascii=ascii_only)))
            else:
                replacements.extend(self._array_edits(cell, new_lines, ascii_only))
        out = self.raw
        for start, end, text in sorted(replacements, reverse=True):
            out = out[:start] + text + out[end:]
        return out

    def _array_edits(self, cell: Cell, new_lines: list[str], ascii_only: bool) -> list[tuple[int, int, str]]:
        """Edits of the source array's strings: changed lines get a new string, new lines a new
        element with the array's own separator; untouched lines keep their bytes."""
        items = cell.items or []
        old = cell.lines
        if len(items) != len(old):  # the array does not hold one string per line: rewrite it whole
            start, end = cell.span
            return [(start, end, json.dumps(new_lines, ensure_ascii=ascii_only))]
        separator = self.raw[items[0][1] : items[1][0]] if len(items) > 1 else ", "
        edits: list[tuple[int, int, str]] = []
        matcher = difflib.SequenceMatcher(a=old, b=new_lines, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                continue
            encoded = [json.dumps(s, ensure_ascii=ascii_only) for s in new_lines[j1:j2]]
            if i1 < i2:  # replace (or delete) the strings of old lines i1..i2
                start, end = items[i1][0], items[i2 - 1][1]
                edits.append((start, end, separator.join(encoded) if encoded else ""))
            elif i1 > 0:  # insert after old line i1-1
                at = items[i1 - 1][1]
                edits.append((at, at, "".join(separator + e for e in encoded)))
            else:
                at = items[0][0]
                edits.append((at, at, "".join(e + separator for e in encoded)))
        return edits

    def diff(self, path: str, new_raw: str) -> str:
        """A unified diff of the changed cells' sources (what a reviewer reads, not the JSON)."""
        new = Notebook(new_raw)
        out: list[str] = []
        for before, after in zip(self.cells, new.cells):
            if before.lines != after.lines:
                out.extend(
                    difflib.unified_diff(
                        _newline_ended(before.lines),
                        _newline_ended(after.lines),
                        fromfile=f"a/{path}:cell {before.number}",
                        tofile=f"b/{path}:cell {after.number}",
                    )
                )
        return "".join(out)


def _newline_ended(lines: list[str]) -> list[str]:
    return [s if s.endswith("\n") else s + "\n" for s in lines]


def _split(source: str) -> list[str]:
    return source.splitlines(keepends=True) if source else []


_MAGIC = re.compile(r"^[ \t]*[%!]")


def _blank_magics(lines: list[str]) -> list[str]:
    if lines and lines[0].lstrip().startswith("%%"):  # a cell magic: the whole cell is not Python
        return ["\n"] * len(lines)
    out = []
    for line in lines:
        if _MAGIC.match(line):
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            out.append(f"{indent}pass\n" if indent else "\n")
        else:
            out.append(line if line.endswith(("\n", "\r")) else line + "\n")
    return out


def _restore_magics(cell: Cell, new_code: list[str]) -> list[str]:
    """The new source lines: lines the fix left alone are the originals (magics come back), the
    others are the fixed text; the last line keeps the original's lack of a final newline."""
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=cell.code, b=new_code, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.extend(cell.lines[i1:i2])
        else:
            out.extend(new_code[j1:j2])
    if cell.lines and not cell.lines[-1].endswith(("\n", "\r")) and out and out[-1].endswith("\n"):
        out[-1] = out[-1][:-1]
    return out


def _segments(text: str) -> dict[int, list[str]]:
    segments: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines(keepends=True):
        match = _MARKER.match(line.rstrip("\r\n"))
        if match:
            current = segments.setdefault(int(match.group(1)), [])
        elif current is not None:
            current.append(line)
    return segments


# ----- where each cell's "source" is in the raw JSON (a small scanner that keeps positions) ---------
def _source_spans(raw: str) -> dict[int, tuple[tuple[int, int], list[tuple[int, int]] | None]]:
    """cell index -> (span of its "source" value, spans of the array's strings or None)."""
    scanner = _Scanner(raw)
    try:
        return scanner.notebook()
    except (IndexError, ValueError) as exc:
        raise NotebookError(f"invalid notebook JSON: {exc}") from exc


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def string(self) -> tuple[int, int]:
        start = self.i
        assert self.text[self.i] == '"'
        self.i += 1
        while self.text[self.i] != '"':
            self.i += 2 if self.text[self.i] == "\\" else 1
        self.i += 1
        return start, self.i

    def skip(self) -> tuple[int, int]:
        """Skip one value; its span."""
        self.ws()
        start = self.i
        ch = self.text[self.i]
        if ch == '"':
            return self.string()
        if ch in "{[":
            close = "}" if ch == "{" else "]"
            self.i += 1
            self.ws()
            if self.text[self.i] == close:
                self.i += 1
                return start, self.i
            while True:
                if ch == "{":
                    self.ws()
                    self.string()
                    self.ws()
                    self.i += 1  # the colon
                self.skip()
                self.ws()
                if self.text[self.i] == ",":
                    self.i += 1
                    self.ws()
                    continue
                self.i += 1  # the closing bracket
                return start, self.i
        match = re.compile(r"-?[\w.+-]+").match(self.text, self.i)
        if match is None:
            raise ValueError(f"unexpected character at offset {self.i}")
        self.i = match.end()
        return start, self.i

    def members(self) -> Iterator[str]:
        """Iterate an object's (key, value start) pairs; the caller consumes or skips each value."""
        self.ws()
        self.i += 1  # {
        self.ws()
        if self.text[self.i] == "}":
            self.i += 1
            return
        while True:
            self.ws()
            key_span = self.string()
            key = json.loads(self.text[key_span[0] : key_span[1]])
            self.ws()
            self.i += 1  # the colon
            self.ws()
            yield key
            self.ws()
            if self.text[self.i] == ",":
                self.i += 1
                continue
            self.i += 1  # }
            return

    def notebook(self) -> dict[int, tuple[tuple[int, int], list[tuple[int, int]] | None]]:
        found: dict[int, tuple[tuple[int, int], list[tuple[int, int]] | None]] = {}
        self.ws()
        for key in self.members():
            if key != "cells":
                self.skip()
                continue
            self.ws()
            self.i += 1  # [
            index = 0
            self.ws()
            if self.text[self.i] == "]":
                self.i += 1
                continue
            while True:
                self.ws()
                for cell_key in self.members():
                    if cell_key == "source":
                        self.ws()
                        if self.text[self.i] == "[":
                            start = self.i
                            self.i += 1
                            items: list[tuple[int, int]] = []
                            self.ws()
                            while self.text[self.i] != "]":
                                items.append(self.string())
                                self.ws()
                                if self.text[self.i] == ",":
                                    self.i += 1
                                    self.ws()
                            self.i += 1
                            found[index] = ((start, self.i), items)
                        else:
                            found[index] = (self.skip(), None)
                    else:
                        self.skip()
                index += 1
                self.ws()
                if self.text[self.i] == ",":
                    self.i += 1
                    continue
                self.i += 1  # ]
                break
        return found
