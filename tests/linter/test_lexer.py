"""The prose map (comments and multi-line strings, found without parsing) agrees with tokenize."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

import pytest

from ptrlint.lexer import ProseMap

from ..conftest import CORPUS, REPO


def _offsets(text: str, marker: str) -> list[int]:
    out, at = [], text.find(marker)
    while at >= 0:
        out.append(at)
        at = text.find(marker, at + 1)
    return out


# Each text marks with `@` the places that are prose and with `$` the places that are code.
CASES = [
    "x = 1  # @ comment\n$y = 2\n",
    "# @ one\n   # @ two, indented\n$z = 3\n",
    '"""@ a docstring\nover lines\n"""\n$x = 1\n',
    "'''@ single quotes\n'' still inside ' \\''' @\n'''\n$x = 1\n",
    'b"""@\nbytes\n"""\n$x = 1\n',
    'x = "$ one line"; $y = 1\n',  # a single-line string is a string key or a dtype: code
    'x = """$ one line""" # @\n',
    "s = '#$ not a comment' + $t\n",
    "s = 'it\\'s #$' ; $t = 1 # @ it's\n",
    'r = r"\\"#$" ; $u = 1\n',  # a raw string still ends only at an unescaped quote
    's = "a\\\n$b"; $c = 1\n',  # a backslash-newline continues a single-quoted string
    'f"""\n{$ptrs} $x\n"""\n$x = 1\n',  # an f-string holds code in its fields: never prose
    "x = f'{a:>{$width}}' # @\n",  # nested format spec
    "print(f\"{'$}'}\")\n$x = 1  # $ unsure after the unbalanced field: code\n",
    'x = f"{d["$a"]}"  # $ Python 3.12 nesting: unsure, so code\n$y = 1\n',
    "x = 'unterminated\n$y = 1  # $ a lone quote: unsure from there\n",
]


@pytest.mark.parametrize("case", CASES)
def test_prose_and_code_places(case):
    text = case.replace("@", " ").replace("$", " ")
    prose = ProseMap(text)
    for at in _offsets(case, "@"):
        assert prose.is_prose(at), (case, at)
    for at in _offsets(case, "$"):
        assert not prose.is_prose(at), (case, at)


def test_questions_in_any_order():
    text = '"""\nptr\n"""\nptr = 1\n# ptr\n'
    prose = ProseMap(text)
    last_comment, code, docstring = text.rindex("ptr"), text.index("ptr = 1"), text.index("ptr")
    assert prose.is_prose(last_comment) and not prose.is_prose(code) and prose.is_prose(docstring)


def _files() -> list[Path]:
    files = [
        p
        for folder in ("examples", "tests", "ptrlint", "runtime", "benchmarks")
        for p in (REPO / folder).glob("**/*.py")
        if ".cache" not in p.parts
    ]
    for folder in ("cases", "v2", "v3"):
        if (CORPUS / folder).is_dir():
            files.extend((CORPUS / folder).rglob("*.py"))
    return sorted(files)


def test_code_is_never_prose_and_every_comment_is_prose_over_real_files():
    """Over this repository (and the corpora, when ../shared is there): no token tokenize calls
    code (a name, a number, an operator) starts in prose, and every comment does (none of these
    files is unsure)."""
    checked = comments = 0
    for path in _files():
        text = path.read_text(encoding="utf-8")
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            continue
        starts = [0]
        for line in text.splitlines(True):
            starts.append(starts[-1] + len(line))
        prose = ProseMap(text)
        for token in tokens:
            at = starts[token.start[0] - 1] + token.start[1]
            if token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.OP):
                assert not prose.is_prose(at), (path, token)
                checked += 1
            elif token.type == tokenize.COMMENT:
                assert prose.is_prose(at), (path, token)
                comments += 1
    assert checked > 100_000 and comments > 500  # this repository alone (a clone without ../shared)


def _bracket_depths(text: str) -> dict[int, int]:
    """tokenize's brackets open at the first token of every line (the definition ``in_brackets`` keeps)."""
    starts = [0]
    for line in text.splitlines(True):
        starts.append(starts[-1] + len(line))
    depth, out, seen = 0, {}, set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
            tokenize.COMMENT,
        ):
            continue
        if token.start[0] not in seen:
            seen.add(token.start[0])
            out[starts[token.start[0] - 1] + token.start[1]] = depth
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
    return out


def test_brackets_open_at_each_line_agree_with_tokenize_over_real_files():
    """Every line's first token, in text order and then from the end back: ``in_brackets`` tells
    what tokenize tells (brackets in comments, strings and f-strings do not count)."""
    checked = inside = 0
    for path in _files():
        text = path.read_text(encoding="utf-8")
        try:
            depths = _bracket_depths(text)
        except (tokenize.TokenError, SyntaxError, IndentationError):
            continue
        prose = ProseMap(text)
        for order in (sorted(depths), sorted(depths, reverse=True)[:50]):
            for at in order:
                assert prose.in_brackets(at) is (depths[at] > 0), (path, at, depths[at])
                checked += 1
                inside += depths[at] > 0
    assert checked > 20_000 and inside > 2_000


@pytest.mark.parametrize(
    "text, inside",
    [
        ("d = {\n    $a: 1,\n}\n$x = 1\n", True),
        ("s = '(['  # ({\n$x: int = 1\n", False),
        ('s = f"({x}" + """\n[(\n"""\n$x: int = 1\n', False),
        ("f(a, [b,\n   (c)],\n  $d)\n", True),
    ],
)
def test_brackets_in_strings_and_comments_do_not_count(text, inside):
    at = text.index("$")
    assert ProseMap(text.replace("$", " ")).in_brackets(at) is inside


def test_brackets_are_unknown_where_the_scan_is_unsure():
    text = "x = 'unterminated\nd = {\n  a: 1}\n"
    assert ProseMap(text).in_brackets(text.index("a:")) is None
