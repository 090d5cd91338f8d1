"""The planner: everything above the per-file engine.

``cli`` (and the language server, the flake8 plugin) hand it the discovered files and one
resolved :class:`~ptrlint.settings.Settings` per configuration. It decides how the work runs:
with the project index (the default), a :class:`~ptrlint.planner.index.ProjectRun` that reads the
modules the files need and analyses them in bounded rounds; without it, each file alone, answered
from the prefilter or the cache when possible and otherwise in a process pool once the work is
big enough to pay for one. The engine below it sees one text at a time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..findings import FileResult
from ..settings import Settings
from ..sources import file_size
from .files import lint_file, lint_notebook, process_file, quick_result
from .memo import RunMemo
from .workers import POOL_MIN_PARSES, die_with_parent

if TYPE_CHECKING:  # a process pool is imported when one starts: one file, or a warm run, never does
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = ["lint_text", "process_file", "run"]


def lint_text(text: str, path: str, settings: Settings) -> FileResult:
    """One text (an editor buffer, stdin with a file name, flake8's lines), never raises.

    With the project index on and a ``path`` that is a file of a project, the text is analysed
    with what the project's other modules say, read from disk (or the cache)."""
    if settings.project_index and os.path.isfile(path):
        from .index import ProjectRun

        run_ = ProjectRun([path], settings, 1, texts={path: text, os.path.realpath(path): text})
        results = run_.run()
        return results[0] if results else FileResult(path=path)
    from .. import engine  # the analysis and the rules: imported when a module is analysed

    return engine.process_text(text, path, settings)


def _index_run(modules: list[str], settings: Settings, jobs: int) -> list[FileResult]:
    """The modules linted with the project index: from the run memo when nothing they depend on has
    changed since a run that linted them (planner/memo.py), else planned, and then recorded."""
    memo = RunMemo(settings) if RunMemo.usable(settings) else None
    served = memo.answer(modules) if memo is not None else None
    if served is not None:
        return served
    from .index import ProjectRun, linted_roots  # the planner proper, and through it the analysis

    run_ = ProjectRun(modules, settings, jobs)
    results = run_.run()
    if memo is not None:
        memo.record(results, linted_roots(run_.tasks.values()), run_.tasks)
    return results


def _worker(args: tuple[str, Settings]) -> FileResult:
    return lint_file(*args)


def run(paths: Sequence[str], settings: Settings, jobs: int) -> list[FileResult]:
    """Process files; results in the order of ``paths``.

    Files answered without parsing (prefiltered, cached, unreadable) are handled here; the rest go
    to a process pool as soon as they are found, largest first, so the workers parse while this
    process is still reading and prefiltering. A run with fewer than ``POOL_MIN_PARSES`` files to
    parse (a warm run, one file from pre-commit) never starts a pool.
    """
    if settings.project_index:
        notebooks = [p for p in paths if p.endswith(".ipynb")]
        modules = [p for p in paths if not p.endswith(".ipynb")]
        done = {r.path: r for r in _index_run(modules, settings, jobs)} if modules else {}
        done.update({p: lint_notebook(p, settings) for p in notebooks})
        return [done[p] for p in paths if p in done]
    results: list[FileResult | None] = [None] * len(paths)
    order = sorted(range(len(paths)), key=lambda i: -file_size(paths[i]))
    pending: list[int] = []
    futures: dict[int, Future[FileResult]] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for i in order:
            quick = quick_result(paths[i], settings)
            if quick is not None:
                results[i] = quick
                continue
            pending.append(i)
            if pool is None and jobs > 1 and len(pending) >= POOL_MIN_PARSES:
                from concurrent.futures import ProcessPoolExecutor

                pool = ProcessPoolExecutor(max_workers=jobs, initializer=die_with_parent)
            if pool is not None:
                for j in pending:
                    futures[j] = pool.submit(_worker, (paths[j], settings))
                pending.clear()
        for i in pending:
            results[i] = lint_file(paths[i], settings)
        for i, future in futures.items():
            results[i] = future.result()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return [r for r in results if r is not None]
