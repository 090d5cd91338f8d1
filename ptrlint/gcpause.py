"""Cyclic garbage collection paused while one module is analysed, and run once when it is done.

Analysing a module allocates its whole tree and every fact about it, and all of it stays alive
until the module is done. CPython's collector counts those allocations and, every 700 of them,
scans the young objects; what survives two scans is promoted to the old generation, which a full
collection scans as a whole. So a large module was scanned several times while it was being
analysed, and the trees and facts of earlier modules, which reference cycles keep alive until a
full collection (the analysis helpers point back at the facts they serve), were scanned again
and again: on the installed torch tree the collector was 30 % of a cold run, and CPython's parser
ran 3.4x slower with earlier trees alive than without (``benchmarks/stages.py`` times the
collector; ``benchmarks/results/stages.md``).

Within :func:`one_module` nothing is collected; when the outermost one ends, the objects
allocated inside it, still all in the young generation, are collected once: the module's cyclic
garbage is freed there and what it returns (findings, a summary) is promoted. The peak memory is
what the module itself holds, as before: nothing of it was collectable before it was done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_module() -> Iterator[None]:
    """Collection paused inside; the young generation collected once at the end. Nested uses, and
    uses while the collector is disabled (by us or by an embedding program), change nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def keep_heap() -> None:
    """Leave every object alive now out of later collections, until :func:`planning_heap` ends.

    The planner builds a run's tasks and summaries once and keeps them to the end, and a collection
    of the old generation scanned all of them again (torch: 0.15 s in two full collections, of
    0.28 s in the collector, in the planner's own process); worker processes forked after this do
    not scan them either. Garbage among them (the classification pool's, cycles of the standard
    library) is collected once the run ends. Only inside a :func:`planning_heap` that owns the
    frozen generation (a program that froze objects of its own keeps them as they are)."""
    if _owner and gc.isenabled():
        gc.freeze()


_owner: list[bool] = []  # the planning_heap contexts open now, and whether the outermost may freeze


@contextmanager
def planning_heap() -> Iterator[None]:
    """One planner run: what :func:`keep_heap` left out is collectable again when it ends."""
    outermost = not _owner
    if outermost:
        if gc.get_freeze_count():  # another program's frozen objects: not ours to thaw
            yield
            return
        _owner.append(True)
    try:
        yield
    finally:
        if outermost:
            _owner.clear()
            gc.unfreeze()
