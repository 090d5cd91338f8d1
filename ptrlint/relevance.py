"""The part of a large module the analysis needs: its top-level statements that may hold pointer
evidence, and those that share a name with them, found without parsing.

A generated module (bindings, kernel tables, model configs) may be megabytes of classes and dicts
with a few pointer tables among them; its ast alone is some 140 bytes per source byte and takes
five times ruff's whole run to build. Values cross top-level statements only through names: a
module-level name, a function or class, a method or an attribute name. So the module is cut into
its top-level statements (:func:`ptrlint.lexer.statement_codes`) and a statement is kept when

- the prefilter finds pointer evidence or a place for a finding in it (a seed), or it imports;
- it defines a name a kept statement mentions (a callee, a class, a method, an attribute), or it
  mentions a name a kept statement defines (a caller, a reader), to a fixpoint.

"Mentions" is every identifier of the statement's text, strings and comments included;
"defines" is read off its code: a ``def`` or ``class`` name, an attribute stored (``.x = ``),
``global`` names, and for statements outside functions, the names they assign (a class body's,
or the module's own). Dunder methods (``__init__``) are reached through their class's name, not
shared between classes. The other statements are blanked to their line breaks, so every kept
statement keeps its lines and columns. (The analysis follows no name through a string either:
``setattr``, ``globals()`` and ``exec`` are opaque to it.)

The engine parses the kept text and checks that its statements are exactly the kept ones (else it
parses the whole text). Each left-out statement must parse on its own, or the file is not Python:
:class:`DroppedCheck` parses them beside the analysis, in a forked child where the platform forks and
the process runs no other thread, and in this process once its analysis is done, from both ends
(their parse is a third of a big module's run, and the second core is idle for a single file); the
engine asks for the answer before it reports. A module other modules read is cut too: its summary
lists the names the left-out statements define (``omitted``), and a lookup of one of them by another
module asks for the module to be analysed whole (``project/view.py``, ``planner/index.py``), so what
another module reads of it is always what the whole module says.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import mmap
import os
import re
import struct
import threading
import warnings
from typing import NamedTuple, cast

from .analysis.source import first_line
from .config import Config
from .lexer import statement_codes
from .prefilter import evidence_and_site

REDUCE_FROM = 256 * 1024  # characters: smaller modules are analysed whole (their ast is cheap)

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NEWLINES = re.compile(r"\r\n|\r|\n")
_IMPORT = re.compile(r"(?:import|from)\b")
_NESTED_IMPORT = re.compile(r"^[ \t]*(?:import|from)\b", re.MULTILINE)
_DEFINITION = re.compile(r"(?:@|(?:async[ \t]+)?def\b|class\b)")
_AUG = r"(?:[-+*/%&|^@]|//|<<|>>|\*\*)?"
# A statement's target part (``a, self.b[i] = ...``, ``x += 1``): the text before an assignment.
_TARGETS = re.compile(rf"^([ \t]*)([A-Za-z_(\[*][\w \t,.\[\]()*]*+){_AUG}=(?!=)", re.MULTILINE)
_ANNOTATED = re.compile(r"^([ \t]*)([A-Za-z_]\w*)[ \t]*:(?!=)", re.MULTILINE)
_BINDERS = re.compile(
    r"^[ \t]*(?:async[ \t]+)?(?:def|class|global|nonlocal)[ \t]+([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)",
    re.MULTILINE,
)
_STORED_ATTRIBUTE = re.compile(r"\.[ \t]*([A-Za-z_]\w*)")
_CLASS_LINE = re.compile(r"^class\b", re.MULTILINE)  # a class's own line (after its decorators)
_INDENTED = re.compile(r"\n([ \t]+)\S")
_NOT_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"self", "cls"}


class Relevant(NamedTuple):
    """The text the analysis parses, and where its kept statements lie (1-based lines, first and
    last of each, in order) for the engine's check that the parse saw just those."""

    text: str
    dropped: list[tuple[int, int]]  # the spans of the statements left out (each must parse on its own)
    firsts: list[int]
    lasts: list[int]
    with_code: list[bool]  # whether the statement holds code (not only comments)
    omitted: frozenset[str] = frozenset()  # the names the left-out statements define (a superset)


def relevant_text(text: str, config: Config) -> Relevant | None:
    """``text`` with the top-level statements the analysis does not need blanked (their line breaks
    kept), or None when it needs them all."""
    starts, codes = statement_codes(text)
    if len(starts) < 2:
        return None
    bounds = list(zip(starts, [*starts[1:], len(text)]))
    pieces = [text[begin:end] for begin, end in bounds]
    mentions = [frozenset(_IDENTIFIER.findall(piece)) for piece in pieces]
    binds = [_bound(code) for code in codes]
    defines = [_defined(names) for names in binds]
    kept = [
        i
        for i, (piece, code) in enumerate(zip(pieces, codes))
        if _imports(code) or any(evidence_and_site(piece, config))
    ]
    keep = _closure(kept, mentions, defines) if len(kept) < len(pieces) else set(kept)
    if len(keep) == len(pieces):
        return None
    out: list[str] = []
    dropped: list[tuple[int, int]] = []
    firsts: list[int] = []
    lasts: list[int] = []
    with_code: list[bool] = []
    omitted: set[str] = set()
    line = 1
    for i, piece in enumerate(pieces):
        breaks = _NEWLINES.findall(piece)
        if i in keep:
            out.append(piece)
            firsts.append(line)
            lasts.append(line + len(breaks) - (1 if piece.endswith(("\n", "\r")) else 0))
            with_code.append(bool(codes[i].strip()))
        else:
            out.append("".join(breaks))
            dropped.append(bounds[i])
            omitted |= binds[i]
        line += len(breaks)
    return Relevant("".join(out), dropped, firsts, lasts, with_code, frozenset(omitted))


def parsed_as_kept(module: ast.Module, relevant: Relevant) -> bool:
    """Whether the parse of the kept text holds exactly the kept statements: each statement within
    one kept statement's lines, and every kept statement with code met (else the cut was wrong)."""
    met: set[int] = set()
    firsts, lasts = relevant.firsts, relevant.lasts
    for stmt in module.body:
        at = bisect.bisect_right(firsts, first_line(stmt)) - 1
        if at < 0 or (stmt.end_lineno or stmt.lineno) > lasts[at]:
            return False
        met.add(at)
    return all(i in met for i, code in enumerate(relevant.with_code) if code)


def _imports(code: str) -> bool:
    """A statement that imports at the top level (an ``import``, or one inside ``if``/``try``)."""
    return bool(_IMPORT.match(code)) or (not _DEFINITION.match(code) and _NESTED_IMPORT.search(code) is not None)


def _closure(seeds: list[int], mentions: list[frozenset[str]], defines: list[frozenset[str]]) -> set[int]:
    """The seeds, the statements defining what they mention and those mentioning what they define, to a fixpoint."""
    defined_anywhere = frozenset().union(*defines)
    by_definition: dict[str, list[int]] = {}
    by_mention: dict[str, list[int]] = {}
    for i, names in enumerate(defines):
        for name in names:
            by_definition.setdefault(name, []).append(i)
    for i, names in enumerate(mentions):
        for name in names & defined_anywhere:
            by_mention.setdefault(name, []).append(i)
    keep = set(seeds)
    work = list(seeds)
    followed_mentions: set[str] = set()
    followed_definitions: set[str] = set()
    while work:
        i = work.pop()
        for name in (mentions[i] & defined_anywhere) - followed_mentions:
            followed_mentions.add(name)
            for j in by_definition.get(name, ()):
                if j not in keep:
                    keep.add(j)
                    work.append(j)
        for name in defines[i] - followed_definitions:
            followed_definitions.add(name)
            for j in by_mention.get(name, ()):
                if j not in keep:
                    keep.add(j)
                    work.append(j)
    return keep


def _defined(bound: frozenset[str]) -> frozenset[str]:
    """Of the names a top-level statement binds, those it defines for the others (no keywords,
    builtins, ``self`` or dunders: every statement would share them)."""
    return frozenset(n for n in bound - _NOT_NAMES if not (n[:2] == "__" and n[-2:] == "__"))


def _bound(code: str) -> frozenset[str]:
    """The names a top-level statement (its code: no strings, no comments) binds."""
    bound = [*_BINDERS.findall(code)]
    targets = [*_TARGETS.findall(code), *_ANNOTATED.findall(code)]
    if _DEFINITION.match(code) is None:  # the module's own names
        bound.extend(target for _indent, target in targets)
    else:  # a class body's names; inside functions, only the attributes stored
        body = _body_indent(code)
        stored: list[str] = []
        for indent, target in targets:
            (bound if indent == body else stored).append(target)
        bound.extend(_STORED_ATTRIBUTE.findall(" ".join(stored)))
    return frozenset(_IDENTIFIER.findall(" ".join(bound)))


def _body_indent(code: str) -> str | None:
    """The indentation of a class's body (the first indented line after its ``class`` line); None
    for a function."""
    line = _CLASS_LINE.search(code)
    match = _INDENTED.search(code, line.end()) if line else None
    return match.group(1) if match else None


def dropped_parse(text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether each left-out statement parses on its own (the file may still be valid Python if not:
    the engine then parses the whole text, which says what is wrong)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return all(_parses(text, span) for span in spans)


class DroppedCheck:
    """:func:`dropped_parse` of a cut module, computed while the analysis runs and after it, from both
    ends: a forked child parses the left-out statements from the first on, and this process, once its
    analysis is done, from the last back, until they meet. Each publishes, in a shared page, how far it
    has come (the child: every statement before index ``front`` parsed; this process: every one from
    ``back`` on), and stops where the other has been; a value read late is only an older, smaller share,
    so between them every statement is parsed (one may be parsed twice). The child exits 0 when all of
    its share parsed. Without ``os.fork``, two CPUs or with another thread in this process (a fork copies
    no other thread, and a lock one held stays held), or when the child cannot start or dies, this
    process parses them all: the answer never depends on how it was computed."""

    def __init__(self, text: str, spans: list[tuple[int, int]], aside: bool = True) -> None:
        self._text, self._spans = text, spans
        self._answer: bool | None = None
        self._shared: mmap.mmap | None = None
        self._pid: int | None = None
        if aside and hasattr(os, "fork") and (os.cpu_count() or 1) > 1 and threading.active_count() == 1:
            self._shared = mmap.mmap(-1, 16)
            self._publish(_FRONT, 0)
            self._publish(_BACK, len(spans))
            self._pid = self._fork()

    def _fork(self) -> int | None:
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:  # the child: answer by exit status and leave without running any exit handler
            status = 3
            try:
                status = 0 if self._front() else 1
            finally:
                os._exit(status)
        return pid

    def _front(self) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i, span in enumerate(self._spans):
                if i >= self._read(_BACK):
                    break
                if not _parses(self._text, span):
                    return False
                self._publish(_FRONT, i + 1)
        return True

    def _back(self) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for j in range(len(self._spans) - 1, -1, -1):
                if j < self._read(_FRONT):
                    break
                if not _parses(self._text, self._spans[j]):
                    return False
                self._publish(_BACK, j)
        return True

    def passed(self) -> bool:
        if self._answer is None:
            self._answer = self._settle()
        return self._answer

    def _settle(self) -> bool:
        if self._pid is None:
            return dropped_parse(self._text, self._spans)
        if not self._back():
            self.cancel()
            return False
        status = self._reap()
        return status == 0 if status in (0, 1) else dropped_parse(self._text, self._spans)

    def cancel(self) -> None:
        """The answer is not wanted, or known to be no: stop the child and reap it."""
        if self._pid is not None:
            try:
                os.kill(self._pid, 9)
            except OSError:
                pass
            self._reap()
        if self._answer is None:
            self._answer = False

    def _reap(self) -> int | None:
        pid, self._pid = self._pid, None
        if pid is None:
            return None
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except ChildProcessError:
            return None

    def _publish(self, slot: int, value: int) -> None:
        """Write ``value`` with its complement, so that a read never takes half of a write for a value."""
        assert self._shared is not None
        self._shared[slot : slot + 8] = _SLOT.pack(value, value ^ 0xFFFFFFFF)

    def _read(self, slot: int) -> int:
        assert self._shared is not None
        while True:
            value, check = _SLOT.unpack(self._shared[slot : slot + 8])
            if value ^ 0xFFFFFFFF == check:
                return cast(int, value)  # "<II": ints


_FRONT, _BACK = 0, 8  # the two slots of the shared page
_SLOT = struct.Struct("<II")


def _parses(text: str, span: tuple[int, int]) -> bool:
    try:
        ast.parse(text[span[0] : span[1]])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
