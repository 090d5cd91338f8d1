"""Result cache: findings keyed by file content + effective config + enabled rules + version.

Lives in ``.ptrlint_cache/`` (with a CACHEDIR.TAG) at the config root, or where ``--cache-dir`` /
``PTRLINT_CACHE_DIR`` say. A changed file, config,
rule selection or ptrlint version gives a different key, so a stale result is never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import TYPE_CHECKING

from . import __version__
from .findings import Finding

if TYPE_CHECKING:
    from .settings import Settings

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by ptrlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


CACHE_FORMAT = "9"  # bump when the stored findings change shape or meaning (2: intents; 3: index extras; 4: catalogue, factories; 5: evidence in code only; 6: light summaries without docstring fields; 7: fixes chosen by every consumer, alternatives; 8: evidence through kwargs, loops, closures, returned names; 9: the harm model: severity, failure, foreign values)


CACHE_DIRNAME = ".ptrlint_cache"  # beside the configuration, unless --cache-dir / PTRLINT_CACHE_DIR say otherwise


def is_cache_dir(folder: str) -> bool:
    """Whether ``folder`` is a cache ptrlint made (its CACHEDIR.TAG says so): `ptrlint clean` removes no other."""
    try:
        with open(os.path.join(folder, "CACHEDIR.TAG"), encoding="ascii", errors="replace") as handle:
            return handle.read() == CACHEDIR_TAG
    except OSError:
        return False


class Cache:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    @staticmethod
    def key(data: bytes, settings: "Settings", kind: str = "lint") -> str:
        h = hashlib.sha256()
        h.update(kind.encode())
        h.update(__version__.encode())
        h.update(CACHE_FORMAT.encode())
        h.update(settings.config.fingerprint().encode())
        h.update(",".join(sorted(settings.enabled)).encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> list[Finding] | None:
        entry = self.get_entry(key, path)
        return entry[0] if entry is not None else None

    def get_entry(self, key: str, path: str) -> tuple[list[Finding], dict] | None:
        """(findings, extra): extra carries what the project index stored beside them."""
        try:
            with open(self._path(key), encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, list):
                data = {"findings": data, "extra": {}}
            return [Finding.from_json({**item, "path": path}) for item in data["findings"]], data.get("extra", {})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def holds(self, key: str) -> bool:
        """Whether an entry is stored under ``key`` (read or not, it may not serve)."""
        return os.path.exists(self._path(key))

    def put(self, key: str, findings: list[Finding], extra: dict | None = None) -> None:
        try:
            self.ensure_dir()
            target = self._path(key)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"findings": [f.to_json() for f in findings], "extra": extra or {}}))
            os.replace(tmp, target)
        except OSError:
            pass  # a read-only tree simply runs uncached

    def ensure_dir(self) -> None:
        if os.path.isdir(self.directory):
            return
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "CACHEDIR.TAG"), "w", encoding="ascii") as handle:
            handle.write(CACHEDIR_TAG)
        with open(os.path.join(self.directory, ".gitignore"), "w", encoding="ascii") as handle:
            handle.write("*\n")
