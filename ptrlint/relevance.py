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
parses the whole text). A module other modules read is cut too: its summary lists the names the
left-out statements define (``omitted``), and a lookup of one of them by another module asks for
the module to be analysed whole (``project/view.py``, ``planner/index.py``), so what another
module reads of it is always what the whole module says.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import re
from typing import NamedTuple

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
_BINDERS = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class|global|nonlocal)[ \t]+([A-Za-z_]\w*(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*)",
                      re.MULTILINE)
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
    kept = [i for i, (piece, code) in enumerate(zip(pieces, codes))
            if _imports(code) or any(evidence_and_site(piece, config))]
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
