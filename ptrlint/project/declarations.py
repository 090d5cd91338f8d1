"""Where a compiled module's Cython declarations lie in the project, read once per content on disk
(the parser is :mod:`ptrlint.analysis.cython`; the project view answers ``declared:`` lookups with them)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from ..analysis.cython import Declaration, parse_declarations
from .layout import is_listed_file, search_folders


def declaration_file(module: str, bases: tuple[Path, ...]) -> Path | None:
    """The Cython declarations of a compiled ``module`` under one of ``bases``: ``a/b.pxd``, else ``a/b.pyx``."""
    rel = module.replace(".", os.sep)
    for folder in search_folders(module, bases, (".pxd", ".pyx")):
        stem = os.path.join(folder, rel)
        for candidate in (stem + ".pxd", stem + ".pyx"):
            if is_listed_file(candidate):
                return Path(candidate)
    return None


def declaration(qname: str, bases: tuple[Path, ...]) -> Declaration | None:
    """The declaration of the compiled function ``qname`` (``pkg.bindings.lib.matmul``), or None."""
    module, _, name = qname.rpartition(".")
    if not module:
        return None
    found = declaration_file(module, bases)
    if found is None:
        return None
    try:
        stat = found.stat()
    except OSError:
        return None
    return _declarations(str(found), stat.st_mtime_ns, stat.st_size).get(name)


@lru_cache(maxsize=256)
def _declarations(path: str, _mtime: int, _size: int) -> dict[str, Declaration]:
    """A file's declarations, read once per content on disk (its time and size are part of the key)."""
    try:
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return {}
    return parse_declarations(text, path)
