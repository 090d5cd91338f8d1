"""The project index run: evidence that crosses the modules of a project, to a bounded fixpoint.

A run lints the files it was given, and reads (never reports) the project modules they need:
- modules their imports name (``wanted`` by a lookup into a module that has no summary yet);
- modules that import a linted module and may write addresses into its classes (found by a text
  scan of the project for files with pointer evidence that import it).
Each module is analysed once per round with a view of the summaries of the previous round; a
module is analysed again only when an answer it read has changed, for at most ``MAX_ROUNDS``
rounds. A file with a place for a finding but no evidence of its own (``buffers.py`` creating a
dataclass whose fields another module fills) is analysed once its imports reach evidence or other
modules write into its classes. Findings, summaries and what they read are cached by content, so
a pre-commit run on one file reads its neighbours' summaries from the cache.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterable
from dataclasses import replace

from ..analysis.options import analysis_options
from ..cache import Cache
from ..findings import FileResult
from ..gcpause import keep_heap, one_module, planning_heap
from ..project.consumers import ProjectConsumers
from ..project.layout import ModuleFiles, forget_listings, module_file, project_root
from ..project.link import ModuleLink
from ..project.view import ProjectView, consulted_changed
from ..settings import Settings
from ..sources import file_size, real_path
from .connections import CandidateRounds, Connections, OwnSymbols, connections_of
from .files import lint_file
from .import_graph import importers, mark_imported
from .manifest import Manifest
from .permute import permuted
from .rendered import rendered_from_cache
from .stored import from_cache, store, summary_key
from .tasks import Role, Stage, Task, classify, read_unlinted, restore_given
from .workers import POOL_MIN_READS, Job, RunPool

MAX_ROUNDS = 4
MAX_DEPTH = 4  # how far imports of files that were not given are followed


class ProjectRun:
    """Lint ``paths`` with the index.

    1. Every module with pointer evidence (the linted ones, the project files with evidence that
       import a linted one, and, a few levels deep, the modules they import) is analysed at once,
       in parallel; the modules they import that hold no evidence are read for their classes and
       re-exports only (no parse).
    2. Linted files with a place for a finding but no evidence of their own are analysed when
       they import a name whose summary holds pointer values, or others write into their classes.
    3. What read an answer that has changed since runs again, to a bounded fixpoint.
    """

    def __init__(
        self, paths: Iterable[str], settings: Settings, jobs: int, texts: dict[str, str] | None = None
    ) -> None:
        self.paths = list(paths)
        self.settings = settings
        self.round_settings = replace(
            settings, fix=False, diff=False, render_edits=False, cache_dir=None, prefilter=False
        )
        self.jobs = max(1, jobs)
        self.texts = texts or {}
        self.tasks: dict[str, Task] = {}  # by real path
        self.results: dict[str, FileResult] = {}
        self.cache = Cache(settings.cache_dir) if settings.cache_dir else None
        self.manifest = Manifest(self.cache.directory, Cache.key(b"", settings, "manifest")) if self.cache else None
        self._full_view: ProjectView | None = None
        self._last_view: ProjectView | None = None  # the latest view built: what it asked, the next one keeps
        self._consumers = ProjectConsumers()  # modules read for consumer answers, kept across rounds
        self._plain: set[str] = set()  # real paths of given files with neither evidence nor a site
        self._module_file = ModuleFiles()
        self._symbols: dict[int, OwnSymbols] = {}  # each summary's pointer symbols (by the summary's id)
        self._pool = RunPool(self.jobs, gc.isenabled())  # the classification's workers, kept for the first round

    # ----- the run ---------------------------------------------------------------------------------
    def run(self) -> list[FileResult]:
        with planning_heap():
            try:
                return self._run()
            finally:
                self._pool.close()

    def _run(self) -> list[FileResult]:
        forget_listings()
        with one_module():  # its tasks all stay alive: no collection while they arrive
            self._classify_given()
        keep_heap()  # the tasks stay alive to the end: later collections need not scan them
        given = [t for t in self.tasks.values() if not t.light]
        if self._pool.started:  # the classification's workers parse while this process plans
            self._pool.run_ahead(_surely_analysed(given, self.texts, self.cache), self.round_settings)
        self._scan_importers()
        self._close_dependencies([t for t in self.tasks.values() if t.role is not Role.LIGHT])
        mark_imported(self.tasks.values(), self._module_file)
        pending = [t for t in given if not self._from_cache(t)]
        for task in self.tasks.values():
            if task.summary is None and not task.done:
                # provisional: its classes and re-exports, until its own analysis replaces it, so that
                # the first round already answers "is this a class, with which fields" as later ones will
                task.summary = task.provisional if task.provisional is not None else task.light_summary()
        first = {id(t) for t in pending}
        # the modules read for the given ones (their imports, their importers) are served by the cache too:
        # a run on one file of a tree linted before reads its neighbours' entries, it does not analyse them
        pending += [
            t
            for t in self.tasks.values()
            if not t.light and not t.done and id(t) not in first and not self._from_cache(t)
        ]
        self._execute(pending, self._refresh())
        keep_heap()  # and the first round's summaries
        self._settle()
        self._finish()
        self._consumers.close()
        if self.manifest is not None and self.cache is not None and self.manifest.dirty:
            self.cache.ensure_dir()
            self.manifest.save()
        return [self.results[p] for p in self.paths if p in self.results]

    def _classify_given(self) -> None:
        """Every given file: answered from the manifest when unchanged, else read and classified
        (in a pool when enough files need reading)."""
        unread: list[str] = []
        for path in self.paths:
            real = real_path(path)
            restored = None
            if self.manifest is not None and path not in self.texts and real not in self.texts:
                restored = restore_given(self.manifest, path, real)
            if restored is None:
                unread.append(path)
            else:
                self._classified(path, restored)
        if not unread:
            return
        pool = self._pool.executor() if self.jobs > 1 and len(unread) >= POOL_MIN_READS else None
        ordered = sorted(unread, key=lambda p: -file_size(p))
        work = functools.partial(classify, settings=self.settings, texts=self.texts)
        outputs = pool.map(work, ordered, chunksize=16) if pool is not None else map(work, ordered)
        for path, (answer, sig, record) in zip(ordered, outputs):
            self._classified(path, answer)
            if self.manifest is not None and record is not None:
                self.manifest.put(real_path(path), sig, record)

    def _classified(self, path: str, answer: Task | FileResult) -> None:
        if isinstance(answer, FileResult):
            self.results[path] = answer
            if answer.error is None:  # the prefilter's answer: an importer's dependency need not ask again
                self._plain.add(real_path(path))
        elif answer.real not in self.tasks:
            self._register(answer)

    def _register(self, task: Task) -> None:
        self.tasks[task.real] = task
        if task.real not in self.texts and task.path not in self.texts:  # as on disk
            self._consumers.known_imports(task.real, task.modules())  # the reader need not read it again

    def _done(self, task: Task, result: FileResult) -> None:
        summary = result.summary if task.imported else None
        task.writes = result.summary if not task.imported else None
        task.result, task.summary, task.consulted = result, summary, result.consulted or {}
        task.stage = Stage.ANALYSED
        self._full_view = None

    def _add_unlinted(self, path: str, real: str) -> Task | None:
        """A project module that was not given, read for its summary (or restored unread)."""
        task = read_unlinted(path, real, self.settings, self.texts, self.manifest, real in self._plain)
        if task is not None:
            self._register(task)
        return task

    def _scan_importers(self) -> None:
        """Project files with pointer evidence that import a linted module may write into its classes."""
        for path, real in importers(self.tasks, self.paths, self.settings, self.manifest):
            self._add_unlinted(path, real)

    def _close_dependencies(self, tasks: list[Task]) -> None:
        """The project modules these tasks import (read without parsing), added as tasks: summaries
        where they hold evidence, classes and re-exports where not. An added module is followed in
        turn (to MAX_DEPTH): with evidence, all its imports; without, the modules it re-exports from
        (a package's ``__init__``: what ``pkg.Name`` resolves to)."""
        queue: list[tuple[Task, list[str] | None]] = [(t, None) for t in tasks]  # None: all its imports
        depth = {t.real: 0 for t in tasks}
        while queue:
            task, only = queue.pop()
            if only is None:
                if task.closed:
                    continue
                task.closed = True
            bases = task.bases
            for module in task.modules() if only is None else only:
                located = self._module_file(module, bases)
                if located is None:
                    continue
                found, real = located
                if real == task.real:
                    continue
                known = self.tasks.get(real)
                if known is None:
                    known = self._add_unlinted(found, real)
                    if known is None:
                        continue
                    depth[real] = depth.get(task.real, 0) + 1
                    if depth[real] < MAX_DEPTH:
                        queue.append((known, None if not known.light else known.light_summary().imports))
                if known.light and known.summary is None:
                    known.summary = known.light_summary()

    def _execute(self, tasks: list[Task], view: ProjectView) -> None:
        if not tasks:
            return
        for task in tasks:
            task.stage = Stage.PENDING
        args = [self._args(t) for t in permuted(_largest_first(tasks), "round")]
        by_path = {t.path: t for t in tasks}
        outputs = self._pool.run_round(args, view)
        for job, result in zip(args, outputs):
            self._done(by_path[job.path], result)

    def _args(self, task: Task) -> Job:
        overridden = task.path in self.texts or task.real in self.texts
        text = (task.text if task.has_text else None) if not task.analyse or overridden else None
        return Job(task.path, self.round_settings, task.analyse, text, not task.imported, task.whole)

    def _view(self) -> ProjectView:
        if self._full_view is None:  # modules in name order: the first of equal writes is the evidence shown
            tasks = sorted(self.tasks.values(), key=lambda t: (t.module, t.real))  # never the order of arrival
            summaries = {t.module: t.summary for t in tasks if t.summary is not None and not t.summary.empty}
            writers = [
                s
                for s in (t.summary if t.summary is not None else t.writes for t in tasks)
                if s is not None and not s.empty
            ]
            view = ProjectView(summaries, self._consumers, writers)
            view.options = analysis_options(self.settings.config)
            if self._last_view is not None:
                view.inherit(self._last_view)
            self._full_view = self._last_view = view
        return self._full_view

    def _connected(self, task: Task, connections: Connections) -> bool:
        """A candidate (a site, no evidence of its own) needs analysis when it imports a name whose
        summary holds pointer values (for a class: and reaches them), or other modules write
        addresses into its classes."""
        return connections.written_into(task.module) or connections.used_by(task)

    def _settle(self) -> None:
        """Analyse candidates that got connected, and run again what read an answer that has
        changed since (writes of importers into a module's classes, summaries of cycles)."""
        candidates = CandidateRounds()
        tried: set[str] = set()  # the modules asked for so far (each is read once)
        for _round in range(MAX_ROUNDS):
            view = self._view()
            connections = connections_of(view, self._symbols)
            candidates.start(connections)
            again = []
            unread: set[str] = set()  # modules a restored entry's changed answers asked for
            for task in permuted(list(self.tasks.values()), "settle"):
                if task.role is Role.CANDIDATE:
                    connected = functools.partial(self._connected, connections=connections)
                    if candidates.connected(task, connected):
                        task.role, task.summary = Role.CONNECTED, None
                        self._close_dependencies([task])
                        if not self._from_cache(task) or consulted_changed(
                            task.consulted, view, task.module, task.bases
                        ):
                            again.append(task)
                elif not task.light and task.done:
                    asked: set[str] = set()
                    if consulted_changed(
                        task.consulted,
                        view,
                        task.module,
                        task.bases,
                        fresh=task.stage is not Stage.RESTORED,
                        wanted=asked,
                    ):
                        if task.stage is Stage.RESTORED and asked - tried and _round < MAX_ROUNDS - 1:
                            unread |= asked - tried  # read what it read first (a run on part of the tree): it may hold
                        else:
                            again.append(task)
            wanted = {m for t in self.tasks.values() for m in (t.result.wanted if t.result and t.result.wanted else ())}
            wanted |= unread
            tried |= wanted
            added, restored = _read_wanted(self, wanted, last=_round == MAX_ROUNDS - 1)
            again.extend(t for t in added if all(t is not a for a in again))
            if not again:
                if restored or unread:
                    self._refresh()
                    continue
                break
            self._execute(again, self._view() if not wanted else self._refresh())
        self.view = self._view()

    def _refresh(self) -> ProjectView:
        self._full_view = None
        return self._view()

    # ----- results ---------------------------------------------------------------------------------
    def _finish(self) -> None:
        final = replace(self.settings, cache_dir=None)
        for task in self.tasks.values():
            if not task.linted:
                # read for its summary, analysed here: kept apart from the entry of a run that lints it
                if task.stage is Stage.ANALYSED and task.result is not None and task.key:
                    store(self.cache, self.texts, task, task.result, key=summary_key(task.key))
                continue
            self.results[task.path] = _final_result(task, final, self.view, self.cache, self.texts)

    def _from_cache(self, task: Task) -> bool:
        """A cached result for this content; whether what it read still holds is checked in _settle."""
        return from_cache(self.cache, self.texts, task)


def linted_roots(tasks: Iterable[Task]) -> set[str]:
    """The project roots of the linted modules (what a run memo watches: planner/memo.py)."""
    return {str(project_root(t.real)) for t in tasks if t.linted}


def _final_result(
    task: Task, final: Settings, view: ProjectView, cache: Cache | None, texts: dict[str, str]
) -> FileResult:
    """A linted module's result as the run reports it (stored in the cache first): its findings, with
    their rendered fixes when shown, or fixed (``--fix``/``--diff``) with the final view."""
    result = task.result or FileResult(path=task.path)
    if not task.analyse:
        result = FileResult(path=task.path)
    fixing = final.fixing and any(final.applies(f) for f in result.findings)
    rendered = None
    if not fixing and final.render_edits and any(f.fix is not None for f in result.findings):
        rendered = rendered_from_cache(task, result.findings)
    store(cache, texts, task, result, rendered)
    if fixing:
        # fix (or diff) with the final view, in this process: the files with fixes are few; the
        # findings of the last round serve when every answer they read still holds
        current = (
            task.stage is Stage.ANALYSED
            and result.source_digest
            and not consulted_changed(task.consulted, view, task.module, task.bases, fresh=True)
        )
        return lint_file(
            task.path,
            final,
            ModuleLink(view, task.path),
            text_override=texts.get(task.path),
            findings=result.findings if current else None,
            findings_digest=result.source_digest,
        )
    if rendered is not None:
        return replace(result, findings=rendered)
    return result


def _read_wanted(run: ProjectRun, wanted: set[str], last: bool) -> tuple[list[Task], bool]:
    """The modules lookups asked for that nobody had read yet: added (restored from the cache when a
    round is left to check what they read, else to analyse), or, read for their writes only so
    far, marked imported. Returns those to analyse, and whether any came from the cache."""
    out: list[Task] = []
    restored = False
    for module in permuted(sorted(wanted), "wanted"):
        found = next((module_file(module, t.bases) for t in run.tasks.values() if t.linted), None)
        known = run.tasks.get(real_path(str(found))) if found is not None else None
        if found is not None and known is None:
            added = run._add_unlinted(str(found), real_path(str(found)))
            if added is not None and added.light:
                added.summary = added.light_summary()
            elif added is not None and not last and run._from_cache(added):
                restored = True
            elif added is not None:
                out.append(added)
        elif known is not None and not known.imported and not known.light:
            known.imported = True  # looked into after all: analysed again with its full summary
            known.stage = Stage.PENDING
            if not last and run._from_cache(known):
                restored = True
            else:
                out.append(known)
        elif known is not None and not known.whole and known.summary is not None and known.summary.omitted:
            known.whole = True  # a name its cut analysis left out was looked up: analysed again, every statement
            known.stage = Stage.PENDING
            if not last and run._from_cache(known):
                restored = True
            else:
                out.append(known)
    return out, restored


def _surely_analysed(given: list[Task], texts: dict[str, str], cache: Cache | None) -> list[str]:
    """The given modules analysed for findings in the first round whatever the plan (read from
    disk, no cached result), largest first: what the workers parse ahead (planner/workers.py)."""
    sure = [
        t
        for t in given
        if t.analyse
        and t.path not in texts
        and t.real not in texts
        and not t.path.endswith(".ipynb")
        and not (cache is not None and t.key and cache.holds(t.key))
    ]
    return [t.path for t in permuted(_largest_first(sure), "ahead")]


def _largest_first(tasks: list[Task]) -> list[Task]:
    """The order work is handed to the workers in: the largest modules first, so that none is left
    to run alone at the end."""
    return sorted(tasks, key=lambda t: -(t.size or len(t.text)))
