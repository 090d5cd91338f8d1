"""What one run was asked to do, resolved once: the enabled codes and the per-file options.

The command line, the language server and the flake8 plugin build a :class:`Settings` per
configuration; the planner hands it down with every file, and nothing below re-reads a
configuration file.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .catalog import CODES
from .config import Config
from .findings import Finding


class SelectionError(ValueError):
    """An unknown code or prefix in --select/--ignore (exit 2)."""


def expand_selector(selector: str) -> set[str]:
    selector = selector.strip().upper()
    if selector == "ALL":
        return set(CODES)
    matched = {code for code in CODES if code.startswith(selector)}
    if not selector or not matched:
        raise SelectionError(f"unknown rule selector {selector!r} (known codes: {', '.join(CODES)}, or ALL)")
    return matched


def select_codes(select: Iterable[str], extend_select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    enabled: set[str] = set()
    for selector in [*select, *extend_select]:
        enabled |= expand_selector(selector)
    for selector in ignore:
        enabled -= expand_selector(selector)
    return frozenset(enabled)


@dataclass(frozen=True)
class Settings:
    """Everything a worker needs for one file; picklable."""

    config: Config
    enabled: frozenset[str]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    cache_dir: str | None = None
    prefilter: bool = True
    render_edits: bool = False  # fill in every fix's text edits (JSON/SARIF output, LSP): costs a libcst parse
    project_index: bool = True  # evidence across the modules of a project (ptrlint/project/)
    # where --fix may write: the real paths of the folders given (a file given: its folder); a file that
    # resolves outside them (a symbolic link out of the tree) is never written
    write_roots: tuple[str, ...] = ()

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff

    def applies(self, finding: Finding) -> bool:
        """Whether this run applies the finding's fix (safe, or unsafe with --unsafe-fixes)."""
        return finding.fix is not None and (finding.fix.safe or self.unsafe_fixes)

    def may_write(self, real: str) -> bool:
        """Whether a fixed file at ``real`` (its resolved path) lies inside a folder the user gave."""
        if not self.write_roots:
            return True
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.write_roots)


def per_file_ignored(path: str, config: Config) -> set[str]:
    """The codes ``per-file-ignores`` turns off for ``path``."""
    if not config.per_file_ignores:
        return set()
    candidates = _match_candidates(path, config.root)
    ignored: set[str] = set()
    for pattern, codes in config.per_file_ignores:
        if any(fnmatch.fnmatch(c, pattern) for c in candidates):
            for code in codes:
                ignored |= expand_selector(code)  # validated when the config was loaded
    return ignored


def _match_candidates(path: str, root: str) -> list[str]:
    absolute = Path(path).resolve()
    out = [PurePosixPath(path).as_posix(), absolute.name]
    try:
        out.append(absolute.relative_to(Path(root).resolve()).as_posix())
    except ValueError:
        pass
    return out
