"""The index run's workers: the pool that classifies stays up for the first round, and parses the
modules surely analysed while the planner works (ptrlint/planner/workers.py). Invariants: a module
parsed ahead is analysed exactly as one parsed in its round; what cannot be parsed ahead (not
reached, unreadable, a syntax error) is handed back to the round, which reports it; a run that ends
before its plan stops its workers; the view a worker gets pickled answers as the planner's does."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
from pathlib import Path

import pytest

from ..conftest import write_pointer_package

_MODULE = """import torch
from pkg.tables import pointer_table


def build_{i}(xs):
    table = torch.tensor(pointer_table(xs), dtype=torch.int64)
    return table + {i}
"""

_PLAIN = """import torch


def scale_{i}(x):
    return torch.zeros(4, dtype=torch.int64) + {i}
"""


def _settings():
    from ptrlint.config import Config
    from ptrlint.engine import Settings, select_codes

    return Settings(Config(), select_codes(["ALL"], [], []))


def _project(root: Path, modules: int = 40) -> list[str]:
    """The two-module pointer package, ``modules`` modules that store its table as int64 (a
    finding each, evidence from another module), a few without evidence, and one that cannot be
    parsed: enough given files for the run to classify them in a pool."""
    files = write_pointer_package(root)
    for i in range(modules):
        path = root / "pkg" / f"m{i:02d}.py"
        path.write_text(_MODULE.format(i=i) + "\n# padding\n" * i)  # sizes differ: largest parsed first
        files.append(str(path))
    for i in range(3):
        path = root / "pkg" / f"plain{i}.py"
        path.write_text(_PLAIN.format(i=i))
        files.append(str(path))
    broken = root / "pkg" / "broken.py"
    broken.write_text("import torch\nx_ptr = t.data_ptr(\ntorch.zeros(4, dtype=torch.int64)\n")
    files.append(str(broken))
    return files


def _outcome(results) -> list[tuple[str, list[tuple[int, int, str, str]], str | None]]:
    return [
        (
            Path(r.path).name,
            [(f.line, f.column, f.code, f.message) for f in r.findings],
            r.error.message if r.error else None,
        )
        for r in results
    ]


def test_a_run_that_parses_ahead_finds_what_one_process_finds(tmp_path, monkeypatch):
    import ptrlint.planner.workers as workers
    from ptrlint.planner.index import ProjectRun

    files = _project(tmp_path)
    alone = _outcome(ProjectRun(files, _settings(), jobs=1).run())
    real_scan, real_parse = ProjectRun._scan_importers, workers.parse_host
    parsed = multiprocessing.get_context("fork").Event()  # the workers are forked: they share it

    def parse_and_tell(*args):  # noqa: ANN202
        tree = real_parse(*args)
        parsed.set()
        return tree

    def slow_plan(self):  # a plan that takes a while, as a large tree's does: the workers parse meanwhile
        assert parsed.wait(timeout=60), "no worker parsed ahead while the plan waited"
        real_scan(self)

    monkeypatch.setattr(workers, "parse_host", parse_and_tell)
    monkeypatch.setattr(ProjectRun, "_scan_importers", slow_plan)
    run = ProjectRun(files, _settings(), jobs=2)
    pooled = _outcome(run.run())
    assert run._pool.parsed_ahead > 0  # some modules were analysed from trees parsed ahead
    assert pooled == alone
    assert sum(1 for _name, found, _error in alone if any(code == "PTR001" for _l, _c, code, _m in found)) >= 40
    assert any(name == "broken.py" and error for name, _found, error in alone)  # reported by the round


@pytest.fixture
def planned(tmp_path, monkeypatch):
    """A planned project (one process) and its view published as a worker gets it; the worker
    module's state reset around each test."""
    import ptrlint.planner.workers as workers
    from ptrlint.planner.index import ProjectRun

    for name, value in (("_VIEW", None), ("_PARTIAL", frozenset()), ("_LOADED", None)):
        monkeypatch.setattr(workers, name, value)
    files = _project(tmp_path, modules=6)
    run = ProjectRun(files, _settings(), jobs=1)
    run.run()
    published = str(tmp_path / "plan.pickle")
    return run, files, published


def _publish(published: str, plan, after: threading.Event | None = None) -> threading.Thread:
    """Publish ``plan`` at once, or once ``after`` is set."""

    def write():
        if after is not None:
            assert after.wait(timeout=60)
        with open(published + ".partial", "wb") as handle:
            pickle.dump(plan, handle)
        os.replace(published + ".partial", published)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


@pytest.fixture
def parse_done(monkeypatch) -> threading.Event:
    """Set when a parse ahead has parsed all it will (it freezes its trees, then waits for the plan)."""
    import ptrlint.planner.workers as workers

    done = threading.Event()
    real_freeze = workers.gc.freeze

    def freeze_and_tell() -> None:
        real_freeze()
        done.set()

    monkeypatch.setattr(workers.gc, "freeze", freeze_and_tell)
    return done


def test_parse_ahead_analyses_what_it_parsed_as_its_round_would(planned, parse_done):
    import ptrlint.planner.workers as workers

    run, files, published = planned
    view = run._view()
    missing = str(Path(files[0]).parent / "gone.py")
    paths = [*files[3:], missing]
    thread = _publish(published, workers._Plan(view.shipped(), frozenset()), after=parse_done)
    done, rest = workers.parse_ahead(paths, run.round_settings, published)
    thread.join()
    assert sorted(rest) == sorted(p for p in paths if p.endswith(("broken.py", "gone.py")))
    assert set(done) == set(paths) - set(rest)
    workers.use_view(view)
    for path, result in done.items():
        expected = workers.execute(workers.Job(path, run.round_settings, True, None, False))
        assert _outcome([result]) == _outcome([expected])


def test_a_plan_published_before_the_parse_leaves_every_path_to_the_round(planned):
    import ptrlint.planner.workers as workers

    run, files, published = planned
    _publish(published, workers._Plan(run._view().shipped(), frozenset())).join()
    assert workers.parse_ahead(files, run.round_settings, published) == ({}, files)


def test_a_run_that_ends_before_its_plan_gets_every_path_back(planned, parse_done):
    import ptrlint.planner.workers as workers

    run, files, published = planned
    thread = _publish(published, workers._Plan(None, frozenset()), after=parse_done)
    done, rest = workers.parse_ahead(files, run.round_settings, published)
    thread.join()
    assert done == {} and sorted(rest) == sorted(files)


def test_closing_a_pool_before_its_plan_stops_the_workers_parsing_ahead(tmp_path, monkeypatch):
    import ptrlint.planner.workers as workers
    from ptrlint.planner.workers import RunPool

    files = _project(tmp_path, modules=8)
    waiting = multiprocessing.get_context("fork").Event()  # set in a forked worker, read here
    real_freeze = workers.gc.freeze

    def freeze_and_tell() -> None:  # a parse ahead is done and waits for the plan
        real_freeze()
        waiting.set()

    monkeypatch.setattr(workers.gc, "freeze", freeze_and_tell)
    pool = RunPool(2, collect=True)
    list(pool.executor().map(os.path.basename, files))  # the workers are up, as after a classification
    pool.run_ahead(files, _settings())
    assert pool.ahead
    published = pool._published
    assert waiting.wait(timeout=60), "no worker finished its parse ahead"
    closing = threading.Thread(target=pool.close)
    closing.start()
    closing.join(timeout=60)
    try:
        assert not closing.is_alive() and not pool.started and not pool.ahead
    finally:
        if closing.is_alive():  # unblock the workers, or this process would wait for them at its exit
            from ptrlint.planner.workers import _Plan

            _publish(published, _Plan(None, frozenset())).join()


def test_shipped_summaries_answer_as_the_planners(planned):
    from ptrlint.project.view import ShippedSummaries

    run, _files, _published = planned
    summaries = run._view().summaries
    shipped = pickle.loads(pickle.dumps(ShippedSummaries(summaries)))
    assert shipped._loaded == {} and len(shipped) == len(summaries) and set(shipped) == set(summaries)
    assert "pkg.tables" in shipped and "pkg.nothing" not in shipped and shipped.get("pkg.nothing") is None
    assert shipped["pkg.tables"].to_json() == summaries["pkg.tables"].to_json()
    assert shipped["pkg.tables"] is shipped.get("pkg.tables")  # unpickled once
    assert list(shipped._loaded) == ["pkg.tables"]


def test_shipped_consumers_read_the_planners_imports_only_when_asked(planned, monkeypatch):
    import ptrlint.project.consumers as consumers

    run, _files, _published = planned
    original = run._view().consumers
    assert original._known  # the planner's import table: the worker need not read the files
    shipped = pickle.loads(pickle.dumps(original.shipped()))
    assert shipped._known == {} and shipped._known_pickled is not None
    reads: list[str] = []
    real_open = open
    monkeypatch.setattr(
        consumers, "open", lambda path, *a, **k: reads.append(path) or real_open(path, *a, **k), raising=False
    )
    tables = Path(run.paths[0]).parent / "tables.py"
    assert shipped._importers(tables, "pkg.tables") == original._importers(tables, "pkg.tables")
    assert shipped._known == original._known and shipped._known_pickled is None
    assert not reads  # every project file's imports came from the planner's table


def test_an_analysis_given_its_tree_is_the_analysis_of_its_text():
    from ptrlint import engine
    from ptrlint.analysis.semantic.device import parse_host

    text = "import torch\n\ndef f(xs):\n    return torch.tensor([x.data_ptr() for x in xs], dtype=torch.int64)\n"
    settings = _settings()
    plain = engine.analyse_module(text, "m.py", settings.config, settings.enabled)
    given = engine.analyse_module(text, "m.py", settings.config, settings.enabled, tree=parse_host(text, engine.parse))
    assert [f.to_json() for f in given.findings] == [f.to_json() for f in plain.findings] and plain.findings
