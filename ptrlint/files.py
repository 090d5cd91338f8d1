"""Discovery: paths -> sorted list of Python files, honouring default and configured excludes."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePosixPath

from typing import Callable

from .config import Config


def _excluded(rel: str, name: str, patterns: tuple[str, ...]) -> bool:
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
                return True
        elif fnmatch.fnmatch(name, pattern):
            return True
    return False


def _display(path: str) -> str:
    """As given, relative to the working directory when possible."""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        return path if rel.startswith("..") else rel
    return os.path.normpath(path)


def discover(paths: list[str], config: "Config | Callable[[str], Config]") -> list[str]:
    """Python files and notebooks under ``paths``. Files named explicitly are always included.

    ``config`` is one configuration or a function giving each folder's (the nearest
    ``pyproject.toml``), whose excludes apply below its root.
    """
    config_for = config if callable(config) else (lambda _path: config)
    found: set[str] = set()
    for raw in paths:
        if os.path.isdir(raw):
            for dirpath, dirnames, filenames in os.walk(raw):
                here = config_for(dirpath)
                patterns = (*here.exclude, *here.extend_exclude)
                rel_dir = _relative(dirpath, Path(here.root))
                dirnames[:] = sorted(
                    d for d in dirnames if not _excluded(f"{rel_dir}/{d}".lstrip("/"), d, patterns)
                )
                for name in filenames:
                    if not name.endswith(SOURCE_SUFFIXES):
                        continue
                    rel = f"{rel_dir}/{name}".lstrip("/")
                    if _excluded(rel, name, patterns):
                        continue
                    found.add(_display(os.path.join(dirpath, name)))
        else:
            found.add(_display(raw))  # a missing file is reported when it is read
    return sorted(found)


SOURCE_SUFFIXES = (".py", ".ipynb")


def _relative(path: str, root: Path) -> str:
    try:
        return PurePosixPath(Path(path).resolve().relative_to(root.resolve())).as_posix()
    except ValueError:
        return PurePosixPath(path).as_posix()
