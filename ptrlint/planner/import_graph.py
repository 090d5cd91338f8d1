"""The imports among the modules of an index run: which project files that were not given import a
linted module (and may write into its classes), found by a text scan, and which analysed modules
another module of the run can look into (only these get a full summary)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Callable

from ..prefilter import has_evidence
from ..project.imports import imported_modules
from ..project.layout import module_name, per_bases, project_files, project_root
from ..settings import Settings
from ..sources import read_bytes, real_path
from .manifest import Manifest, signature
from .tasks import Role, Task

_RELATIVE_IMPORT = re.compile(r"\bfrom\s+\.")


def importers(
    tasks: dict[str, Task], paths: list[str], settings: Settings, manifest: Manifest | None
) -> Iterator[tuple[str, str]]:
    """The project files (path, real path) with pointer evidence that import a module of ``tasks``
    that is linted: they may write into its classes. Neither a task nor a given path."""
    linted = {t.module for t in tasks.values() if t.linted and t.module}
    if not linted:
        return
    roots = {project_root(t.real) for t in tasks.values() if t.linted}
    excluded = tuple(e for e in (*settings.config.exclude, *settings.config.extend_exclude) if "/" not in e)
    known = set(tasks) | {real_path(p) for p in paths}
    names = frozenset(m.rpartition(".")[2] for m in linted)
    for root in roots:
        for path in project_files(root, excluded):
            real = real_path(path)
            if real not in known and _imports_any(real, linted, names, manifest, settings):
                yield path, real


def _imports_any(
    real: str, linted: set[str], names: frozenset[str], manifest: Manifest | None, settings: Settings
) -> bool:
    """Whether a project file with pointer evidence imports one of the ``linted`` modules:
    from its manifest record when unchanged, else from its text (and then recorded). A text that
    spells none of their last ``names`` and has no relative import cannot import one: it is
    answered without the prefilter (and not recorded)."""
    sig = signature(real) if manifest is not None else None
    record = manifest.get(real, sig) if manifest is not None else None
    if record is None or (record["evidence"] and "imported_modules" not in record):
        try:
            text = read_bytes(real).decode("utf-8", errors="replace")
        except OSError:
            return False
        if not any(name in text for name in names) and _RELATIVE_IMPORT.search(text) is None:
            return False
        evidence = has_evidence(text, settings.config)
        name, is_package = module_name(real)
        record = (
            {"evidence": evidence, "site": None, "imported_modules": sorted(imported_modules(text, name, is_package))}
            if evidence
            else {"evidence": False, "site": None}
        )
        if manifest is not None:
            manifest.put(real, sig, record)
    return bool(record["evidence"]) and any(m in linted for m in record["imported_modules"])


def mark_imported(tasks: Iterable[Task], locate: Callable[[str, tuple[Path, ...]], tuple[str, str] | None]) -> None:
    """Which analysed modules another module of the run can look into: the modules that the
    analysed modules and the candidates import (and the packages above them), and those that any
    module's summary re-exports from. Only these get a full summary; of the others (most of a
    large tree that nothing in it imports: sglang's 571 of 757 analysed modules) only the writes
    into other modules' classes are kept, which cost little. A lookup that still reaches one of
    them asks for it (``wanted``), and it is analysed again with its summary (the settle round of
    :mod:`.index`)."""
    tasks = list(tasks)
    imported: set[str] = set()
    asked: dict[int, tuple[tuple[Path, ...], set[str]]] = {}  # the names asked, per bases (see per_bases)
    for task in tasks:
        modules = task.modules() if task.role is not Role.LIGHT else set()
        summary = task.summary if task.summary is not None else task.provisional
        targets = summary.exports.values() if summary is not None else ()
        bases = task.bases
        names = per_bases(asked, bases, set)
        for name in (*modules, *(t.rpartition(".")[0] for t in targets)):
            if name not in names:
                names.add(name)
                # the module and every package above it (`import a.b` binds `a` too, and `a.b.f` is a
                # lookup into `a` when `b` is a name in `a`'s `__init__`)
                parts = name.split(".")
                for i in range(len(parts), 0, -1):
                    found = locate(".".join(parts[:i]), bases)
                    if found is not None:
                        imported.add(found[1])
    for task in tasks:
        task.imported = task.real in imported
