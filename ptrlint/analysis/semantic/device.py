"""Device code: kernels written in Triton, CuTe DSL, numba.cuda, Warp or cuda.tile.

A kernel body runs (or is traced) on the device: it cannot create or fill a torch tensor or a
numpy array, so it holds no evidence and no finding. Kernel-heavy files are mostly such bodies
(two thirds of flashinfer's syntax nodes), and parsing is most of the cost of a cold run, so the
engine blanks kernel bodies *in the text* before CPython parses it: every line of a body becomes
empty except the first, which becomes ``...``. Lines, columns and everything outside the bodies
stay as they were. The blanking is textual (decorator lines outside triple-quoted strings, then
indentation), so it is checked against the tree it produces; any doubt means the file is parsed
whole (:func:`parse_host`).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate
from typing import Callable

from .syntax import dotted

# Decorator spellings (the dotted callee, with or without a call) that make a function device code.
DEVICE_DECORATORS = frozenset(
    {
        "triton.jit",
        "triton.autotune",
        "triton.heuristics",
        "gluon.jit",
        "cute.jit",
        "cute.kernel",
        "cute.experimental.jit",
        "cute.experimental.kernel",
        "cutlass.cute.jit",
        "cutlass.cute.kernel",
        "cuda.jit",
        "numba.cuda.jit",
        "wp.kernel",
        "warp.kernel",
        "ct.kernel",
    }
)
_DECORATOR_LINE = re.compile(r"^([ \t]*)@[ \t]*([A-Za-z_][\w.]*)")
_DEF_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]")
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def is_device_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return dotted(target) in DEVICE_DECORATORS


def is_device_function(node: ast.AST) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        is_device_decorator(d) for d in node.decorator_list
    )


def blank_device_bodies(text: str, by_lines: bool = False) -> tuple[str, list[tuple[int, int]]] | None:
    """``text`` with every device function body blanked, and the (first, last) 1-based line of
    each blanked body; None when there is nothing to blank.

    Decorator lines and the ends of bodies are found by regular expressions over the whole text
    when it holds no tab and no carriage return (indentation is then a count of spaces, and every
    line ends in ``\\n``); otherwise, or with ``by_lines``, line by line. Both give the same
    answer (tests/linter/test_device.py): a kernel-heavy file is mostly body lines, which the line
    loop visited one by one in Python (2 s of CPU on flashinfer's files)."""
    if "@" not in text:
        return None
    fast = not by_lines and "\t" not in text and "\r" not in text
    if fast:
        ats = _decorator_offsets(text)
        if not ats:
            return None  # no line opens with a device decorator: nothing to split
        lines = _split_lines(text)
        offsets = list(accumulate(map(len, lines), initial=0))
        candidates: Iterable[int] = [bisect_right(offsets, at) - 1 for at in ats]
    else:
        if not any(name in text for name in DEVICE_DECORATORS):
            return None  # a decorator line names one of them in full: no line needs splitting
        lines, offsets = _LINES.findall(text), []
        candidates = range(len(lines))
    out = [] if fast else list(lines)
    done = 0  # fast: the offset up to which ``out`` holds the text
    blanked: list[tuple[int, int]] = []
    quotes = _TripleQuotes()
    i = 0  # the first line that may still open a kernel
    for line in candidates:
        if line < i:
            continue
        i = line
        match = _DECORATOR_LINE.match(lines[i])
        if not match or match.group(2) not in DEVICE_DECORATORS:
            i += 1
            continue
        if quotes.inside(lines, i):  # a kernel shown in a docstring: not code
            i += 1
            continue
        indent = match.group(1)
        header = _def_line(lines, i, indent)
        header_end = _statement_end(lines, header) if header is not None else None
        if header_end is None or not lines[header_end].split("#", 1)[0].rstrip().endswith(":"):
            i += 1
            continue
        start = header_end + 1
        if fast:
            last = _body_last_fast(text, lines, offsets, start, len(indent))
        else:
            last = _body_last(lines, start, indent)
        if last is None:
            i = start
            continue
        body_indent = _indent_of(lines[start]) if lines[start].strip() else indent + "    "
        if fast:  # every line but perhaps the text's last ends in "\n": keep exactly those
            out += (
                text[done : offsets[start]],
                body_indent,
                "...",
                "\n" * text.count("\n", offsets[start], offsets[last + 1]),
            )
            done = offsets[last + 1]
        else:
            for line_no in range(start, last + 1):
                newline = lines[line_no][len(lines[line_no].rstrip("\r\n")) :]
                out[line_no] = body_indent + "..." + newline if line_no == start else newline
        blanked.append((start + 1, last + 1))
        i = last + 1
    if not blanked:
        return None
    return ("".join(out) + text[done:], blanked) if fast else ("".join(out), blanked)


def _split_lines(text: str) -> list[str]:
    """``_LINES.findall(text)`` for a text without carriage returns, split in C."""
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n") or not text:
        lines.pop()  # the empty piece after the last newline
    else:
        lines[-1] = lines[-1][:-1]  # the last line has no newline
    return lines


_DECORATOR_AT = re.compile(r"@[ \t]*([A-Za-z_][\w.]*)")


def _decorator_offsets(text: str) -> list[int]:
    """Where the lines whose first non-blank character is an ``@`` followed by a device
    decorator's name (``_DECORATOR_LINE``) have that ``@``: each found by the regex engine's
    literal search, then checked to stand after blanks only."""
    out = []
    for match in _DECORATOR_AT.finditer(text):
        if match.group(1) in DEVICE_DECORATORS:
            at = match.start()
            if text[text.rfind("\n", 0, at) + 1 : at].strip(" \t") == "":
                out.append(at)
    return out


def _body_last(lines: list[str], start: int, indent: str) -> int | None:
    """The last code line of the body that starts at ``start``: every following line indented
    deeper than ``indent``, blank or a comment belongs to it."""
    last, k, n = None, start, len(lines)
    while k < n:
        if _is_code(lines[k]):
            if len(_indent_of(lines[k]).expandtabs()) <= len(indent.expandtabs()):
                break
            last = k
        k += 1
    return last


_BODY_ENDS: dict[int, re.Pattern[str]] = {}


def _body_last_fast(text: str, lines: list[str], offsets: list[int], start: int, width: int) -> int | None:
    """:func:`_body_last` for a text without tabs or carriage returns: the body ends at the first
    line indented by at most ``width`` spaces whose first non-blank character (``str.strip``'s
    whitespace is ``\\s``'s) is no ``#``; its last code line is found going back from there."""
    pattern = _BODY_ENDS.get(width)
    if pattern is None:
        # from the newline before the line: a literal first character, which the engine finds fast
        pattern = _BODY_ENDS[width] = re.compile(rf"\n {{0,{width}}}(?! )[^\S\n]*[^\s#]")
    found = pattern.search(text, offsets[start] - 1) if start < len(lines) else None
    end = bisect_right(offsets, found.start() + 1) - 1 if found is not None else len(lines)
    return next((k for k in range(end - 1, start - 1, -1) if _is_code(lines[k])), None)


def _is_code(line: str) -> bool:
    """Neither blank nor a comment."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


class _TripleQuotes:
    """Whether a line lies inside a triple-quoted string, by the parity of the triple quotes before
    it (counted once, from one asked-about line to the next). A docstring that shows a kernel is
    thus not blanked, which would fail the check against the tree and cost a second parse. A
    quote held in another string can fool the count either way: a kernel left unblanked is only
    parsed whole, a docstring blanked is caught by the check."""

    def __init__(self) -> None:
        self._line = 0
        self._double = self._single = 0

    def inside(self, lines: list[str], line: int) -> bool:
        if line > self._line:
            between = "".join(lines[self._line : line])
            self._double += between.count('"""')
            self._single += between.count("'''")
            self._line = line
        return self._double % 2 == 1 or self._single % 2 == 1


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


_TRIPLE = ("'" * 3, '"' * 3)
_UNCLEAR = ("'", '"', "#", "\\")


def _brackets(line: str) -> int | None:
    """Net bracket depth change of one line, skipping one-line strings and the comment; None for
    anything unclear (triple quotes, a backslash continuation)."""
    if not any(ch in line for ch in _UNCLEAR):  # no string, comment or continuation: count in C
        return line.count("(") + line.count("[") + line.count("{") - line.count(")") - line.count("]") - line.count("}")
    depth = 0
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            if line[i : i + 3] in _TRIPLE:
                return None
            quote = ch
        elif ch == "#":
            break
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        i += 1
    if quote or line.rstrip("\r\n").endswith("\\"):
        return None
    return depth


def _statement_end(lines: list[str], start: int) -> int | None:
    """The last line of the logical line that begins at ``start``."""
    depth = 0
    for k in range(start, min(start + 80, len(lines))):
        delta = _brackets(lines[k])
        if delta is None:
            return None
        depth += delta
        if depth < 0:
            return None
        if depth == 0:
            return k
    return None


def _def_line(lines: list[str], first: int, indent: str) -> int | None:
    """The ``def`` that a stack of decorators starting at ``first`` belongs to."""
    k = first
    while k < len(lines) and k < first + 80:
        line = lines[k]
        if _DEF_LINE.match(line) and _indent_of(line) == indent:
            return k
        if not line.strip() or line.lstrip().startswith("#"):
            k += 1
            continue
        if not line.lstrip().startswith("@") or _indent_of(line) != indent:
            return None
        end = _statement_end(lines, k)
        if end is None:
            return None
        k = end + 1
    return None


def parse_host(text: str, parse: Callable[[str], ast.Module]) -> ast.Module:
    """Parse ``text`` with device bodies blanked when the result checks out, else as it is."""
    blanked = blank_device_bodies(text)
    if blanked is None:
        return parse(text)
    new_text, bodies = blanked
    try:
        tree = parse(new_text)
    except Exception:  # noqa: BLE001 - the blanking went wrong: the real text decides
        return parse(text)
    if _checks_out(tree, bodies):
        return tree
    return parse(text)


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _function_defs(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function definition, found through statement lists only (a ``def`` is a statement:
    expressions, which are most of a tree, never hold one)."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(node)
        for name in _STATEMENT_LISTS:
            children = getattr(node, name, None)
            if children:
                stack.extend(children)
    return out


def _checks_out(tree: ast.Module, bodies: list[tuple[int, int]]) -> bool:
    """Every blanked range is the body of one device function, now a single ``...``."""
    found: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    node: ast.FunctionDef | ast.AsyncFunctionDef | None
    for node in _function_defs(tree):
        if node.body:
            found[node.body[0].lineno] = node
    for first, last in bodies:
        node = found.get(first)
        if node is None or not is_device_function(node) or len(node.body) != 1:
            return False
        stmt = node.body[0]
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis):
            return False
        if (node.end_lineno or 0) > last:
            return False
    return True
