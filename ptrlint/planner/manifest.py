"""The manifest: what the planner learned of each file from its text, trusted while the file's
metadata is unchanged, so a warm run neither reads nor hashes the files that did not change.

For every file the index read, the manifest keeps its ``stat`` signature (modification time in
nanoseconds, size, inode) with what the planner derived from the text: whether it holds pointer
evidence and a site, its dotted name, its cache key (the content hash), its imports, its light
summary and, for candidates, which names of its imported modules it spells. When a file's
signature matches, that record stands in for reading the file. A record's keys: ``evidence``,
``site`` (the prefilter's answers; ``site`` is None for a project file only looked into),
``module``, ``is_package``, ``cache_key``, ``size`` (characters), ``bindings`` (local name ->
imported module), ``imported_modules``, ``light_summary`` and, for a candidate,
``attribute_uses`` (local name -> the attributes it spells) (ruff validates its cache by
metadata the same way; the content hash in the key still decides the findings).

A record is stored only for a file whose modification time is at least ``SETTLE_NS`` older than
the run that read it: a file written again within the file system's timestamp granularity after
it was read could otherwise keep its old signature (git's "racy clean" problem). The manifest
is one JSON file per settings fingerprint under the cache directory, written atomically with an
HMAC tag (:mod:`ptrlint.cache`); a missing, unreadable, foreign or planted one is simply empty.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any

from ..cache import opened, seal

MANIFEST_FORMAT = 3  # 2: readable record keys; 3: cache keys hold the module's path
SETTLE_NS = 2_000_000_000  # 2 s: FAT's granularity; ext4, APFS and NTFS are far finer

Signature = tuple[int, int, int]


def signature(real: str) -> Signature | None:
    """``(mtime_ns, size, inode)`` of a file, or None when it cannot be stat'ed."""
    try:
        st = os.stat(real)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class Manifest:
    """Records by real path; ``get`` answers only for an unchanged signature."""

    def __init__(self, directory: str, fingerprint: str) -> None:
        self.file = os.path.join(directory, "manifest", f"{fingerprint[:32]}.json")
        self.started_ns = time.time_ns()
        self.records: dict[str, list[Any]] = {}
        self.dirty = False
        self.key = f"manifest:{fingerprint}"
        try:
            with open(self.file, encoding="utf-8") as handle:
                record = json.load(handle)
            body = opened(self.key, record, self.file)  # only what this user's ptrlint wrote (see ptrlint/cache.py)
            data = json.loads(body) if body is not None else None
            if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT and isinstance(data.get("files"), dict):
                self.records = data["files"]
        except (OSError, ValueError):
            pass

    def get(self, real: str, sig: Signature | None) -> dict[str, Any] | None:
        entry = self.records.get(real)
        if sig is None or entry is None or len(entry) != 2 or tuple(entry[0]) != sig:
            return None
        return entry[1] if isinstance(entry[1], dict) else None

    def put(self, real: str, sig: Signature | None, record: dict[str, Any]) -> None:
        if sig is None or sig[0] > self.started_ns - SETTLE_NS:
            return  # changed too recently to trust its timestamp (see the module's docstring)
        entry = [list(sig), record]
        if self.records.get(real) != entry:
            self.records[real] = entry
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        # files deleted since they were recorded (one stat each, only when something changed)
        self.records = {real: entry for real, entry in self.records.items() if os.path.exists(real)}
        try:
            folder = os.path.dirname(self.file)
            os.makedirs(folder, exist_ok=True)
            # dumps, not dump: json.dump streams through the pure-Python encoder (0.7 s for torch's manifest)
            body = json.dumps({"format": MANIFEST_FORMAT, "files": self.records}, separators=(",", ":"))
            tag = seal(self.key, body)
            if tag is None:
                return
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"tag": tag, "body": body}, separators=(",", ":")))
            os.replace(tmp, self.file)
            self.dirty = False
        except OSError:
            pass  # a read-only cache simply reads the files again next time
