"""The text edits of a module's fixes (and their alternatives) as the cache keeps them: libcst on
a large file costs seconds, so a warm run that shows fixes (JSON, SARIF, the editor) reuses the
edits rendered for the same content and findings."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..findings import Edit, Finding, Fix
from .tasks import Stage, Task


def rendered_json(fix: Fix) -> dict[str, Any]:
    """A rendered fix's text edits (and its alternatives'), as the cache keeps them."""
    return {
        "edits": [e.to_json() for e in fix.edits],
        "alternatives": [{"title": a.title, "edits": [e.to_json() for e in a.edits]} for a in fix.alternatives],
    }


def _from_rendered_json(fix: Fix, data: dict[str, Any] | None) -> Fix | None:
    """The fix with the edits the cache kept (None: the rewrite engine could not apply it)."""
    if data is None:
        return None
    kept = {a["title"]: a["edits"] for a in data["alternatives"]}
    alternatives = tuple(
        replace(a, edits=tuple(Edit.from_json(e) for e in kept[a.title])) for a in fix.alternatives if a.title in kept
    )
    return replace(fix, edits=tuple(Edit.from_json(e) for e in data["edits"]), alternatives=alternatives)


def rendered_from_cache(task: Task, findings: list[Finding]) -> list[Finding]:
    """The findings with their fixes' text edits: from the cache entry of this content and these
    findings when it holds them (libcst on a large file costs seconds), else rendered now."""
    if task.stage is Stage.RESTORED and task.rendered is not None and len(task.rendered) == len(findings):
        out = []
        for finding, data in zip(findings, task.rendered):
            if finding.fix is not None:  # no edits: the rewrite engine could not apply this fix
                finding = replace(finding, fix=_from_rendered_json(finding.fix, data))
            out.append(finding)
        return out
    from .. import engine  # libcst renders the edits

    return engine.render_fixes(task.source(), findings)
