"""git's ignore rules, for discovery (``respect-gitignore``): as git itself decides what is ignored.

Sources, from lowest to highest precedence (git's order): the global excludes file
(``core.excludesFile``, default ``$XDG_CONFIG_HOME/git/ignore``), ``.git/info/exclude``, then the
``.gitignore`` of every folder from the repository's root down to the path's own folder, a
deeper file overriding a shallower one; inside one file the last matching pattern wins, and
``!`` negates. Patterns are matched by ``pathspec``'s implementation of git's wildmatch rules
(anchored and directory patterns, ``**``). Discovery never descends into an ignored folder, so,
as in git, a file cannot be re-included below an ignored folder.

An unreadable ignore file or a pattern git would reject is reported once and skipped; outside
a git repository nothing is ignored.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # imported when an ignore file is first read: a run on files alone never needs it
    import pathspec

Warn = Callable[[str], None]
_warned: set[str] = set()


def _warn_once(warn: Warn | None, message: str) -> None:
    if warn is not None and message not in _warned:
        _warned.add(message)
        warn(message)


def _spec(path: Path, warn: Warn | None) -> pathspec.GitIgnoreSpec | None:
    import pathspec

    """The patterns of one ignore file (None when it is absent or holds none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        _warn_once(warn, f"ptrlint: cannot read {path}: {exc.strerror or exc}; its patterns are ignored")
        return None
    lines = text.splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - one bad pattern: keep the others, as git does
        good = []
        for number, line in enumerate(lines, 1):
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except Exception:  # noqa: BLE001
                _warn_once(warn, f"ptrlint: {path}:{number}: invalid pattern {line!r} is skipped")
                continue
            good.append(line)
        spec = pathspec.GitIgnoreSpec.from_lines(good)
    return spec if len(spec) else None


def _global_excludes(root: Path) -> Path | None:
    """``core.excludesFile`` as git reads it (every config level), else git's default location."""
    try:
        proc = subprocess.run(
            ["git", "config", "--path", "--get", "core.excludesFile"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
        if proc.returncode == 0 and proc.stdout.strip():
            return Path(os.path.expanduser(proc.stdout.strip()))
    except (OSError, subprocess.SubprocessError):
        pass
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config_home) / "git" / "ignore"


class Repository:
    """The ignore rules of one git work tree."""

    def __init__(self, root: Path, warn: Warn | None = None) -> None:
        self.root = root
        self.warn = warn
        self._folders: dict[str, pathspec.GitIgnoreSpec | None] = {}
        base = [_global_excludes(root), self._git_dir() / "info" / "exclude"]
        self._base = [s for s in (_spec(p, warn) for p in base if p is not None) if s is not None]

    def _git_dir(self) -> Path:
        dot_git = self.root / ".git"
        if dot_git.is_file():  # a worktree or submodule: `gitdir: <path>`
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except OSError:
                return dot_git
            if line.startswith("gitdir:"):
                target = Path(line[len("gitdir:") :].strip())
                return target if target.is_absolute() else (self.root / target)
        return dot_git

    def _folder(self, rel: str) -> pathspec.GitIgnoreSpec | None:
        if rel not in self._folders:
            self._folders[rel] = _spec(self.root / rel / ".gitignore" if rel else self.root / ".gitignore", self.warn)
        return self._folders[rel]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores ``rel`` (a ``/``-separated path below the root; its folders are not
        ignored, as discovery checks each folder before entering it)."""
        suffix = "/" if is_dir else ""
        result = None
        spec: pathspec.GitIgnoreSpec | None
        for spec in self._base:
            include = spec.check_file(rel + suffix).include
            if include is not None:
                result = include
        parts = rel.split("/")
        for depth in range(len(parts)):
            spec = self._folder("/".join(parts[:depth]))
            if spec is not None:
                include = spec.check_file("/".join(parts[depth:]) + suffix).include
                if include is not None:
                    result = include
        return bool(result)


@lru_cache(maxsize=4096)
def _root_of(folder: str) -> str | None:
    if os.path.exists(os.path.join(folder, ".git")):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _root_of(parent)


_repositories: dict[str, Repository] = {}


def repository(path: str, warn: Warn | None = None) -> Repository | None:
    """The git work tree that holds ``path`` (a file or folder), or None outside one."""
    folder = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
    root = _root_of(folder)
    if root is None:
        return None
    found = _repositories.get(root)
    if found is None:
        found = _repositories[root] = Repository(Path(root), warn)
    return found


def is_ignored(path: str, warn: Warn | None = None) -> bool:
    """Whether git ignores ``path`` or one of the folders above it inside its repository."""
    repo = repository(path, warn)
    if repo is None:
        return False
    rel = Path(os.path.realpath(path)).relative_to(repo.root).as_posix()
    if rel in (".", ""):
        return False
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        if repo.ignored("/".join(parts[:depth]), True):
            return True
    return repo.ignored(rel, os.path.isdir(path))
