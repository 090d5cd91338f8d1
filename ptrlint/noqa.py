"""``--add-noqa``: a baseline for adopting ptrlint, one ``# noqa: CODE`` per line with a finding."""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field

from .analysis.source import SourceMap
from .findings import IO_ERROR, FileError, Finding
from .rewrite.apply import FileChangedError, write_atomic
from .sources import decode, read_bytes, unified_diff


@dataclass
class NoqaOutcome:
    added: int = 0
    diff: str = ""
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why no comment could go there)
    error: FileError | None = None


_NOQA_CODES = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.IGNORECASE)


def add_noqa(path: str, findings: list[Finding], write: bool = True, roots: tuple[str, ...] = ()) -> NoqaOutcome:
    """Append ``# noqa: CODE`` to every line with a finding (merging into a ``# noqa: ...`` already
    there); lines that end inside a string or with a backslash continuation are left alone."""
    outcome = NoqaOutcome()
    notebook = None
    try:
        real = os.path.realpath(path)
        data = read_bytes(real)
        if path.endswith(".ipynb"):
            from .notebook import Notebook

            notebook = Notebook(data.decode("utf-8"))
            text, encoding = notebook.text, "utf-8"
        else:
            text, encoding = decode(data)
    except (OSError, ValueError, SyntaxError, LookupError) as exc:
        outcome.error = FileError(path, f"cannot add noqa comments: {exc}", code=IO_ERROR)
        return outcome
    codes_by_line: dict[int, set[str]] = {}
    for f in findings:
        line = f.line
        if notebook is not None and f.cell is not None:
            cell = next(c for c in notebook.cells if c.number == f.cell)
            line = cell.first_line + f.line - 1
        codes_by_line.setdefault(line, set()).add(f.code)
    blocked = _lines_without_room_for_a_comment(text)
    source = SourceMap(text)
    edits: list[tuple[int, int, str]] = []
    for line, codes in sorted(codes_by_line.items()):
        if line in blocked:
            outcome.skipped.append((line, blocked[line]))
            continue
        start = source.line_starts[line - 1]
        end = start + len(source.line_text(line))
        existing = _NOQA_CODES.search(text, start, end)
        if existing is not None:
            listed = {c.upper() for c in re.split(r"[\s,]+", existing.group(1)) if c}
            missing = sorted(codes - listed)
            if missing:
                edits.append((existing.end(1), existing.end(1), ", " + ", ".join(missing)))
                outcome.added += 1
            continue
        edits.append((end, end, "  # noqa: " + ", ".join(sorted(codes))))
        outcome.added += 1
    if not edits:
        return outcome
    new_text = text
    for start, end, insert in sorted(edits, reverse=True):
        new_text = new_text[:start] + insert + new_text[end:]
    if notebook is not None:
        new_raw = notebook.rewritten(new_text)
        outcome.diff = notebook.diff(path, new_raw)
        new_bytes = new_raw.encode("utf-8")
    else:
        outcome.diff = unified_diff(path, text, new_text)
        new_bytes = new_text.encode(encoding)
    if write:
        if roots and not any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            outcome.error = FileError(
                path, f"no noqa comments written: the file resolves to {real}, outside the folders given", code=IO_ERROR
            )
            outcome.added = 0
            return outcome
        try:
            write_atomic(real, new_bytes, data)
        except (FileChangedError, OSError) as exc:
            outcome.error = FileError(path, f"cannot write noqa comments: {exc}", code=IO_ERROR)
            outcome.added = 0  # nothing was written: say so, not "Added N"
    return outcome


def _lines_without_room_for_a_comment(text: str) -> dict[int, str]:
    """Lines where a trailing comment would change the code: inside or at the start of a
    multi-line string, or ending in a backslash continuation."""
    blocked: dict[int, str] = {}
    line: int | str  # a line number, then a line's text
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                for line in range(tok.start[0], tok.end[0]):
                    blocked[line] = "the line ends inside a multi-line string"
            elif tok.type in (tokenize.FSTRING_START,) if hasattr(tokenize, "FSTRING_START") else ():
                pass
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(text.splitlines(), 1):
        if line.rstrip().endswith("\\") and number not in blocked:
            blocked[number] = "the line ends in a backslash continuation"
    return blocked
