"""Source files in and out: reading and decoding them (BOM, PEP 263 cookie), and showing a change
as a unified diff. No analysis here; the planner reads, the engine works on text."""

from __future__ import annotations

import difflib
import errno
import io
import os
import stat
import tokenize
from functools import lru_cache

from .findings import DECODE_ERROR, IO_ERROR, FileError, FileResult


def decode(data: bytes) -> tuple[str, str]:
    """Source bytes -> (text, encoding); honours a BOM and a PEP 263 coding cookie."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def read_bytes(path: str) -> bytes:
    """A file's bytes, only if it is a regular file (raises OSError otherwise): the tree is untrusted, and
    opening a FIFO named ``x.py`` would wait forever, a device never end. The open does not block; the
    type is checked on the open file, so a file swapped for a FIFO meanwhile is refused all the same."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            return handle.read()
    finally:
        if fd >= 0:
            os.close(fd)


def read_source(path: str) -> tuple[str, bytes, str, str] | FileResult:
    """(real path, bytes, text, encoding), or a FileResult carrying the error."""
    try:
        real = real_path(path)
        data = read_bytes(real)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if os.path.islink(path) and not os.path.exists(path):
            reason = "broken symbolic link"
        return FileResult(path=path, error=FileError(path, f"cannot read file: {reason}", code=IO_ERROR))
    try:
        text, encoding = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(path=path, error=FileError(path, f"cannot decode file: {exc}", code=DECODE_ERROR))
    return real, data, text, encoding


def unified_diff(path: str, before: str, after: str) -> str:
    shown = path.encode("unicode_escape").decode("ascii") if not path.isprintable() else path  # one header line each
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=f"a/{shown}", tofile=f"b/{shown}"
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def real_path(path: str) -> str:
    """``os.path.realpath``, memoised by absolute path, with each folder's resolution cached: for a
    file that is not itself a link, one ``lstat`` instead of one per path component (a run resolves
    every file it reads, and their imports, several times)."""
    if os.path.isabs(path):  # the planner asks again for each import of the same file
        return _real_spelled(path)
    return _real_absolute(os.path.abspath(path))  # a relative path means another file in another folder


@lru_cache(maxsize=65536)
def _real_spelled(absolute: str) -> str:
    return _real_absolute(os.path.normpath(absolute))


@lru_cache(maxsize=65536)
def _real_absolute(absolute: str) -> str:
    if os.path.islink(absolute):
        return os.path.realpath(absolute)
    folder, name = os.path.split(absolute)
    return os.path.join(_real_folder(folder), name) if name else _real_folder(folder)


@lru_cache(maxsize=16384)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)
