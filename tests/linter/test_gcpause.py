"""The cyclic collector is paused while a module is analysed, and a module's analysis leaves no
cyclic garbage behind (its tree and facts are freed by reference counting when it returns).

Without the pause, CPython's parser ran several times slower once earlier modules' trees were
alive, and with reference cycles among the analysis helpers every module's tree and facts stayed
alive until a full collection (benchmarks/results/stages.md has the cyclic collector's share).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ptrlint.config import Config
from ptrlint.engine import Settings, process_text, select_codes
from ptrlint.gcpause import one_module
from ptrlint.planner.index import ProjectRun

from ..conftest import write_pointer_package

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))
ALL = select_codes(["ALL"], [], [])


@contextmanager
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        (gc.enable if enabled else gc.disable)()


class Node:
    """An object in a reference cycle of its own: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def cyclic_garbage(work) -> list[object]:  # type: ignore[no-untyped-def]
    """What ``work`` leaves that only the cyclic collector could free (the collector is off while
    it runs, so nothing is collected behind the test's back)."""
    gc.collect()
    gc.disable()
    work()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    return list(gc.garbage)


def test_the_collector_is_paused_inside_and_enabled_again_after():
    with collector_restored():
        gc.enable()
        with one_module():
            assert not gc.isenabled()
            with one_module():  # nested: still paused, and the outer one collects
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()


def test_a_program_that_disabled_the_collector_keeps_it_disabled():
    with collector_restored():
        gc.disable()
        with one_module():
            pass
        assert not gc.isenabled()


def test_the_collector_is_enabled_again_when_the_analysis_raises():
    with collector_restored():
        gc.enable()
        with pytest.raises(ValueError), one_module():
            raise ValueError("bad module")
        assert gc.isenabled()


def test_the_young_cycles_of_a_module_are_collected_when_it_is_done():
    with collector_restored():
        gc.enable()
        gc.collect()
        with one_module():
            for _ in range(10_000):
                Node()  # cycles: only the collector frees them
            assert sum(type(o) is Node for o in gc.get_objects(generation=0)) == 10_000
        assert not any(type(o) is Node for o in gc.get_objects())


@pytest.mark.parametrize("fix", [False, True], ids=["lint", "fix"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_analysing_a_module_leaves_no_cyclic_garbage(example, fix):
    text = example.read_text()
    settings = Settings(Config(), ALL, fix=fix, render_edits=True)
    results = []
    with collector_restored():
        garbage = cyclic_garbage(lambda: results.append(process_text(text, example.name, settings)))
    assert results[0].fixed if fix else results[0].findings  # the examples are buggy: it ran to their fixes
    assert garbage == [], f"{len(garbage)} objects in cycles, e.g. {sorted({type(o).__name__ for o in garbage})[:10]}"


def test_an_index_run_leaves_no_cyclic_garbage_per_module(tmp_path):
    """The analyses of an index run (its summaries and what they consulted) free their modules too,
    and so does the reader of consumer modules, which the run keeps until it ends. (Only this
    run's modules count: other tests may leave theirs to the collector.)"""
    from ptrlint.analysis.consumers.search import Consumers
    from ptrlint.analysis.values.facts import ModuleFacts

    files = write_pointer_package(tmp_path, "gcpkg")
    runs: list[ProjectRun] = []

    def work() -> None:
        run = ProjectRun(files, Settings(Config(), ALL), jobs=1)
        run.run()
        runs.append(run)

    with collector_restored():
        garbage = cyclic_garbage(work)
    assert any(r.findings for r in runs[0].results.values())
    ours = [
        o
        for o in garbage
        if (isinstance(o, ModuleFacts) and o.model.context.module.startswith("gcpkg"))
        or (isinstance(o, Consumers) and o.module_name.startswith("gcpkg"))
    ]
    assert ours == [], f"{len(ours)} analyses of this run left in cycles"


def test_what_a_planner_run_kept_out_of_collections_is_collectable_again_after_it(tmp_path):
    """keep_heap freezes what is alive (the run's tasks, its summaries); when the run ends nothing
    stays frozen, and cycles that were alive-but-garbage at the freeze are collected again."""
    import weakref

    from ptrlint.gcpause import keep_heap, planning_heap

    with collector_restored():
        gc.enable()
        gc.collect()
        with planning_heap():
            node = weakref.ref(Node())  # garbage in a cycle, alive when the heap is kept
            keep_heap()
            assert gc.get_freeze_count() > 0
            gc.collect()
            assert node() is not None  # left out of collections while the run goes on
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert node() is None
        files = write_pointer_package(tmp_path, "frozenpkg")
        ProjectRun(files, Settings(Config(), ALL), jobs=1).run()
        assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_program_that_froze_objects_of_its_own_keeps_them_frozen(tmp_path):
    files = write_pointer_package(tmp_path, "thawpkg")
    with collector_restored():
        gc.enable()
        gc.freeze()
        try:
            frozen = gc.get_freeze_count()
            ProjectRun(files, Settings(Config(), ALL), jobs=1).run()
            assert 0 < gc.get_freeze_count() <= frozen  # not thawed, nothing of ours added (some freed)
        finally:
            gc.unfreeze()
