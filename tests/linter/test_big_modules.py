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
    from ptrlint.lexer import _LITERALS, statement_codes

    assert statement_codes(text)[1] == [_LITERALS.sub("", text[a:b]) for a, b in zip(starts, [*starts[1:], len(text)])]


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
        intents = {
            i
            for f in analyse(text, "m.py", Config(), enabled)
            if f.fix is not None
            for fix in (f.fix, *f.fix.alternatives)
            for i in fix.intents
        }
        by_statement = render_module.render(text, intents)
        with monkeypatch.context() as patch:
            patch.setattr(render_module, "statement_starts", lambda _text: [0])
            whole = render_module.render(text, intents)
        assert by_statement == whole
        checked += len(intents)
    assert checked > 100


def _generated(blocks: int) -> str:
    """A generated module: ordinary classes and dicts, a pointer table every seventh block, and a
    consumer of one table in a statement of its own (reached through the table's function name)."""
    parts = ["import numpy as np\nimport torch\n\n"]
    for i in range(blocks):
        if i % 7 == 3:
            parts.append(
                f"\n\ndef table_{i}(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"
            )
        elif i % 2:
            parts.append(
                f"\n\nclass Config{i}:\n    size: int = {i}\n\n    def scaled(self, k):\n"
                f"        return Config{i}() if k else self\n"
            )
        else:
            parts.append(f"\n\nKERNELS_{i} = {{'block': {i}, 'warps': 4, 'names': ['a', 'b']}}\n")
    parts.append("\n\ndef launch(ts, kernel):\n    kernel(table_3(ts).numpy())\n")
    return "".join(parts)


def _analysed(text: str, monkeypatch, cut: bool) -> list:
    import ptrlint.engine as engine
    from ptrlint.config import Config
    from ptrlint.rules import ALL_RULES

    monkeypatch.setattr(engine, "REDUCE_FROM", 0 if cut else 10**12)
    return engine.analyse(text, "generated.py", Config(), frozenset(r.code for r in ALL_RULES))


def test_a_generated_module_is_analysed_in_its_relevant_statements(monkeypatch):
    """The cut keeps the imports, the tables and the function that consumes one (it names the table's
    function), drops the classes and dicts, and the findings (with their fixes) are the whole module's."""
    from ptrlint.config import Config
    from ptrlint.relevance import relevant_text

    text = _generated(60)
    relevant = relevant_text(text, Config())
    assert relevant is not None and len(relevant.text.splitlines()) == len(text.splitlines())
    kept = [line for line in relevant.text.splitlines() if line.startswith(("def ", "class ", "KERNELS"))]
    assert kept == [f"def table_{i}(ts):" for i in range(60) if i % 7 == 3] + ["def launch(ts, kernel):"]
    assert _analysed(text, monkeypatch, cut=True) == _analysed(text, monkeypatch, cut=False)


@pytest.mark.parametrize("name", ["examples", "corpus"])
def test_cutting_every_module_changes_no_finding(name, monkeypatch):
    """With every module cut to its relevant statements (the threshold at 0), the examples and the
    fixture corpus get exactly the whole modules' findings and fixes."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    folder = root / ("examples" if name == "examples" else "tests/fixtures/corpus/cases")
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text()
        assert _analysed(text, monkeypatch, cut=True) == _analysed(text, monkeypatch, cut=False), path.name


def test_a_syntax_error_in_a_statement_left_out_is_still_reported(monkeypatch):
    """Every statement left out is parsed on its own: a broken one makes the file an E999 at its line."""
    from ptrlint.engine import ParseError

    text = _generated(30) + "\n\nclass Broken:\n    def f(self:\n        pass\n"
    with pytest.raises(ParseError) as error:
        _analysed(text, monkeypatch, cut=True)
    assert error.value.line == text.count("\n") - 1


@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_syntax_error_anywhere_in_the_statements_left_out_is_reported(monkeypatch, where):
    """The left-out statements are parsed from both ends (a forked child from the first, the linting
    process from the last): a broken one is found wherever it lies."""
    from ptrlint.engine import ParseError

    broken = "class Broken:\n    def f(self:\n        pass\n"
    body = _generated(30)
    head, tail = body[: len(body) // 2].rsplit("\n\n", 1)[0], body[len(body) // 2 :]
    tail = tail[tail.index("\n\n") :]
    before = {"first": "import os\n\n", "middle": head + "\n\n", "last": body + "\n\n"}[where]
    after = {"first": body, "middle": tail, "last": ""}[where]
    text = before + broken + after
    with pytest.raises(ParseError) as error:
        _analysed(text, monkeypatch, cut=True)
    assert error.value.line == before.count("\n") + 2


@pytest.mark.parametrize("aside", [True, False])
@pytest.mark.parametrize("bad", [None, 0, 1, 17, 38, 39])
def test_the_dropped_check_answers_the_same_however_it_runs(aside, bad):
    """Forked beside the analysis or in line, the check says no exactly when one statement does not
    parse, and leaves no child behind."""
    import os

    from ptrlint.relevance import DroppedCheck

    pieces = [f"x{i} = {{'a': [{i}] * 3}}\n" if i != bad else "def f(:\n" for i in range(40)]
    text = "".join(pieces)
    spans, at = [], 0
    for piece in pieces:
        spans.append((at, at + len(piece)))
        at += len(piece)
    assert DroppedCheck(text, spans, aside=aside).passed() is (bad is None)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def _apply_reference(text, findings):
    """The quadratic way apply_fixes worked: chosen edits in a list, the text rebuilt per edit."""
    from ptrlint.findings import Finding

    def overlaps(a, b):
        return a.start == a.end == b.start == b.end or (a.start < b.end and b.start < a.end)

    chosen, applied = [], []
    for finding in sorted(findings, key=Finding.sort_key):
        edits = [e for e in finding.fix.edits if e not in chosen]
        if any(overlaps(e, c) for e in edits for c in chosen):
            continue
        chosen.extend(edits)
        applied.append(finding)
    out = text
    for edit in sorted(chosen, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out, applied


@pytest.mark.parametrize("seed", range(40))
def test_applying_edits_is_the_reference_application(seed):
    """apply_fixes (sorted edits, one join) chooses and applies what the quadratic way did, on
    random overlapping, nested, repeated and empty edits."""
    import random

    from ptrlint.findings import Edit, Finding, Fix
    from ptrlint.rewrite.apply import apply_fixes

    rng = random.Random(seed)
    text = "".join(rng.choice("abc \n") for _ in range(60))
    pool = []
    for _ in range(rng.randint(1, 12)):
        start = rng.randint(0, 60)
        end = min(60, start + rng.choice([0, 0, 1, 3, 8]))
        pool.append(Edit(start, end, rng.choice(["", "X", "uint64", "YY"])))
    findings = []
    for n in range(rng.randint(1, 10)):
        edits = tuple(sorted(set(rng.sample(pool, rng.randint(1, min(2, len(pool)))))))
        if len(edits) == 2 and (
            edits[0].start == edits[0].end == edits[1].start == edits[1].end or edits[1].start < edits[0].end
        ):
            edits = edits[:1]  # a fix's own edits never meet (the reference applied those in a wrong order)
        findings.append(
            Finding("m.py", rng.randint(1, 5), n + 1, 1, 1, "PTR001", "x", "m", Fix(True, (), "t", edits=edits))
        )
    assert apply_fixes(text, findings) == _apply_reference(text, findings)


# A package whose large module (cut to its relevant statements) other modules import: `use.py`
# looks up `Widget`, which only a statement the cut leaves out defines.
_BIG_WITH_WIDGET = """import torch
import mylib


def table(ts):
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)


class Widget:
    def compute(self):
        return mylib.query()
""" + "".join(
    f"\n\nclass Filler{i}:\n    def value(self, x):\n        return [x * {i}, x + {i}, {{'k': x}}]\n"
    for i in range(3000)
)
_USE_WIDGET = """import torch

from .gen import Widget, table


def build(ts):
    w = Widget()
    remote_ptrs = torch.tensor([w.compute()], dtype=torch.int64)
    return remote_ptrs, table(ts)
"""
_USE_TABLE_ONLY = """from .gen import table


def build(ts):
    return table(ts)
"""


def test_the_cut_lists_the_names_it_leaves_out():
    from ptrlint.config import Config
    from ptrlint.relevance import relevant_text

    relevant = relevant_text(_BIG_WITH_WIDGET, Config())
    assert relevant is not None
    assert {"Widget", "Filler0", "Filler2999", "compute", "value"} <= relevant.omitted
    assert "table" not in relevant.omitted  # kept: it holds pointer evidence


def test_a_lookup_of_a_name_left_out_asks_for_the_whole_module():
    from ptrlint.project.summary import ModuleSummary
    from ptrlint.project.view import ProjectView

    cut = ModuleSummary("pkg.gen", "/x/pkg/gen.py", classes={"Kept": []}, omitted=frozenset({"Widget"}))
    view = ProjectView({"pkg.gen": cut}).for_module("pkg.use", ())
    assert view.is_class("pkg.gen.Kept") and not view.wanted
    assert not view.is_class("pkg.gen.Widget") and view.wanted == {"pkg.gen"}
    assert ModuleSummary.from_json(cut.to_json()).omitted == {"Widget"}


@pytest.mark.parametrize("importer, whole", [(_USE_WIDGET, True), (_USE_TABLE_ONLY, False)])
def test_an_imported_big_module_is_analysed_whole_only_when_asked(tmp_path, monkeypatch, capsys, importer, whole):
    """Imported, the large module is still cut (issue 56: a 5 MB module imported by its package took 743 MB
    whole); when another module looks up a name the cut left out it is analysed again, every statement, and
    the findings are those of whole-module analysis."""
    from ptrlint import cli, engine
    from ptrlint.project import link

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "gen.py").write_text(_BIG_WITH_WIDGET)
    (tmp_path / "pkg" / "use.py").write_text(importer)
    monkeypatch.chdir(tmp_path)
    analysed: list[tuple[str, bool, bool]] = []
    finish = link.ModuleLink.finish

    def spy(self, facts, source, context, omitted=frozenset()):
        analysed.append((self.path, self.whole, bool(omitted)))
        return finish(self, facts, source, context, omitted)

    def lint() -> str:
        cli.main(["--no-cache", "--isolated", "--jobs", "1", "--exit-zero", "--output-format", "json", "."])
        return capsys.readouterr().out

    monkeypatch.setattr(link.ModuleLink, "finish", spy)
    cut_run = lint()
    gen = [(w, o) for p, w, o in analysed if p.endswith("gen.py")]
    assert gen[0] == (False, True)  # cut first
    assert (gen[-1] == (True, False)) is whole  # and whole only when a left-out name was asked for
    monkeypatch.setattr(engine, "REDUCE_FROM", 10**12)
    assert lint() == cut_run
