"""The worker processes of an index run, and the parse that runs ahead of the first round's view.

A cold run classifies the given files in a pool of workers, plans in this process (the imports
closed, the imported modules marked), then analyses the modules in parallel, each with a view of
the plan. While the planner works (0.3 s of a 3 s torch run) the workers would idle: so the pool
that classified the files stays up (:class:`RunPool`), and each worker parses its share of the
modules surely analysed (given files with evidence and a site, read from disk, largest first)
until the planner publishes the view, or it has parsed ``AHEAD_CHARACTERS``; then it analyses what
it parsed and hands back what it had not reached, which the round analyses as any other module.
CPython's parser is a third of the analysis, and needs no view.

The workers were started before the view existed, so it reaches them pickled, through a file
written whole and renamed into place, with its summaries pickled apart and unpickled on a worker's
first lookup (:meth:`ProjectView.shipped`). Later rounds start a pool with their view, as before.
A worker waiting for a plan that never comes stops when the run closes its pool (it publishes an
empty plan) or when the planner's process is gone.
"""

from __future__ import annotations

import ast
import gc
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ..analysis.semantic.device import parse_host
from ..findings import FileResult
from ..settings import Settings
from ..sources import read_source
from .files import lint_file
from .permute import jitter

if TYPE_CHECKING:  # a process pool is imported when one starts: one file, or a warm run, never does
    from concurrent.futures import Future, ProcessPoolExecutor

    from ..project.view import ProjectView


class Job(NamedTuple):
    """One module's analysis in a round, as a worker gets it (pickled)."""

    path: str
    settings: Settings
    findings: bool  # its findings are wanted; else only its summary
    text: str | None  # the text to analyse (an editor's buffer, a text kept in memory); None: read from disk
    partial: bool  # nothing in the run imports it: only its writes into other modules' classes are kept
    whole: bool = False  # another module asked for a name a cut analysis left out: analyse all of it


# characters of source each worker parses ahead at most: its trees wait alive (about 30 bytes of
# tree per character; device bodies are blanked), 2,000,000 is about what a torch plan gives it time for
AHEAD_CHARACTERS = 2_000_000
# The least work worth a process pool: starting one costs about what parsing a few files or reading a few
# dozen does, so fewer files to parse (a run without the index) or to read (the index run's first step:
# pre-commit, an editor) are handled in the planner's process.
POOL_MIN_PARSES = 4
POOL_MIN_READS = 32
_POLL = 0.002  # seconds between a waiting worker's looks for the published plan


@dataclass
class _Plan:
    """What the planner publishes for the first round: the view, and which modules of it are
    analysed for a partial summary (no module of the run imports them). None: the run ended
    before a round (an error): the parse ran ahead for nothing."""

    view: ProjectView | None
    partial: frozenset[str]


_VIEW: ProjectView | None = None
_PARTIAL: frozenset[str] = frozenset()
_LOADED: str | None = None  # the file the worker's plan was loaded from


def die_with_parent() -> None:
    """A worker ends when the process that started it ends, however it ends (killed included): Linux's
    parent-death signal. Elsewhere the workers notice on their next job (the executor's own check)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def use_view(view: ProjectView) -> None:
    """The initializer of a pool started with the view (a settle round)."""
    global _VIEW, _LOADED
    die_with_parent()
    _VIEW, _LOADED = view, None


def _start_worker(collect: bool) -> None:
    """The initializer of a run's pool: the collector as it was before the planner paused it for
    the classification (the workers are forked inside that pause: see ``ProjectRun._run``), since
    the workers live on to analyse modules."""
    die_with_parent()
    if collect:
        gc.enable()


PLAN_PREFIX = "ptrlint-plan-"


def sweep_stale_plans() -> None:
    """Remove the plan folders of runs whose process is gone (killed before it could remove its own)."""
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(PLAN_PREFIX):
            continue
        pid = name[len(PLAN_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's: not ours to remove
    return True


def _plan_view(published: str | None) -> ProjectView | None:
    """The view this worker analyses with: its pool's, or the plan published in ``published``."""
    global _VIEW, _PARTIAL, _LOADED
    if published is not None and published != _LOADED:
        with open(published, "rb") as handle:
            plan: _Plan = pickle.load(handle)
        _VIEW, _PARTIAL, _LOADED = plan.view, plan.partial, published
    return _VIEW


def execute(job: Job, published: str | None = None, tree: ast.Module | None = None) -> FileResult:
    """One module in a worker: findings and summary (or only the summary) with the worker's view;
    a partial summary for a module nothing imports. ``tree``: the job's text, parsed ahead."""
    path, settings, findings, text, partial, whole = job
    jitter(path)
    view = _plan_view(published)
    assert view is not None
    from ..project.link import ModuleLink  # the analysis: imported by the process that analyses

    link = ModuleLink(view, path, summary=True, partial=partial, whole=whole)
    if findings:
        return lint_file(path, settings, link, text_override=text, tree=tree)
    result = FileResult(path=path)
    if text is None:
        read = read_source(path)
        text = "" if isinstance(read, FileResult) else read[2]
    from .. import engine  # the analysis and the rules: imported when a module is analysed

    try:
        analysis = engine.analyse_module(text, path, settings.config, settings.enabled, link, only_summary=True)
        result.summary, result.consulted, result.wanted = analysis.summary, analysis.consulted, analysis.wanted
    except Exception:  # noqa: BLE001 - a module we only read and cannot parse tells nothing
        result.consulted = {}
    return result


def parse_ahead(paths: list[str], settings: Settings, published: str) -> tuple[dict[str, FileResult], list[str]]:
    """Parse ``paths`` in order until the plan is published (or ``AHEAD_CHARACTERS`` are parsed),
    then analyse the parsed ones with it (given files analysed for findings, read from disk).
    Returns their results and the paths not parsed (not reached, unreadable, or unparsable: the
    round analyses them as any other module, and reports their errors)."""
    from .. import engine
    from ..relevance import REDUCE_FROM

    parent = os.getppid()
    parsed: list[tuple[str, str, ast.Module]] = []
    rest: list[str] = []
    budget = AHEAD_CHARACTERS
    enabled = gc.isenabled()
    gc.disable()  # the trees wait alive: a collection would scan them again and again
    try:
        for path in paths:
            if budget <= 0 or os.path.exists(published):
                rest.extend(paths[len(parsed) + len(rest) :])
                break
            read = read_source(path)
            try:
                if isinstance(read, FileResult):
                    raise engine.ParseError("unreadable")
                if len(read[2]) >= REDUCE_FROM:
                    raise engine.ParseError("large: the round parses what it needs of it (ptrlint/relevance.py)")
                parsed.append((path, read[2], parse_host(read[2], engine.parse)))
                budget -= len(read[2])
            except Exception:  # noqa: BLE001 - the round reports it
                rest.append(path)
        gc.freeze()  # no collection scans the trees while they wait; they are freed as each is analysed
    finally:
        if enabled:
            gc.enable()
    try:
        while not os.path.exists(published):
            if os.getppid() != parent:  # the planner died without a word: no plan will come
                return {}, paths
            time.sleep(_POLL)
        view = _plan_view(published)
        results: dict[str, FileResult] = {}
        while parsed:
            path, text, tree = parsed.pop(0)
            if view is None:
                rest.append(path)
                continue
            results[path] = execute(Job(path, settings, True, text, path in _PARTIAL), published, tree)
            del tree
        return results, rest
    finally:
        gc.unfreeze()


class RunPool:
    """The worker processes of one run's classification and first round (started on first use),
    and the parse that runs ahead in them while the planner works."""

    def __init__(self, jobs: int, collect: bool) -> None:
        """``collect``: whether the analyses collect garbage (the collector's state before the planner
        paused it for the classification, which forks the workers)."""
        self.jobs, self.collect = jobs, collect
        self._pool: ProcessPoolExecutor | None = None
        self._ahead: list[tuple[list[str], Future[tuple[dict[str, FileResult], list[str]]]]] = []
        self._folder: str | None = None
        self._published: str | None = None
        self.parsed_ahead = 0  # modules of the first round analysed from a tree parsed ahead

    def executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=_start_worker, initargs=(self.collect,))
        return self._pool

    @property
    def started(self) -> bool:
        return self._pool is not None

    def run_ahead(self, paths: list[str], settings: Settings) -> None:
        """Each worker parses its share of ``paths`` (largest first) until the plan is published."""
        if self._pool is None or not paths or self._ahead:
            return
        sweep_stale_plans()
        self._folder = tempfile.mkdtemp(prefix=f"{PLAN_PREFIX}{os.getpid()}-")
        self._published = os.path.join(self._folder, "plan.pickle")
        shares = [paths[i :: self.jobs] for i in range(self.jobs)]
        self._ahead = [
            (share, self._pool.submit(parse_ahead, share, settings, self._published)) for share in shares if share
        ]

    @property
    def ahead(self) -> bool:
        return bool(self._ahead)

    def run_round(self, jobs: list[Job], view: ProjectView) -> list[FileResult]:
        """One round of analyses with ``view``, results in the order of ``jobs``: the first round in the
        workers that parsed ahead; a later one in this process (one job, or ``jobs`` of 1) or in a
        pool started with the view (this pool is closed after the first round)."""
        outputs = self.first_round(jobs, view) if self.ahead else None
        self.close()
        if outputs is not None:
            return outputs
        if self.jobs == 1 or len(jobs) < POOL_MIN_PARSES:
            use_view(view)
            return [execute(job) for job in jobs]
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=self.jobs, initializer=use_view, initargs=(view,)) as pool:
            return list(pool.map(execute, jobs, chunksize=1))

    def first_round(self, jobs: list[Job], view: ProjectView) -> list[FileResult]:
        """The first round in this pool: the plan published, the modules parsed ahead analysed by
        the workers that parsed them, every other module (and those not reached) as usual."""
        assert self._pool is not None and self._published is not None
        self._publish(_Plan(view.shipped(), frozenset(job.path for job in jobs if job.partial)))
        ahead = {path for share, _future in self._ahead for path in share}
        by_path = {job.path: job for job in jobs}
        futures = {job.path: self._pool.submit(execute, job, self._published) for job in jobs if job.path not in ahead}
        results: dict[str, FileResult] = {}
        for _share, ahead_future in self._ahead:
            done, rest = ahead_future.result()
            self.parsed_ahead += len(done)
            results.update((path, result) for path, result in done.items() if path in by_path)
            for path in rest:
                if path in by_path:
                    futures[path] = self._pool.submit(execute, by_path[path], self._published)
        self._ahead = []
        for path, future in futures.items():
            results[path] = future.result()
        return [results[job.path] for job in jobs]

    def _publish(self, plan: _Plan) -> None:
        """Written whole, then renamed into place: a worker sees no plan or the complete one."""
        assert self._folder is not None and self._published is not None
        partial = os.path.join(self._folder, "plan.partial")
        with open(partial, "wb") as handle:
            pickle.dump(plan, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, self._published)

    def close(self) -> None:
        """Stop the workers (those parsing ahead are told there will be no plan) and remove the plan."""
        if self._ahead and self._published is not None and not os.path.exists(self._published):
            self._publish(_Plan(None, frozenset()))
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
        self._pool, self._ahead = None, []
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = self._published = None
