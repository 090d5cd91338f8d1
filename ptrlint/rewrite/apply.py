"""Applying fixes to text, and writing files without ever losing work."""

from __future__ import annotations

import os
import stat
import tempfile

from ..findings import Edit, Finding


class FileChangedError(Exception):
    """The file changed on disk between reading and writing; it was not overwritten."""


def apply_fixes(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Apply the fixes of ``findings`` whose edits do not overlap an earlier chosen fix.

    Identical edits from different fixes (the same import name appended twice) are applied
    once. Returns the new text and the findings whose fixes were applied.
    """
    chosen: list[Edit] = []
    applied: list[Finding] = []
    for finding in sorted(findings, key=Finding.sort_key):
        assert finding.fix is not None
        edits = [e for e in finding.fix.edits if e not in chosen]
        if any(_overlaps(e, c) for e in edits for c in chosen):
            continue
        chosen.extend(edits)
        applied.append(finding)
    out = text
    for edit in sorted(chosen, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out, applied


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two different insertions at one point: order would be ambiguous
    return a.start < b.end and b.start < a.end


def write_atomic(path: str, data: bytes, original: bytes) -> None:
    """Replace ``path`` with ``data`` via a temp file + rename in the same folder.

    Keeps the file mode; refuses files the user may not write and files whose content is no longer
    ``original`` (changed by someone else since we read it).
    """
    st = os.stat(path)
    if not os.access(path, os.W_OK):  # the OS decides, as for any editor (root may write read-only files)
        raise PermissionError(13, "permission denied (read-only file); not fixed")
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".ptrlint.tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        with open(path, "rb") as handle:
            if handle.read() != original:
                raise FileChangedError(f"{path}: changed on disk while ptrlint was fixing it; not overwritten")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
