"""Which candidates (a site, no pointer evidence of their own) the index analyses: those that import
a name holding pointer values, and, for a class, only those that can reach its pointer values
(spell a member, or call a class with address-named fields). Invariant: leaving the others out
changes no finding, so every test package is also linted with every candidate analysed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptrlint.planner.tasks import refers_as_callee, spells_word

from ..conftest import CORPUS, needs_shared
from .test_project_index import _FIELDS, PACKAGE, _write

# One module's classes hold addresses (a method and an attribute; a dataclass's address-named
# field); the others use them in every way the analysis can, and in ways it cannot learn from.
CLASSES = {
    "mem/__init__.py": "from .pools import Pool as Pool\n",
    "mem/pools.py": """
        from dataclasses import dataclass

        import torch


        class Pool:
            def __init__(self, t: torch.Tensor) -> None:
                self.base = t.data_ptr()

            def start(self) -> int:
                return self.base


        @dataclass
        class Copy:
            src_ptrs: torch.Tensor
            sizes: torch.Tensor


        class Table:
            def __init__(self, ts: list[torch.Tensor]) -> None:
                self.ts = ts

            def __getitem__(self, i: int) -> int:
                return self.ts[i].data_ptr()
    """,
    "mem/indexed.py": """
        import torch

        from mem.pools import Table


        def first(t: Table, n: int) -> torch.Tensor:
            return torch.tensor([t[i] for i in range(n)], dtype=torch.int64)
    """,
    "mem/annotated.py": """
        import torch

        from mem.pools import Copy, Pool


        def sizes(p: Pool, c: Copy, n: int) -> torch.Tensor:
            assert isinstance(p, Pool)
            return torch.zeros(n, dtype=torch.int64)
    """,
    "mem/member.py": """
        import torch

        from mem.pools import Pool


        def starts(pools: list[Pool]) -> torch.Tensor:
            return torch.tensor([p.start() for p in pools], dtype=torch.int64)  # expect: PTR001
    """,
    "mem/reexported.py": """
        import torch

        import mem


        def bases(pools: list[mem.Pool]) -> torch.Tensor:
            return torch.tensor([p.base for p in pools])  # expect: PTR002
    """,
    "mem/alias.py": """
        import torch

        from mem.pools import Copy

        C = Copy


        def make(n):
            return C(torch.zeros(n, dtype=torch.int32), torch.zeros(n))  # expect: PTR003
    """,
    "mem/subclass.py": """
        import torch

        from mem.pools import Pool


        class Sub(Pool):
            def table(self, n: int) -> torch.Tensor:
                return torch.zeros(n, dtype=torch.int64)
    """,
}


def _lint(ptrlint, root: Path, *args: str) -> list[dict]:
    result = ptrlint("--no-cache", "--format", "json", "--unsafe-fixes", *args, cwd=root)
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


@pytest.fixture
def connected(monkeypatch):
    """The candidates the planner connects in the next runs (their paths' names)."""
    import ptrlint.planner.index as index

    names: list[str] = []
    real = index.ProjectRun._connected

    def recording(self, task, connections):
        answer = real(self, task, connections)
        if answer:
            names.append(Path(task.path).name)
        return answer

    monkeypatch.setattr(index.ProjectRun, "_connected", recording)
    return names


def _every_candidate_connected(monkeypatch) -> None:
    import ptrlint.planner.index as index

    monkeypatch.setattr(index.ProjectRun, "_connected", lambda self, task, connections: True)


def test_a_class_connects_only_the_candidates_that_reach_its_pointer_values(ptrlint, tmp_path, connected):
    from ptrlint.testing import expected_markers

    root = _write(tmp_path / "repo", CLASSES)
    found = {(f["path"], f["line"], f["code"]) for f in _lint(ptrlint, root, ".")}
    expected = {
        (p.relative_to(root).as_posix(), line, code)
        for p in root.rglob("*.py")
        for line, code in expected_markers(p.read_text())
    }
    assert found == expected
    # not annotated.py nor subclass.py; indexed.py: a dunder is reached without spelling its name
    assert sorted(connected) == ["alias.py", "indexed.py", "member.py", "reexported.py"]


@pytest.mark.parametrize("one", sorted(k for k in CLASSES if "__init__" not in k and "pools" not in k))
def test_one_file_alone_gets_what_the_whole_tree_gets(ptrlint, tmp_path, one):
    """As pre-commit runs it: the module a candidate reaches through a package's re-export
    (``import mem`` ... ``mem.Pool``) is read although nothing given imports it directly."""
    root = _write(tmp_path / "repo", CLASSES)
    whole = [f for f in _lint(ptrlint, root, ".") if f["path"] == one]
    assert _lint(ptrlint, root, one) == whole


@pytest.mark.parametrize("files", [CLASSES, PACKAGE, _FIELDS], ids=["classes", "package", "fields"])
@pytest.mark.parametrize("target", [".", "one"])
def test_every_candidate_analysed_finds_the_same(ptrlint, tmp_path, monkeypatch, files, target):
    """What the connection test leaves out changes no finding, fix or message."""
    root = _write(tmp_path / "repo", files)
    targets = ["."] if target == "." else sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    chosen = [_lint(ptrlint, root, t) for t in targets]
    _every_candidate_connected(monkeypatch)
    assert [_lint(ptrlint, root, t) for t in targets] == chosen


def test_every_candidate_analysed_finds_the_same_in_the_shared_corpus(ptrlint, monkeypatch):
    cases = CORPUS / "cross_module" / "cases"
    needs_shared(cases)
    chosen = _lint(ptrlint, cases, ".")
    _every_candidate_connected(monkeypatch)
    assert _lint(ptrlint, cases, ".") == chosen != []


@pytest.mark.parametrize(
    ("text", "word", "spelled"),
    [
        ("p.start()", "start", True),
        ("Copy(src_ptrs=x)", "src_ptrs", True),
        ("getattr(p, 'start')", "start", True),
        ("p.restart()", "start", False),
        ("p.start_all()", "start", False),
        ("start", "start", True),
        ("é_start", "start", False),
    ],
)
def test_a_word_is_spelled_whole(text, word, spelled):
    assert spells_word(text, word) is spelled


@pytest.mark.parametrize(
    ("text", "spelled", "called"),
    [
        ("Copy(a, b)", "Copy", True),
        ("x = Copy (\n  a)", "Copy", True),
        ("C = Copy\n", "Copy", True),
        ("x = (\n    d.Copy\n)", "d.Copy", True),
        ("C = d.Copy", "d.Copy", True),
        ("def f(c: Copy) -> Copy | None: ...", "Copy", False),
        ("isinstance(x, Copy)", "Copy", False),
        ("class Sub(Copy): pass", "Copy", False),
        ("CopyAll(a)", "Copy", False),
        ("MyCopy(a)", "Copy", False),
        ("x.Copy(a)", "Copy", False),  # another object's attribute
        ("Copy.empty(3)", "Copy", False),  # a classmethod: its name is the member spelled
        ("C = (" + " " * 300 + "Copy)", "Copy", True),  # however much space stands between
        ("Copy" + "\n" * 300 + "(a)", "Copy", True),
    ],
)
def test_a_class_is_called_or_aliased(text, spelled, called):
    assert refers_as_callee(text, spelled) is called


# ----- the settle round's reading of candidates ------------------------------------------------------
def _connections(symbols=(), classes=None, targets=()):
    from ptrlint.planner.connections import ClassUse, Connections

    return Connections(
        set(symbols), {k: ClassUse(frozenset(w), c) for k, (w, c) in (classes or {}).items()}, set(targets)
    )


@pytest.mark.parametrize(
    ("ours", "theirs", "within"),
    [
        (_connections(), _connections(["m.f"]), True),
        (_connections(["m.f"]), _connections(["m.f", "m.g"]), True),
        (_connections(["m.f", "m.g"]), _connections(["m.f"]), False),  # a new symbol
        (_connections(targets=["m.C"]), _connections(), False),  # a new target of writes
        # a class that connects through fewer words, or no longer when called: within
        (
            _connections(["m.C"], {"m.C": (["ptr"], False)}),
            _connections(["m.C"], {"m.C": (["ptr", "addr"], True)}),
            True,
        ),
        # a class reached by a word it was not reached by before, or now when called: not within
        (_connections(["m.C"], {"m.C": (["base"], False)}), _connections(["m.C"], {"m.C": (["ptr"], False)}), False),
        (_connections(["m.C"], {"m.C": (["ptr"], True)}), _connections(["m.C"], {"m.C": (["ptr"], False)}), False),
        # unconditional here, a class there (connected only by its words): not within; the reverse is
        (_connections(["m.C"]), _connections(["m.C"], {"m.C": (["ptr"], False)}), False),
        (_connections(["m.C"], {"m.C": (["ptr"], False)}), _connections(["m.C"]), True),
    ],
)
def test_connections_within_others_connect_no_text_they_leave_out(ours, theirs, within):
    assert ours.within(theirs) is within


def test_the_settle_round_keeps_no_candidate_text_and_reads_each_once(tmp_path, monkeypatch):
    """A candidate's text is read to test its words and dropped again (ten thousand candidates held
    300 MB on a 20,000-file tree); a later round whose connections are no more than the last one's
    leaves the unconnected candidates as they were, without reading them again."""
    import ptrlint.planner.index as index
    import ptrlint.planner.tasks as tasks
    from ptrlint.config import Config
    from ptrlint.settings import Settings, select_codes

    files = {
        **CLASSES,
        "mem/late.py": "import torch\n\nfrom mem.pools import Pool\n\n\n"
        "def grow(p: Pool, xs):\n    p.extra = [x.data_ptr() for x in xs]\n",
    }
    root = _write(tmp_path / "repo", files)
    reads: list[str] = []
    real_read = tasks.read_source

    def counting(path, *args, **kwargs):
        reads.append(Path(path).name)
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(tasks, "read_source", counting)
    real_settle, real_within = index.ProjectRun._settle, index.Connections.within
    within: list[bool] = []

    def settle(self):
        reads.clear()  # the reads of the settle rounds only
        real_settle(self)

    def recorded(self, other):
        within.append(real_within(self, other))
        return within[-1]

    monkeypatch.setattr(index.ProjectRun, "_settle", settle)
    monkeypatch.setattr(index.Connections, "within", recorded)
    paths = sorted(str(p) for p in root.rglob("*.py"))
    run = index.ProjectRun(paths, Settings(Config(), select_codes(["ALL"], [], [])), jobs=1)
    run.run()
    candidates = [t for t in run.tasks.values() if t.candidate]
    assert candidates and not any(t.has_text for t in candidates)
    unconnected = sorted(Path(t.path).name for t in candidates if not t.analyse)
    assert within == [True]  # a second round, whose connections are the first one's but fewer
    assert unconnected == ["annotated.py", "subclass.py"] and all(reads.count(n) == 1 for n in unconnected), reads
