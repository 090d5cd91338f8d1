"""A task's cache entry: what a project run stores of a module it analysed (findings, summary, what
they read, the rendered fixes) and restores from it, keyed by the module's content (``Task.key``)."""

from __future__ import annotations

from typing import Any

from ..cache import Cache
from ..findings import FileResult, Finding
from ..project.summary import ModuleSummary
from .rendered import rendered_json
from .tasks import Stage, Task


def from_cache(cache: Cache | None, texts: dict[str, str], task: Task) -> bool:
    """Restore ``task`` from its cache entry (a module read for its summary: this kind of run's own
    entry first, see ``ProjectRun._finish``)."""
    if cache is None or task.real in texts or task.path in texts or not task.key:
        return False
    if not task.linted:
        entry = cache.get_entry(summary_key(task.key), task.path)
        if entry is not None and restore_result(task, *entry):
            return True
    entry = cache.get_entry(task.key, task.path)
    return entry is not None and restore_result(task, *entry)


def summary_key(key: str) -> str:
    """The cache key of a module's entry as read for its summary by a run that does not lint it."""
    return key + "-read"


def store(
    cache: Cache | None,
    texts: dict[str, str],
    task: Task,
    result: FileResult,
    rendered: list[Finding] | None = None,
    key: str | None = None,
) -> None:
    """Findings, summary and what they read, by content; with the rendered fixes when shown."""
    if cache is None or result.error is not None or task.path in texts:
        return
    if task.stage is Stage.RESTORED and (rendered is None or task.rendered is not None):
        return  # the entry holds all of it already
    if task.light:  # summarised from its text alone: nothing to keep
        return
    kept = task.summary if task.summary is not None else task.writes
    extra: dict[str, Any] = {
        "summary": kept.to_json() if kept else None,
        "consulted": task.consulted,
        "analysed": task.analyse,
        "partial": task.summary is None and task.writes is not None,
    }
    if rendered is not None:
        extra["rendered"] = [rendered_json(f.fix) if f.fix is not None else None for f in rendered]
    if task.key:
        cache.put(key or task.key, result.findings if task.analyse else [], extra)


def restore_result(task: Task, findings: list[Finding], extra: dict[str, Any]) -> bool:
    """Findings, summary and what they read from a cache entry; False when the entry does not
    serve this task (a summary-only analysis for a task that wants findings, or a partial summary of
    a module imported now). An entry analysed for findings serves a summary-only task (the module
    linted before in a whole-tree run, read now for a run on one of its importers): the same summary,
    its findings not reported."""
    if "consulted" not in extra or (task.analyse and not extra.get("analysed")):
        return False
    partial = bool(extra.get("partial"))
    if partial and task.imported:
        return False
    cut = bool(extra.get("summary") and extra["summary"].get("omitted"))
    if cut and task.whole:
        return False  # a cut analysis's entry does not serve a module asked for whole
    task.result = FileResult(path=task.path, findings=findings if task.analyse else [])
    summary = ModuleSummary.from_json(extra["summary"]) if extra.get("summary") else None
    task.summary, task.writes = (None, summary) if partial else (summary, None)
    task.consulted = dict(extra["consulted"])
    task.rendered = extra.get("rendered")
    task.stage = Stage.RESTORED
    return True
