"""Where a module lives: its project root, its dotted name, and the files its imports name.

The project root is the folder of the nearest ``pyproject.toml`` above a file, else the folder
above its top package. A module's dotted name comes from its chain of ``__init__.py`` folders, so
it is the same whether ptrlint was given the whole tree or one file of it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Callable, TypeVar

from ..sources import real_path

T = TypeVar("T")


@lru_cache(maxsize=65536)
def module_name(path: str) -> tuple[str, bool]:
    """``(dotted name, is_package)`` of a Python file: ``pkg/sub/mod.py`` -> ``("pkg.sub.mod", False)``."""
    file = real_path(path)
    folder, name = os.path.split(file)
    is_package = name == "__init__.py"
    parts = [] if is_package else [name[:-3] if name.endswith(".py") else name]
    while _is_package(folder):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    return ".".join(parts), is_package


@lru_cache(maxsize=65536)
def _is_package(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "__init__.py"))


@lru_cache(maxsize=65536)
def _listing(folder: str) -> frozenset[str] | None:
    """The names in ``folder`` (empty when it is not a folder); None when it cannot be listed.
    A folder its parent's listing does not hold is not listed (``from pkg import name`` tries
    ``pkg/name/__init__.py`` for every name it imports)."""
    parent, name = os.path.split(folder)
    if name not in ("", ".", "..") and parent != folder:
        above = _listing(parent)
        if above is not None and name not in above:
            return frozenset()
    try:
        return frozenset(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except OSError:  # e.g. a folder we may enter but not list: ask for each file instead
        return None


def is_listed_file(path: str) -> bool:
    """Whether ``path`` is a file, asked of its folder's listing first (kept for the run)."""
    return _is_file(path)


def _is_file(path: str) -> bool:
    """``os.path.isfile``, asked only of names that its folder's listing holds: a module lookup
    tries several bases and two spellings each, and nearly all of them name no file (an import
    of another distribution, ``from pkg.mod import name`` tried as the module ``pkg.mod.name``),
    which one cached listing per folder answers without a system call."""
    folder, name = os.path.split(path)
    names = _listing(folder)
    if names is not None and name not in names:
        return False
    return os.path.isfile(path)


def forget_listings() -> None:
    """Folder listings, and the module lookups answered from them, are kept for one run: a
    long-lived process (the language server) sees the modules created since its last run."""
    _listing.cache_clear()
    module_file.cache_clear()
    namespace_file.cache_clear()


@lru_cache(maxsize=65536)
def package_base(path: str) -> Path:
    """The folder that holds the file's top package (what its absolute imports are relative to)."""
    folder = os.path.dirname(real_path(path))
    while _is_package(folder):
        folder = os.path.dirname(folder)
    return Path(folder)


@lru_cache(maxsize=65536)
def project_root(path: str) -> Path:
    base = package_base(path)
    if base.name in ("site-packages", "dist-packages"):  # an installed distribution: its package
        top = module_name(path)[0].partition(".")[0]
        return base / top if (base / top).is_dir() else base
    return _pyproject_folder(os.path.dirname(real_path(path))) or base


@lru_cache(maxsize=65536)
def _pyproject_folder(folder: str) -> Path | None:
    if os.path.isfile(os.path.join(folder, "pyproject.toml")):
        return Path(folder)
    parent = os.path.dirname(folder)
    return None if parent == folder else _pyproject_folder(parent)


@lru_cache(maxsize=65536)
def module_file(module: str, bases: tuple[Path, ...]) -> Path | None:
    """The file that defines ``module`` under one of ``bases`` (``a/b.py`` or ``a/b/__init__.py``).

    Under ``site-packages`` every top-level package is its own project: only the importing file's
    own package resolves (see :func:`search_bases`), the other distributions are third-party.
    """
    rel = module.replace(".", os.sep)  # a dotted name of identifiers: no empty parts
    for folder in search_folders(module, bases):
        stem = os.path.join(folder, rel)
        for candidate in (stem + ".py", stem + os.sep + "__init__.py"):
            if _is_file(candidate):
                return Path(candidate)
    return None


def search_folders(module: str, bases: tuple[Path, ...], suffixes: tuple[str, ...] = (".py",)) -> Iterator[str]:
    """The folders of ``bases`` that may hold ``module``: those whose listing has its top package (or its
    top module, a file with one of ``suffixes``)."""
    top = module.partition(".")[0]
    for base in bases:
        if base.name.startswith("+"):  # a site-packages folder restricted to one top-level package
            own = base.name[1:]
            base = base.parent
            if top != own:
                continue
        folder = str(base)
        names = _listing(folder)
        if names is not None and top not in names and not any(top + s in names for s in suffixes):
            continue  # another distribution's module (most lookups): one set lookup
        yield folder


@lru_cache(maxsize=65536)
def namespace_file(module: str, bases: tuple[Path, ...]) -> Path | None:
    """:func:`module_file`, and for a namespace package (PEP 420: folders without ``__init__.py``)
    the file under the folder above the importing file that is named like the module's top package."""
    found = module_file(module, bases)
    if found is not None:
        return found
    top, rel = module.partition(".")[0], os.path.join(*module.split("."))
    for base in bases:
        if base.name.startswith("+"):
            continue
        for folder in (base, *base.parents):
            if folder.name == top:
                stem = os.path.join(str(folder.parent), rel)
                for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                    if _is_file(candidate):
                        return Path(candidate)
                break
    return None


@lru_cache(maxsize=65536)
def search_bases(path: str) -> tuple[Path, ...]:
    """Where the absolute imports of ``path`` are looked up: its package base, the project root, ``src/``.
    Inside ``site-packages``/``dist-packages`` only the file's own top-level package counts."""
    base = package_base(path)
    if base.name in ("site-packages", "dist-packages"):
        top = module_name(path)[0].partition(".")[0]
        return _interned((base / f"+{top}",))  # module_file reads the "+" as "only this package"
    bases: list[Path] = []
    for candidate in (base, project_root(path), project_root(path) / "src"):
        if candidate not in bases and _is_dir(str(candidate)):
            bases.append(candidate)
    return _interned(tuple(bases))


_BASES: dict[tuple[Path, ...], tuple[Path, ...]] = {}


def _interned(bases: tuple[Path, ...]) -> tuple[Path, ...]:
    """One tuple object for equal bases: the lookups keyed by them (module_file's cache, the view's
    memo) then compare keys by identity instead of comparing paths."""
    return _BASES.setdefault(bases, bases)


@lru_cache(maxsize=16384)
def _is_dir(folder: str) -> bool:
    return os.path.isdir(folder)


def project_files(root: Path, excluded: tuple[str, ...]) -> list[str]:
    """Every Python file under the project root, minus hidden folders and the configured excludes."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in excluded)
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return out


class ModuleFiles:
    """:func:`module_file` as (path, real path), kept for one run: the planner asks for the same
    modules of thousands of files (``torch``, ``torch.nn`` from every torch module). Answers are
    kept per bases object (search_bases interns them): a key that holds the bases tuple would hash
    its paths on every ask, in Python (``Path.__hash__``), 80,000 asks on torch."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[tuple[Path, ...], dict[str, tuple[str, str] | None]]] = {}  # id(bases) -> answers

    def __call__(self, module: str, bases: tuple[Path, ...]) -> tuple[str, str] | None:
        answers = per_bases(self._known, bases, dict)
        if module in answers:
            return answers[module]
        found = module_file(module, bases)
        answer = answers[module] = (str(found), real_path(str(found))) if found is not None else None
        return answer


def per_bases(table: dict[int, tuple[tuple[Path, ...], T]], bases: tuple[Path, ...], empty: Callable[[], T]) -> T:
    """``table``'s entry for ``bases``, keyed by the tuple's identity (``search_bases`` interns
    equal bases): hashing a tuple of paths runs ``Path.__hash__`` for each, in Python. The entry
    holds the tuple, so its id is not reused while the table lives."""
    entry = table.get(id(bases))
    if entry is None or entry[0] is not bases:
        entry = table[id(bases)] = (bases, empty())
    return entry[1]
