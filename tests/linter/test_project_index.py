"""Cross-module provenance: the project index, through the real CLI.

Each test builds a small package in tmp_path (the code is original); the shared cross-module corpus
runs in test_corpus.py. Invariants: a file gets the same findings whether ptrlint is given the
whole tree or that file alone (as pre-commit does), evidence that crosses a module names the other
file, and a changed dependency is never answered from a stale cache.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from ..conftest import CORPUS, needs_shared, write_pointer_package

PACKAGE = {
    "pool/__init__.py": "from .regions import Region, region_bases\n",
    "pool/regions.py": """
        import torch


        class Region:
            def __init__(self, tensor: torch.Tensor) -> None:
                self.base = tensor.data_ptr()
                self.size = tensor.numel() * tensor.element_size()

            def at(self, offset: int) -> int:
                return self.base + offset


        def region_bases(tensors: list[torch.Tensor]) -> list[int]:
            return [t.data_ptr() for t in tensors]


        def region_sizes(tensors: list[torch.Tensor]) -> list[int]:
            return [t.nbytes for t in tensors]
    """,
    "pool/descriptors.py": """
        from dataclasses import dataclass

        import torch


        @dataclass
        class Descriptors:
            sources: torch.Tensor
            lengths: torch.Tensor

            @classmethod
            def empty(cls, n: int) -> "Descriptors":
                return cls(torch.zeros(n, dtype=torch.int64), torch.zeros(n, dtype=torch.int64))  # expect: PTR001
    """,
    "pool/launch.py": """
        from .descriptors import Descriptors


        def launch(d: Descriptors, copy_kernel, n: int) -> None:
            copy_kernel[(n,)](d.sources, d.lengths)
    """,
    "pool/fill.py": """
        import torch

        from .descriptors import Descriptors


        def fill(d: Descriptors, blocks: list[torch.Tensor]) -> None:
            view = d.sources.numpy()
            for i, b in enumerate(blocks):
                view[i] = b.data_ptr()
                d.lengths[i] = b.nbytes
    """,
    "pool/tables.py": """
        import numpy as np
        import torch

        import pool.regions as regions_mod
        from . import regions
        from pool import region_bases
        from .regions import Region, region_sizes


        def via_reexport(ts):
            return torch.tensor(region_bases(ts), dtype=torch.int64)  # expect: PTR001


        def via_module_alias(ts):
            return torch.tensor(regions_mod.region_bases(ts), dtype=torch.int32)  # expect: PTR003


        def via_from_module(ts):
            return np.array(regions.region_bases(ts))  # expect: PTR002


        def via_method(r: Region, offsets):
            return torch.tensor([r.at(o) for o in offsets], dtype=torch.int64)  # expect: PTR001


        def via_attribute(rs: list[Region]):
            return torch.tensor([r.base for r in rs])  # expect: PTR002


        def sizes(ts):
            return torch.tensor(region_sizes(ts), dtype=torch.int64)


        def third_party(ts):
            import somewhere_else

            return torch.tensor(somewhere_else.region_bases(ts), dtype=torch.int64)
    """,
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    (root / "pyproject.toml").write_text("[project]\nname = 'pool'\n")
    return root


def _expected(root: Path) -> set[tuple[str, int, str]]:
    from ptrlint.testing import expected_markers

    return {
        (p.relative_to(root).as_posix(), line, code)
        for p in root.rglob("*.py")
        for line, code in expected_markers(p.read_text())
    }


def _found(ptrlint, root: Path, *args: str) -> list[dict]:
    result = ptrlint("--no-cache", "--format", "json", *args, cwd=root)
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


def _keys(findings: list[dict]) -> set[tuple[str, int, str]]:
    return {(f["path"], f["line"], f["code"]) for f in findings}


@pytest.fixture
def project(tmp_path):
    return _write(tmp_path / "repo", PACKAGE)


def test_whole_tree_finds_every_cross_module_marker(ptrlint, project):
    assert _keys(_found(ptrlint, project, ".")) == _expected(project)


@pytest.mark.parametrize("one", ["pool/tables.py", "pool/descriptors.py"])
def test_one_file_alone_gets_the_same_findings_as_in_the_whole_tree(ptrlint, project, one):
    whole = {k for k in _keys(_found(ptrlint, project, ".")) if k[0] == one}
    alone = _keys(_found(ptrlint, project, one))
    assert alone == whole != set()


# A dataclass whose fields say they hold addresses, built positionally in modules that spell no
# pointer word: the field's name is the evidence (one module's class, another's constructor call).
_FIELDS = {
    "fields/__init__.py": "",
    "fields/desc.py": """
        from dataclasses import dataclass

        import torch


        @dataclass
        class Desc:
            src_ptrs: torch.Tensor


        @dataclass
        class Sizes:
            lengths: torch.Tensor
    """,
    "fields/by_name.py": """
        import torch

        from fields.desc import Desc, Sizes


        def make(n):
            return Desc(torch.zeros(n, dtype=torch.int64))  # expect: PTR001


        def sizes(n):
            return Sizes(torch.zeros(n, dtype=torch.int64))
    """,
    "fields/by_alias.py": """
        import torch

        import fields.desc as d


        def make(n):
            return d.Desc(torch.zeros(n, dtype=torch.int64))  # expect: PTR001
    """,
    "fields/by_module.py": """
        import torch

        from fields import desc


        def make(n):
            return desc.Desc(torch.zeros(n, dtype=torch.int32))  # expect: PTR003
    """,
}


@pytest.mark.parametrize("target", [".", "fields/by_name.py", "fields/by_alias.py", "fields/by_module.py"])
def test_a_field_named_like_an_address_in_another_module_is_evidence(ptrlint, tmp_path, target):
    root = _write(tmp_path / "repo", _FIELDS)
    expected = {k for k in _expected(root) if target == "." or k[0] == target}
    assert _keys(_found(ptrlint, root, target)) == expected != set()


def test_without_the_index_nothing_crosses_modules(ptrlint, project):
    assert _keys(_found(ptrlint, project, "--no-project-index", ".")) == set()


def test_evidence_names_the_other_module_in_json_sarif_and_text(ptrlint, project):
    findings = _found(ptrlint, project, "pool/descriptors.py")
    related = findings[0]["related"]
    assert any(r["path"] == "pool/fill.py" and r["line"] == 9 for r in related), related
    sarif = json.loads(ptrlint("--no-cache", "--format", "sarif", "pool/descriptors.py", cwd=project).out)
    uris = {
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in sarif["runs"][0]["results"]
        for loc in r.get("relatedLocations", [])
    }
    assert "pool/fill.py" in uris
    text = ptrlint("--no-cache", "--show-evidence", "pool/tables.py", cwd=project).out
    assert "pool/regions.py:" in text and "returned by `region_bases()`" in text
    # the failure path names the other module's file where the address comes from, not a line of this one
    tables = _found(ptrlint, project, "pool/tables.py")
    via_reexport = next(f for f in tables if f["line"] == 11)
    assert "(`data_ptr()`, pool/regions.py:14)" in via_reexport["failure"], via_reexport["failure"]


def test_a_changed_dependency_is_never_answered_from_the_cache(ptrlint, project):
    first = _keys(_found_cached(ptrlint, project, "pool/tables.py"))
    assert ("pool/tables.py", 11, "PTR001") in first
    regions = project / "pool" / "regions.py"
    regions.write_text(
        regions.read_text().replace("return [t.data_ptr() for t in tensors]", "return [0 for t in tensors]")
    )
    second = _keys(_found_cached(ptrlint, project, "pool/tables.py"))
    assert ("pool/tables.py", 11, "PTR001") not in second
    assert ("pool/tables.py", 23, "PTR001") in second  # Region.at still returns base + offset


WRAPPING = {
    "pkg/__init__.py": "",
    "pkg/bits.py": """
        def as_signed(value):
            return value - (1 << 64) if value >= 1 << 63 else value
    """,
    "pkg/tables.py": """
        import numpy as np

        from .bits import as_signed


        def table(tensors):
            out = np.zeros(len(tensors), dtype=np.uint64)
            for i, t in enumerate(tensors):
                out[i] = as_signed(t.data_ptr())
            return out
    """,
}


def test_a_wrap_helper_of_another_module_wraps_and_a_changed_one_is_never_answered_from_the_cache(ptrlint, tmp_path):
    """The helper's module holds no address source, only the wrap's constants: it is summarised, its
    helper wraps the address a call in another module gives it (PTR009 into uint64), alone and in the
    whole tree; once the helper no longer wraps, a warm run on the table's file says so."""
    root = _write(tmp_path, WRAPPING)
    for args in (("pkg/tables.py",), (".",)):
        found = _found(ptrlint, root, *args)
        assert _keys(found) == {("pkg/tables.py", 9, "PTR009")}, found
    assert ("pkg/tables.py", 9, "PTR009") in _keys(_found_cached(ptrlint, root, "pkg/tables.py"))
    bits = root / "pkg" / "bits.py"
    bits.write_text(bits.read_text().replace("value - (1 << 64) if value >= 1 << 63 else value", "value"))
    assert _keys(_found_cached(ptrlint, root, "pkg/tables.py")) == set()


def _found_cached(ptrlint, root: Path, *args: str) -> list[dict]:
    result = ptrlint("--format", "json", *args, cwd=root)
    return json.loads(result.out)


def test_fix_uses_cross_module_evidence_and_touches_only_linted_files(ptrlint, project):
    before = (project / "pool" / "regions.py").read_bytes()
    ptrlint("--no-cache", "--fix", "pool/descriptors.py", cwd=project)
    text = (project / "pool" / "descriptors.py").read_text()
    assert "torch.zeros(n, dtype=torch.uint64), torch.zeros(n, dtype=torch.int64)" in text
    assert (project / "pool" / "regions.py").read_bytes() == before


def test_an_import_cycle_terminates(ptrlint, tmp_path):
    root = _write(
        tmp_path / "cyc",
        {
            "cyc/__init__.py": "",
            "cyc/a.py": "import torch\nfrom .b import g\n\ndef f(t):\n    return [t.data_ptr()] + g(t)\n",
            "cyc/b.py": "import torch\nfrom .a import f\n\ndef g(t):\n    return []\n\ndef table(t):\n"
            "    return torch.tensor(f(t), dtype=torch.int64)  # expect: PTR001\n",
        },
    )
    assert _keys(_found(ptrlint, root, ".")) == _expected(root)


def test_shared_cross_module_corpus_file_by_file(ptrlint):
    needs_shared(CORPUS / "cross_module" / "cases" / "kvoffload")
    cases = CORPUS / "cross_module" / "cases"
    from ptrlint.testing import expected_markers

    for name in ("tables.py", "buffers.py"):
        path = cases / "kvoffload" / name
        want = {(line, code) for line, code in expected_markers(path.read_text())}
        got = {(f["line"], f["code"]) for f in _found(ptrlint, cases, f"kvoffload/{name}")}
        assert got == want, name


def test_consumer_reads_are_shared_by_the_rounds_and_workers_of_a_run(tmp_path, monkeypatch):
    """The modules read for consumer answers do not depend on the summaries: one run keeps one
    reader across its rounds (a new view must not read the project again), and a worker gets the
    import tables already read, never the parsed modules."""
    import pickle

    import ptrlint.project.consumers as consumers
    from ptrlint.config import Config
    from ptrlint.engine import Settings, select_codes
    from ptrlint.planner.index import ProjectRun

    files = write_pointer_package(tmp_path)
    builds: list[str] = []
    real_project_files = consumers.project_files
    monkeypatch.setattr(consumers, "project_files", lambda *a: builds.append("read") or real_project_files(*a))
    run = ProjectRun(files, Settings(Config(), select_codes(["ALL"], [], [])), jobs=1)
    run.run()
    first = run._view()
    assert run._refresh().consumers is first.consumers  # a new round, the same reader
    first.consumers.results("pkg.tables.pointer_table", tmp_path / "pkg" / "tables.py", run._view().options)
    first.consumers.results("pkg.tables.pointer_table", tmp_path / "pkg" / "tables.py", run._view().options)
    assert len(builds) == 1  # the project's import lines were read once in this process
    shipped = pickle.loads(pickle.dumps(first.consumers))
    assert shipped._imports == first.consumers._imports and shipped._imports
    assert shipped._answers == {}


def test_the_consumer_reader_takes_the_imports_the_planner_read(tmp_path, monkeypatch):
    """The planner reads the import lines of every module it makes a task of (in a worker, when it
    classifies a given file); the reader of consumer modules takes those instead of reading the
    files again, and its table is what reading them would give."""
    import ptrlint.project.consumers as consumers
    from ptrlint.config import Config
    from ptrlint.engine import Settings, select_codes
    from ptrlint.planner.index import ProjectRun

    files = write_pointer_package(tmp_path)
    (tmp_path / "pkg" / "plain.py").write_text("from pkg import tables\n")  # not given
    run = ProjectRun(files, Settings(Config(), select_codes(["ALL"], [], [])), jobs=1)
    run.run()
    reader = run._consumers
    assert {str(tmp_path / "pkg" / n) for n in ("tables.py", "use.py")} <= set(reader._known)
    opened: list[str] = []
    real_read = consumers.read_bytes  # every file of the tree is read through it (a regular file only)
    monkeypatch.setattr(consumers, "read_bytes", lambda p: opened.append(str(p)) or real_read(p))
    reader._imports.clear()
    importers = reader._importers(tmp_path / "pkg" / "tables.py", "pkg.tables")
    assert sorted(opened) == [str(tmp_path / "pkg" / n) for n in ("__init__.py", "plain.py")]  # no tasks of these
    assert sorted(importers) == sorted(str(tmp_path / "pkg" / n) for n in ("plain.py", "use.py"))
    seeded = dict(reader._imports)
    reader._known.clear()
    reader._imports.clear()
    reader._importers(tmp_path / "pkg" / "tables.py", "pkg.tables")
    assert reader._imports == seeded  # the same table as reading every file


def _index_run(files: list[str], cache_dir: str | None = None):
    from ptrlint.config import Config
    from ptrlint.engine import Settings, select_codes
    from ptrlint.planner.index import ProjectRun

    run = ProjectRun(files, Settings(Config(), select_codes(["ALL"], [], []), cache_dir=cache_dir), jobs=1)
    return run, run.run()


def _codes(results) -> set[tuple[str, int, str]]:
    return {(Path(f.path).name, f.line, f.code) for r in results for f in r.findings}


# A module nothing imports, whose function returns addresses and which writes addresses into another
# module's class: the writes count, its own summary is not computed.
_WRITER = (
    "import torch\nfrom pkg.holder import Holder\n\n\ndef fill(h: Holder, xs):\n"
    "    view = h.table.numpy()\n    for i, x in enumerate(xs):\n        view[i] = x.data_ptr()\n\n\n"
    "def more_ptrs(xs):\n    return [x.data_ptr() for x in xs]\n"
)
_HOLDER = (
    "from dataclasses import dataclass\n\nimport torch\n\n\n@dataclass\nclass Holder:\n"
    "    table: torch.Tensor\n\n    @classmethod\n    def empty(cls, n):\n"
    "        return cls(torch.zeros(n, dtype=torch.int64))\n"
)


def test_a_module_nothing_imports_keeps_only_its_writes(tmp_path):
    files = write_pointer_package(tmp_path)
    (tmp_path / "pkg" / "writer.py").write_text(_WRITER)
    (tmp_path / "pkg" / "holder.py").write_text(_HOLDER)
    files += [str(tmp_path / "pkg" / "writer.py"), str(tmp_path / "pkg" / "holder.py")]
    run, results = _index_run(files)
    writer = run.tasks[str((tmp_path / "pkg" / "writer.py").resolve())]
    tables = run.tasks[str((tmp_path / "pkg" / "tables.py").resolve())]
    assert not writer.imported and writer.summary is None and writer.writes is not None
    assert not writer.writes.functions and "pkg.holder.Holder.table" in writer.writes.external_writes
    assert tables.imported and "pointer_table" in tables.summary.functions
    found = _codes(results)
    assert ("holder.py", 12, "PTR001") in found  # the writer's write reached the holder's table
    assert ("use.py", 6, "PTR001") in found


def test_every_module_summarised_in_full_finds_the_same(tmp_path, monkeypatch):
    """What the partial summaries save changes no finding: with every module marked imported."""
    files = write_pointer_package(tmp_path)
    (tmp_path / "pkg" / "writer.py").write_text(_WRITER)
    (tmp_path / "pkg" / "holder.py").write_text(_HOLDER)
    files += [str(tmp_path / "pkg" / "writer.py"), str(tmp_path / "pkg" / "holder.py")]
    _run, results = _index_run(files)
    _mark_all_imported(monkeypatch, True)
    _run, full = _index_run(files)
    assert [r.findings for r in results] == [r.findings for r in full]


def _mark_all_imported(monkeypatch, imported: bool) -> None:
    """Every module of the next index run marked imported (a full summary) or not (a partial one)."""
    import ptrlint.planner.index as index

    real = index.mark_imported

    def forced(tasks, locate):
        tasks = list(tasks)
        real(tasks, locate)
        for task in tasks:
            task.imported = imported

    monkeypatch.setattr(index, "mark_imported", forced)


def test_a_lookup_into_a_module_marked_unimported_asks_for_its_summary(tmp_path, monkeypatch):
    """The fallback when the imports mislead: a module found without its summary is analysed again
    with it, and its importer again with the answer."""
    files = write_pointer_package(tmp_path)
    _run, expected = _index_run(files)
    _mark_all_imported(monkeypatch, False)
    run, results = _index_run(files)
    assert run.tasks[str((tmp_path / "pkg" / "tables.py").resolve())].imported  # asked for, then summarised
    assert _codes(results) == _codes(expected) and ("use.py", 6, "PTR001") in _codes(results)


def test_a_cached_partial_summary_is_not_used_once_the_module_is_imported(tmp_path):
    """Run 1 caches a module nothing imports (partial summary); run 2 adds an importer: the module
    is analysed again for its full summary, and the importer gets the finding a cold run gets."""
    files = write_pointer_package(tmp_path)
    (tmp_path / "pkg" / "writer.py").write_text(_WRITER)
    (tmp_path / "pkg" / "holder.py").write_text(_HOLDER)
    files += [str(tmp_path / "pkg" / "writer.py"), str(tmp_path / "pkg" / "holder.py")]
    cache = str(tmp_path / "cache")
    run, _ = _index_run(files, cache)
    assert not run.tasks[str((tmp_path / "pkg" / "writer.py").resolve())].imported
    (tmp_path / "pkg" / "late.py").write_text(
        "import torch\nfrom pkg.writer import more_ptrs\n\n\ndef f(xs):\n"
        "    return torch.tensor(more_ptrs(xs), dtype=torch.int64)\n"
    )
    files.append(str(tmp_path / "pkg" / "late.py"))
    warm_run, warm = _index_run(files, cache)
    from ptrlint.planner.tasks import Stage

    writer = warm_run.tasks[str((tmp_path / "pkg" / "writer.py").resolve())]
    assert writer.imported and writer.stage is not Stage.RESTORED and "more_ptrs" in writer.summary.functions
    _cold_run, cold = _index_run(files)
    assert _codes(warm) == _codes(cold) and ("late.py", 6, "PTR001") in _codes(warm)


def test_a_file_alone_reaches_a_module_through_a_package_reexport(ptrlint, tmp_path):
    """``import kv`` ... ``kv.handles()`` in a file with no pointer word: ``kv/__init__.py`` (no evidence)
    re-exports it from a module nothing given imports directly, which is read all the same."""
    root = _write(
        tmp_path / "repo",
        {
            "kv/__init__.py": "from .blocks import handles\n",
            "kv/blocks.py": "def handles(ts):\n    return [t.data_ptr() for t in ts]\n",
            "kv/table.py": "import torch\n\nimport kv\n\n\ndef table(ts):\n"
            "    return torch.tensor(kv.handles(ts), dtype=torch.int64)  # expect: PTR001\n",
        },
    )
    assert _keys(_found(ptrlint, root, "kv/table.py")) == _keys(_found(ptrlint, root, ".")) == _expected(root)


def test_one_file_after_the_whole_tree_reads_its_neighbours_from_the_cache(tmp_path):
    """A pre-commit run on one file after the tree was linted: the modules it imports and those that
    import it are restored from the whole-tree run's entries (analysed for findings there, read for
    their summaries here), not analysed again; its findings are a cold run's."""
    from ptrlint.planner.tasks import Stage

    files = write_pointer_package(tmp_path)
    (tmp_path / "pkg" / "writer.py").write_text(_WRITER)
    (tmp_path / "pkg" / "holder.py").write_text(_HOLDER)
    files += [str(tmp_path / "pkg" / "writer.py"), str(tmp_path / "pkg" / "holder.py")]
    cache = str(tmp_path / "cache")
    _index_run(files, cache)
    one = [str(tmp_path / "pkg" / "holder.py")]
    warm_run, warm = _index_run(one, cache)
    neighbours = [t for t in warm_run.tasks.values() if not t.linted and not t.light]
    assert neighbours and all(t.stage is Stage.RESTORED for t in neighbours)
    again_run, again = _index_run(one, cache)
    assert not [t.module for t in again_run.tasks.values() if t.stage is Stage.ANALYSED]
    assert [r.findings for r in again] == [r.findings for r in warm]
    _cold_run, cold = _index_run(one)
    assert [r.findings for r in warm] == [r.findings for r in cold] and ("holder.py", 12, "PTR001") in _codes(warm)


def test_a_copy_of_the_tree_does_not_read_the_original_s_summaries(tmp_path):
    """Cached summaries hold their module's path (the evidence locations a finding names): a copy of
    the tree with the same contents and the same cache reports its own paths."""
    import shutil

    original = tmp_path / "a"
    original.mkdir()
    files = write_pointer_package(original)
    cache = str(tmp_path / "cache")
    _index_run(files, cache)
    copy = tmp_path / "b"
    shutil.copytree(original, copy)
    copied = [str(copy / Path(f).relative_to(original)) for f in files]
    _run, warm = _index_run(copied, cache)
    related = {r.path for result in warm for f in result.findings for r in f.related if r.path}
    assert related and all(str(original) not in path for path in related)


_BINDING_USER = """import torch
from pkg.session import handle


def staged(n):
    out = torch.zeros(n, dtype=torch.int64)
    out[0] = handle()
    return out
"""


@pytest.mark.parametrize(
    "returned, connected",
    [
        ("native.open_session()", False),  # a binding's result, in its own encoding: connects nothing
        ("t.data_ptr()", True),  # an address: the candidate is analysed, and its table reported
    ],
)
def test_only_addresses_connect_a_candidate(tmp_path, returned, connected):
    """A module with a site but no pointer evidence of its own is analysed only when it imports
    something holding addresses. A function handing out what a binding returned (FOREIGN) cannot give
    it a finding: before this, every such function of torch connected 800 candidates (55 s cold)."""
    from ptrlint.planner.tasks import Role

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "session.py").write_text(  # pointer evidence of its own: analysed, summarised
        f"import native\n\n\ndef handle(t=None):\n    return {returned}\n\n\ndef base(t):\n    return t.data_ptr()\n"
    )
    (tmp_path / "pkg" / "user.py").write_text(_BINDING_USER)
    files = [str(tmp_path / "pkg" / name) for name in ("__init__.py", "session.py", "user.py")]
    run, results = _index_run(files)
    user = next(t for t in run.tasks.values() if t.module == "pkg.user")
    assert (user.role is Role.CONNECTED) is connected
    assert (("user.py", 6, "PTR001") in _codes(results)) is connected
