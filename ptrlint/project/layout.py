"""Where a module lives: its project root, its dotted name, and the files its imports name.

The project root is the folder of the nearest ``pyproject.toml`` above a file, else the folder
above its top package. A module's dotted name comes from its chain of ``__init__.py`` folders, so
it is the same whether ptrlint was given the whole tree or one file of it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from ..sources import real_path


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


def resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """``from ..x import y`` inside ``module``: the absolute module ``..x`` names."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)] if level > 1 else parts
    target = ".".join([*base, *([name] if name else [])])
    return target or None


@lru_cache(maxsize=65536)
def module_file(module: str, bases: tuple[Path, ...]) -> Path | None:
    """The file that defines ``module`` under one of ``bases`` (``a/b.py`` or ``a/b/__init__.py``).

    Under ``site-packages`` every top-level package is its own project: only the importing file's
    own package resolves (see :func:`search_bases`), the other distributions are third-party.
    """
    rel = os.path.join(*module.split("."))
    for base in bases:
        if base.name.startswith("+"):  # a site-packages folder restricted to one top-level package
            own = base.name[1:]
            base = base.parent
            if module.partition(".")[0] != own:
                continue
        stem = os.path.join(str(base), rel)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if os.path.isfile(candidate):
                return Path(candidate)
    return None


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
                    if os.path.isfile(candidate):
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
        return (base / f"+{top}",)  # module_file reads the "+" as "only this package"
    bases: list[Path] = []
    for candidate in (base, project_root(path), project_root(path) / "src"):
        if candidate not in bases and candidate.is_dir():
            bases.append(candidate)
    return tuple(bases)


def project_files(root: Path, excluded: tuple[str, ...]) -> list[str]:
    """Every Python file under the project root, minus hidden folders and the configured excludes."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in excluded)
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return out
