"""Discovery: paths -> sorted list of Python files, honouring default and configured excludes and,
with ``respect-gitignore`` (the default), what git ignores (:mod:`.gitignore`).

Files named explicitly are linted even when excluded, unless ``force-exclude`` is on (as for
ruff, whose pre-commit hook passes every changed file by name): then the same excludes apply to
them. :func:`excluded_reason` is the one answer to "is this file excluded, and why", shared by
discovery, the language server and the flake8 plugin.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import sys
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Callable

from . import gitignore
from .config import Config

Report = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _excluded(rel: str, name: str, patterns: tuple[str, ...]) -> bool:
    """A pattern with a ``/`` matches the path relative to the root (or a folder above it), one
    without matches the name (fnmatch rules; every pattern compiled into one regex per kind)."""
    by_path, by_name = _matchers(patterns)
    return (by_name is not None and by_name.match(os.path.normcase(name)) is not None) or (
        by_path is not None and by_path.match(os.path.normcase(rel)) is not None
    )


@lru_cache(maxsize=64)
def _matchers(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    by_path: list[str] = []
    by_name: list[str] = []
    for pattern in (os.path.normcase(p.rstrip("/")) for p in patterns):
        if "/" in pattern:
            by_path += [fnmatch.translate(pattern), fnmatch.translate(pattern + "/*")]
        else:
            by_name.append(fnmatch.translate(pattern))
    return (re.compile("|".join(by_path)) if by_path else None, re.compile("|".join(by_name)) if by_name else None)


def display_path(path: str) -> str:
    """As the user would write it: relative to the working directory when below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _display(path: str) -> str:
    """As given, relative to the working directory when possible."""
    return display_path(path) if os.path.isabs(path) else os.path.normpath(path)


def discover(
    paths: list[str],
    config: Config | Callable[[str], Config],
    force_exclude: bool | None = None,
    respect_gitignore: bool | None = None,
    verbose: Report | None = None,
) -> list[str]:
    """Python files and notebooks under ``paths``.

    ``config`` is one configuration or a function giving each folder's (the nearest
    ``pyproject.toml``), whose excludes apply below its root. ``force_exclude`` and
    ``respect_gitignore`` (command-line overrides; None: each folder's configuration decides)
    choose whether files named explicitly may be excluded and whether git's ignore rules apply.
    ``verbose`` is told about every explicitly named file that is skipped.
    """
    config_for = config if callable(config) else (lambda _path: config)
    _resolved.cache_clear()  # a long-lived process (the language server) sees links changed since
    found: set[str] = set()
    for raw in paths:
        if os.path.isdir(raw):
            before = len(found)
            for dirpath, dirnames, filenames in os.walk(raw):
                here = config_for(dirpath)
                patterns = (*here.exclude, *here.extend_exclude)
                rel_dir = _relative(dirpath, Path(here.root))
                git = _repository(dirpath, here, respect_gitignore)
                git_dir = _git_relative(dirpath, git)
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if not _excluded(f"{rel_dir}/{d}".lstrip("/"), d, patterns)
                    and not (git is not None and git.ignored(f"{git_dir}/{d}".lstrip("/"), True))
                )
                for name in filenames:
                    if not name.endswith(SOURCE_SUFFIXES):
                        continue
                    rel = f"{rel_dir}/{name}".lstrip("/")
                    if _excluded(rel, name, patterns):
                        continue
                    if git is not None and git.ignored(f"{git_dir}/{name}".lstrip("/"), False):
                        continue
                    path = os.path.join(dirpath, name)
                    if os.path.islink(path) and not os.path.exists(path):
                        _stderr(f"ptrlint: warning: skipping {_display(path)}: a broken symbolic link")
                        continue  # found by walking a folder (one named on the command line is an error)
                    if not _regular(path):
                        _stderr(
                            f"ptrlint: warning: skipping {_display(path)}: not a regular file (a FIFO, socket or "
                            "device would block or never end)"
                        )
                        continue
                    found.add(_display(path))
            if len(found) == before:
                _stderr(f"ptrlint: warning: no Python files or notebooks found under {_display(raw)}")
        else:
            here = config_for(raw)
            force = here.force_exclude if force_exclude is None else force_exclude
            reason = excluded_reason(raw, here, respect_gitignore) if force and os.path.exists(raw) else None
            if reason is not None:
                if verbose is not None:
                    verbose(f"ptrlint: skipped {_display(raw)} ({reason}; --force-exclude)")
                continue
            if os.path.exists(raw) and not _regular(raw) and raw != "-":
                _stderr(f"ptrlint: warning: skipping {_display(raw)}: not a regular file")
                continue
            found.add(_display(raw))  # a missing file is reported when it is read
    return sorted(found)


def _regular(path: str) -> bool:
    """A regular file (through links): the only kind ptrlint reads; opening a FIFO would wait forever."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # unreadable: reported as such when it is read


def excluded_reason(path: str, config: Config, respect_gitignore: bool | None = None) -> str | None:
    """Why ``path`` is excluded by ``config`` (its exclude patterns, a folder above it that they
    exclude, or git's ignore rules), or None when it is not."""
    patterns = (*config.exclude, *config.extend_exclude)
    rel = _relative(os.path.abspath(path), Path(config.root))
    parts = rel.split("/")
    for depth in range(1, len(parts) + 1):
        sub = "/".join(parts[:depth])
        for pattern in patterns:
            if _excluded(sub, parts[depth - 1], (pattern,)):
                return f"excluded by {pattern!r}"
    respect = config.respect_gitignore if respect_gitignore is None else respect_gitignore
    if respect and gitignore.is_ignored(path, _stderr):
        return "ignored by git"
    return None


def _repository(folder: str, config: Config, respect: bool | None) -> gitignore.Repository | None:
    if not (config.respect_gitignore if respect is None else respect):
        return None
    return gitignore.repository(folder, _stderr)


def _git_relative(folder: str, repo: gitignore.Repository | None) -> str:
    if repo is None:
        return ""
    try:
        rel = Path(os.path.realpath(folder)).relative_to(repo.root).as_posix()
    except ValueError:
        return ""
    return "" if rel == "." else rel


SOURCE_SUFFIXES = (".py", ".pyi", ".pyw", ".ipynb")  # as ruff finds them in folders


def _relative(path: str, root: Path) -> str:
    try:
        return PurePosixPath(Path(path).resolve().relative_to(_resolved(str(root)))).as_posix()
    except ValueError:
        return PurePosixPath(path).as_posix()


@lru_cache(maxsize=256)
def _resolved(root: str) -> Path:
    """A configuration root, resolved once per run and not once per folder walked (2,000 folders
    of one root in torch)."""
    return Path(root).resolve()
