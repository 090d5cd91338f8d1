"""Result cache: findings keyed by the code that computed them and by what they were computed from,
and trusted only when this user's ptrlint wrote them.

Lives in ``.ptrlint_cache/`` (with a CACHEDIR.TAG) at the config root, or where ``--cache-dir`` /
``PTRLINT_CACHE_DIR`` say.

**Keyed by the code.** A key covers the file's bytes, the effective configuration, the enabled rules
and :func:`code_fingerprint`: the version, the cache format, the Python and libcst versions, and a
hash of every module of the installed ``ptrlint`` package (its bytes, read once per process: about
100 small files, a few milliseconds). A changed rule, an upgrade from a git install or an edit to an
editable install gives new keys, so a result computed by other code is never served.

**Trusted only when written here.** The tree being linted is untrusted (a pull request from anyone):
a ``.ptrlint_cache`` committed to it, or copied from another machine, must not hide findings. Every
entry (and the manifest, :mod:`.planner.manifest`) is stored with an HMAC-SHA256 tag under a secret
key kept outside the tree, in the user's own cache directory (``$XDG_CACHE_HOME/ptrlint/secret``,
else ``~/.cache/ptrlint/secret``; created with mode 0600 on first use). An entry whose tag does not
verify (planted, edited, written by another user or machine) is ignored, recomputed, and reported
once per process on stderr. Where no key can be kept, the run is uncached. A cache folder that is a
symbolic link is never used: writing through it could land outside the tree.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
import tempfile
from typing import TYPE_CHECKING, Any, cast

from . import __version__
from .findings import Finding

if TYPE_CHECKING:
    from .settings import Settings

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by ptrlint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


CACHE_FORMAT = "10"  # bump when the stored findings change shape or meaning (... 9: the harm model: severity, failure, foreign values; 10: authenticated entries)
CACHE_DIRNAME = ".ptrlint_cache"  # beside the configuration, unless --cache-dir / PTRLINT_CACHE_DIR say otherwise
SECRET_ENV = "PTRLINT_SECRET_DIR"  # where the key is kept, when not in the user's cache directory

_fingerprint: str | None = None
_secret: bytes | None = None
_secret_read = False
_warned: set[str] = set()


def is_cache_dir(folder: str) -> bool:
    """Whether ``folder`` is a cache ptrlint made (its CACHEDIR.TAG says so): `ptrlint clean` removes no other."""
    try:
        with open(os.path.join(folder, "CACHEDIR.TAG"), encoding="ascii", errors="replace") as handle:
            return handle.read() == CACHEDIR_TAG
    except OSError:
        return False


def code_fingerprint() -> str:
    """What computed a result: ptrlint's version and cache format, Python's and libcst's versions, and the
    bytes of every module of the ptrlint package (once per process)."""
    global _fingerprint
    if _fingerprint is None:
        h = hashlib.sha256()
        for part in (__version__, CACHE_FORMAT, sys.version, _libcst_version()):
            h.update(part.encode())
            h.update(b"\0")
        package = os.path.dirname(os.path.abspath(__file__))
        for path in sorted(_modules(package)):
            h.update(os.path.relpath(path, package).encode())
            h.update(b"\0")
            try:
                with open(path, "rb") as handle:
                    h.update(handle.read())
            except OSError:
                h.update(b"<unreadable>")
        _fingerprint = h.hexdigest()
    return _fingerprint


def _modules(folder: str) -> list[str]:
    out: list[str] = []
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            out.extend(_modules(entry.path))
        elif entry.name.endswith(".py"):
            out.append(entry.path)
    return out


def _libcst_version() -> str:
    """libcst renders the fixes a cache entry keeps: its version, read from its distribution's folder name
    (importlib.metadata costs tens of milliseconds; a listing of the folder that holds libcst, one)."""
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith("libcst-") and name.endswith((".dist-info", ".egg-info")):
                return name[len("libcst-") :].rsplit(".", 1)[0]
    return "unknown"


def secret_dir() -> str:
    """The user's own folder for ptrlint's key, outside any tree being linted."""
    explicit = os.environ.get(SECRET_ENV)
    if explicit:
        return os.path.abspath(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ptrlint")


def secret() -> bytes | None:
    """This user's key for cache tags (created on first use, mode 0600), or None where it cannot be kept."""
    global _secret, _secret_read
    if _secret_read:
        return _secret
    _secret_read = True
    path = os.path.join(secret_dir(), "secret")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if len(data) >= 32:
            _secret = data
            return _secret
    except OSError:
        pass
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".secret-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(32))
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)  # never replace a key another process created meanwhile
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        with open(path, "rb") as handle:
            data = handle.read()
        _secret = data if len(data) >= 32 else None
    except OSError:
        _secret = None
    return _secret


def seal(key: str, body: str) -> str | None:
    """The tag of ``body`` stored under ``key`` (None: no key can be kept here)."""
    k = secret()
    if k is None:
        return None
    return hmac.new(k, key.encode() + b"\0" + body.encode(), hashlib.sha256).hexdigest()


def opened(key: str, data: Any, where: str) -> str | None:
    """The body of a stored ``{"tag", "body"}`` record when its tag verifies; else None, and a planted or
    foreign record is reported once per process."""
    if not isinstance(data, dict) or not isinstance(data.get("body"), str) or not isinstance(data.get("tag"), str):
        warn_untrusted(where)
        return None
    expected = seal(key, data["body"])
    if expected is None or not hmac.compare_digest(expected, data["tag"]):
        warn_untrusted(where)
        return None
    return cast(str, data["body"])  # a str, checked above


def warn_untrusted(where: str) -> None:
    folder = os.path.dirname(os.path.dirname(where)) or where
    if folder in _warned or secret() is None:
        return
    _warned.add(folder)
    print(
        f"ptrlint: warning: ignored cache entries in {folder} that this user's ptrlint did not write (a cache "
        "committed to the tree, or copied from elsewhere); their results were computed again",
        file=sys.stderr,
    )


def usable(directory: str) -> bool:
    """A cache folder ptrlint may read and write: not a symbolic link, and a key to authenticate its entries
    can be kept."""
    if os.path.islink(directory.rstrip(os.sep)):
        key = f"link:{directory}"
        if key not in _warned:
            _warned.add(key)
            print(
                f"ptrlint: warning: not using the cache folder {directory}: it is a symbolic link, "
                "and writing through it could land outside the tree",
                file=sys.stderr,
            )
        return False
    return secret() is not None


class Cache:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.enabled = usable(directory)

    def __bool__(self) -> bool:
        """Whether the cache can be used (not a link, a key kept): ``if cache:`` reads as it should."""
        return self.enabled

    @staticmethod
    def key(data: bytes, settings: Settings, kind: str = "lint") -> str:
        h = hashlib.sha256()
        h.update(kind.encode())
        h.update(code_fingerprint().encode())
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

    def get_entry(self, key: str, path: str) -> tuple[list[Finding], dict[str, Any]] | None:
        """(findings, extra): extra carries what the project index stored beside them."""
        if not self.enabled:
            return None
        target = self._path(key)
        try:
            with open(target, encoding="utf-8") as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            return None
        body = opened(key, record, target)
        if body is None:
            return None
        try:
            data = json.loads(body)
            return [Finding.from_json({**item, "path": path}) for item in data["findings"]], data.get("extra", {})
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def holds(self, key: str) -> bool:
        """Whether a trusted entry is stored under ``key`` (read or not, it may not serve)."""
        return self.enabled and os.path.exists(self._path(key))

    def put(self, key: str, findings: list[Finding], extra: dict[str, Any] | None = None) -> None:
        if not self.enabled:
            return
        body = json.dumps({"findings": [f.to_json() for f in findings], "extra": extra or {}})
        tag = seal(key, body)
        if tag is None:
            return
        try:
            self.ensure_dir()
            target = self._path(key)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"tag": tag, "body": body}))
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
