"""The run memo: a project-index run answered whole when nothing it depended on has changed.

A warm index run on one file still plans: it restores the file's neighbours from the cache, scans
the project for importers and checks that every answer a restored module read still holds (most of
a second on torch). Yet when no file of the project has changed since a run that linted the same
file, with the same settings and the same ptrlint, that run's findings are the answer. The memo
keeps, per settings, what the last index runs found for each file they linted, with the state of the
project they saw: the modification time of every folder under each project root (a file added,
removed or renamed changes its folder's) and the ``stat`` signature of every Python file (and Cython
declaration) there and of every other file the run read. A run whose files all have findings in the memo, and whose project
stat()s the same, is answered from it (about 0.05 s of stat calls on torch's 2,300 files); any
change, and the run plans as before, and records again.

A memo from a run on the whole tree serves a run on part of it: a file's findings do not depend on
which other files were given (``tests/linter/test_project_index.py`` holds one file alone to its
whole-tree findings). Runs that write or show fixes, read an editor's text, or met a file they could
not read are neither served nor recorded; nor is a run that saw a file modified within the file
system's timestamp granularity of its start (see ``planner/manifest.py``). The memo is one file per
settings and working directory in the cache folder, sealed with this user's key like every entry.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable
from typing import Any

from ..cache import Cache, opened, seal
from ..findings import FileResult, Finding
from ..settings import Settings
from .manifest import SETTLE_NS

MEMO_FORMAT = 1
_SKIPPED_FOLDERS = ("__pycache__",)  # written by Python when the project runs: never a module
# the files a run may read: Python modules and stubs, and the Cython declarations of compiled ones (PTR008)
WATCHED_SUFFIXES = (".py", ".pyi", ".pxd", ".pyx")


def project_state(roots: Iterable[str], extra: Iterable[str]) -> dict[str, list[int]]:
    """What the memo compares: ``folder/`` -> [mtime_ns] for every folder under the roots (hidden and
    ``__pycache__`` folders left out), file -> [mtime_ns, size, inode] for every file of
    ``WATCHED_SUFFIXES`` in them and for every file of ``extra`` (files read outside the roots)."""
    state: dict[str, list[int]] = {}

    def walk(folder: str) -> None:
        try:
            state[folder + os.sep] = [os.stat(folder).st_mtime_ns]
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in _SKIPPED_FOLDERS:
                    walk(entry.path)
            elif entry.name.endswith(WATCHED_SUFFIXES):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                state[entry.path] = [st.st_mtime_ns, st.st_size, st.st_ino]

    for root in sorted(set(roots)):
        walk(root)
    for path in extra:
        if path not in state:
            try:
                st = os.stat(path)
            except OSError:
                continue
            state[path] = [st.st_mtime_ns, st.st_size, st.st_ino]
    return state


class RunMemo:
    """The memo of one settings and working directory: ``answer`` a run, or ``record`` one."""

    def __init__(self, settings: Settings) -> None:
        assert settings.cache_dir is not None
        directory = Cache(settings.cache_dir).directory
        flags = json.dumps([os.getcwd(), settings.render_edits, settings.unsafe_fixes, settings.prefilter])
        self.key = "memo:" + Cache.key(flags.encode(), settings, "memo")
        self.file = os.path.join(directory, "memo", f"{self.key[5:37]}.json")
        self.started_ns = time.time_ns()
        self._data: dict[str, Any] | None = None

    @staticmethod
    def usable(settings: Settings, texts: dict[str, str] | None = None) -> bool:
        """Whether a run with these settings may be answered from a memo, or recorded in one."""
        return bool(settings.cache_dir) and settings.project_index and not settings.fixing and not texts

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            self._data = {}
            try:
                with open(self.file, encoding="utf-8") as handle:
                    record = json.load(handle)
                body = opened(self.key, record, self.file)  # only what this user's ptrlint wrote
                data = json.loads(body) if body is not None else None
                if isinstance(data, dict) and data.get("format") == MEMO_FORMAT:
                    self._data = data
            except (OSError, ValueError):
                pass
        return self._data

    def answer(self, paths: list[str]) -> list[FileResult] | None:
        """The results of a run on ``paths``, when the memo has them all and the project is unchanged."""
        data = self._load()
        results = data.get("results")
        if not paths or not isinstance(results, dict):
            return None
        reals = [os.path.realpath(p) for p in paths]
        if any(real not in results for real in reals):
            return None
        if project_state(data.get("roots", ()), data.get("extra", ())) != data.get("state"):
            return None
        try:
            return [
                FileResult(path=path, findings=[_as_given(item, path) for item in results[real]])
                for path, real in zip(paths, reals)
            ]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def record(self, results: list[FileResult], roots: Iterable[str], read: Iterable[str]) -> None:
        """Keep a finished run's findings with the project state they came from (joined with the
        findings already kept for the same state)."""
        if any(r.error is not None for r in results):
            return
        roots = sorted({str(r) for r in roots})
        inside = tuple(root.rstrip(os.sep) + os.sep for root in roots)
        extra = sorted({p for p in read if not p.startswith(inside)})
        state = project_state(roots, extra)
        if any(sig[0] > self.started_ns - SETTLE_NS for sig in state.values()):
            return  # a file (or folder) changed too recently to trust its timestamp
        found = {os.path.realpath(r.path): [f.to_json() for f in r.findings] for r in results}
        old = self._load()
        if old.get("state") == state and old.get("roots") == roots and old.get("extra") == extra:
            found = {**old.get("results", {}), **found}
        body = json.dumps(
            {"format": MEMO_FORMAT, "roots": roots, "extra": extra, "state": state, "results": found},
            separators=(",", ":"),
        )
        tag = seal(self.key, body)
        if tag is None:
            return
        try:
            folder = os.path.dirname(self.file)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"tag": tag, "body": body}, separators=(",", ":")))
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only cache: the next run plans again


def _as_given(item: dict[str, Any], path: str) -> Finding:
    """A stored finding under the path as this run was given it (``./a.py`` or ``a.py``): its own
    module's related locations follow the spelling, another module's keep theirs."""
    spelled = item["path"]
    related = [{**r, "path": path} if r.get("path") == spelled else r for r in item.get("related", [])]
    return Finding.from_json({**item, "path": path, "related": related})
