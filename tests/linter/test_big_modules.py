"""Big modules cost what their size says (issue 44): the work per question is bounded by the
statement it asks about, never the whole module. Speed itself is measured in
``benchmarks/big_module.py``; these tests check the answers stay those of the whole-module way."""

from __future__ import annotations

import ast

import pytest

from ptrlint.analysis.source import SourceMap

COMMENT_TEXTS = [
    "x = 1  # a\ny = 2\n",
    "import torch\n\n\n@decorator  # on the decorator\ndef f(  # opening\n    a,  # noqa: PTR001\n):\n    return a  # end\n",
    's = """a # not a comment\nb # nor this"""  # but this\n',
    'a = 1; b = """x\ny"""; c = 2  # shared line\n',
    "x = (1,\n  2); y = 3  # after a continued statement\n# between statements\n\nz = [  # bracket\n  '#', \"#\",\n]\n",
    "if True:\n    x = 1 \\\n        + 2  # continued\nelse:\n    # a comment line\n    y = f'{x}#'  # fstring\n",
    "x = 1\r\ny = 2  # crlf\r\n",
    "class A:\n    def f(self):\n        return 1  # in a method\n\n    # between methods\n    def g(self): ...\n",
]


@pytest.mark.parametrize("text", COMMENT_TEXTS)
def test_comments_by_statement_match_the_whole_text_tokenized(text):
    """Comments found by tokenizing the asked line's top-level statement are those the whole text's
    tokens hold, on every line (the whole-text tokenize was 3 s of a 5 MB module's lint)."""
    whole = SourceMap(text)
    by_statement = SourceMap(text, ast.parse(text))
    lines = len(whole.line_starts)
    assert [by_statement.comments(n) for n in range(1, lines + 1)] == [whole.comments(n) for n in range(1, lines + 1)]


STATEMENT_TEXTS = [
    "import torch\nx = 1\n",
    "@a\n@b(\n  1)\ndef f():\n    pass\nclass C:\n    pass\n",
    "if x:\n    pass\nelif y:\n    pass\nelse:\n    pass\ntry:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\nz = 1\n",
    's = """\nnot = a statement\n"""\nt = f"""\n{x}\nnor = this\n"""\nu = 1\n',
    "x = [\n1,\n2,\n]\ny = (\n'a'\n)\nz = 1 + \\\n2\nw = 3\n",
    "a = 1; b = 2\nc = 3\n# comment at column 0\nd = 4\n",
    "x = 1\r\ny = 2 \\\r\n+ 3\r\nz = 4\r\n",
    "for i in r:\n    pass\nelse:\n    pass\nwhile 0:\n    pass\nasync def g():\n    pass\n",
    "x = '''a\nb = 1\n'''  # a string over a line that looks like a statement\ny = 2\n",
    "def f():\n    '''doc \\'''' + \"\\\"\"\n    return {'a': '{', \"b\": '}'}  # ) ]\nz = [1, '(']\n",
]


def _ast_starts(text: str) -> set[int]:
    """Offsets of the lines on which the module's top-level statements (with their decorators) start."""
    source = SourceMap(text)
    lines = {min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) for s in ast.parse(text).body}
    return {source.line_starts[n - 1] for n in lines}


def _texts() -> list[str]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "examples").rglob("*.py")) + sorted((root / "ptrlint").rglob("*.py"))[:40]
    return STATEMENT_TEXTS + [p.read_text() for p in files]


@pytest.mark.parametrize("text", _texts())
def test_statement_starts_are_statement_starts(text):
    """Every cut the lexer makes is where a top-level statement starts (a fix rendered on a piece
    sees whole statements); on these texts it finds them all."""
    from ptrlint.lexer import _statement_starts_exact, statement_starts

    starts = statement_starts(text)
    assert starts == sorted(set(starts)) and starts[0] == 0
    assert set(starts) | {0} == _ast_starts(text) | {0}
    assert _statement_starts_exact(text) == starts  # the regex's reading is the exact scan's


def test_rendering_by_statement_gives_the_whole_text_s_edits(monkeypatch):
    """Fixes rendered on the statements that hold them are the edits the whole module's libcst tree
    gives (the bundled examples and the fixture corpus: every fix shape)."""
    from pathlib import Path

    from ptrlint.config import Config
    from ptrlint.engine import analyse
    from ptrlint.rewrite import render as render_module
    from ptrlint.rules import ALL_RULES

    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "examples").rglob("*.py")) + sorted((root / "tests/fixtures/corpus/cases").glob("*.py"))
    texts = [p.read_text() for p in files]
    enabled = frozenset(r.code for r in ALL_RULES)
    checked = 0
    for text in texts:
        intents = {i for f in analyse(text, "m.py", Config(), enabled) if f.fix is not None
                   for fix in (f.fix, *f.fix.alternatives) for i in fix.intents}
        by_statement = render_module.render(text, intents)
        with monkeypatch.context() as patch:
            patch.setattr(render_module, "statement_starts", lambda _text: [0])
            whole = render_module.render(text, intents)
        assert by_statement == whole
        checked += len(intents)
    assert checked > 100
