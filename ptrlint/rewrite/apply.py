"""Applying fixes to text, and writing files without ever losing work."""

from __future__ import annotations

import bisect
import os
import stat
import tempfile

from ..findings import Edit, Finding


class FileChangedError(Exception):
    """The file changed on disk between reading and writing; it was not overwritten."""


def apply_fixes(text: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """Apply the fixes of ``findings`` whose edits do not overlap an earlier chosen fix (nor each other).

    Identical edits from different fixes (the same import name appended twice) are applied
    once. Returns the new text and the findings whose fixes were applied. Linear in the text and
    the edits (chosen edits are kept sorted; the text is joined once).
    """
    chosen: list[Edit] = []  # sorted by (start, end)
    identical: set[Edit] = set()
    applied: list[Finding] = []
    for finding in sorted(findings, key=Finding.sort_key):
        assert finding.fix is not None
        edits = [e for e in finding.fix.edits if e not in identical]
        if any(_overlaps_chosen(e, chosen) for e in edits) or any(
            _overlaps(a, b) for i, a in enumerate(edits) for b in edits[i + 1 :]
        ):
            continue  # it meets a chosen fix (or its own edits meet: no order would be right)
        for edit in edits:
            bisect.insort(chosen, edit, key=_span)
            identical.add(edit)
        applied.append(finding)
    parts: list[str] = []
    at = 0
    for edit in chosen:
        parts.append(text[at : edit.start])
        parts.append(edit.text)
        at = edit.end
    parts.append(text[at:])
    return "".join(parts), applied


def _span(edit: Edit) -> tuple[int, int]:
    return edit.start, edit.end


def _overlaps_chosen(edit: Edit, chosen: list[Edit]) -> bool:
    """Whether ``edit`` overlaps one of the sorted ``chosen`` edits (only its neighbours can)."""
    at = bisect.bisect_left(chosen, _span(edit), key=_span)
    return any(_overlaps(edit, chosen[i]) for i in range(max(0, at - 1), min(len(chosen), at + 2)))


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end == b.start == b.end:
        return True  # two different insertions at one point: order would be ambiguous
    return a.start < b.end and b.start < a.end


def write_atomic(path: str, data: bytes, original: bytes) -> None:
    """Replace ``path``'s content with ``data``, keeping the file what it was: its mode, owner and group, and
    its hard links.

    A file with one link is replaced atomically (a temp file in the same folder, given the original's mode,
    owner and group, then renamed over it); a file with several links is rewritten in place, since a
    rename would give this path a new inode and leave the other links with the old text. Refuses files
    the user may not write and files whose content is no longer ``original`` (changed by someone else
    since we read it).
    """
    st = os.stat(path)
    if not os.access(path, os.W_OK):  # the OS decides, as for any editor (root may write read-only files)
        raise PermissionError(13, "permission denied (read-only file); not fixed")
    if st.st_nlink > 1:
        _write_in_place(path, data, original)
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".ptrlint.tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        _keep_owner(tmp, st)
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


def _keep_owner(tmp: str, st: os.stat_result) -> None:
    """Give the new file the original's owner and group (a fix run as root must not take a user's file);
    where the OS refuses (an ordinary user may not give files away), the original must already be ours."""
    if not hasattr(os, "chown"):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except PermissionError:
        mine = os.stat(tmp)
        if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
            raise PermissionError(1, "cannot keep the file's owner and group; not fixed") from None


def _write_in_place(path: str, data: bytes, original: bytes) -> None:
    """Rewrite a hard-linked file through its own inode (every link sees the fix)."""
    with open(path, "r+b") as handle:
        if handle.read() != original:
            raise FileChangedError(f"{path}: changed on disk while ptrlint was fixing it; not overwritten")
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
