"""``[tool.ptrlint]`` in the nearest ``pyproject.toml``: discovery, defaults and validation.

Imports the stdlib only (tomllib, or tomli before Python 3.11).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on old interpreters only
    import tomli as tomllib

DEFAULT_POINTER_NAMES: tuple[str, ...] = (
    # a name with a `_`-separated word that says it holds addresses (`kv_ptrs_shadow`, `raddr`)
    r"(?:\w*_)?(?:ptrs?|pointers?|addrs?|address(?:es)?|[rldhvp]addrs?|[dh]ptrs?|devptrs?)(?:_\w*)?",
)
DEFAULT_LOOKALIKE_NAMES: tuple[str, ...] = (
    r"\w*indptr\w*",  # CSR index pointers
    r"(?:\w*_)?(?:c?row|c?col|crow|ccol|csr|csc)_ptrs?(?:_\w*)?",  # CSR row_ptr / col_ptr
    r"(?:num|n|count|cnt|max|min|total)_\w*",  # counts and limits
    # a look-alike word anywhere: offsets, sizes, lengths, counts, strides, indices
    r"(?:\w*_)?(?:count|counts|num|size|sizes|len|lens|length|lengths|stride|strides|offset|offsets|idx|index|indices)(?:_\w*)?",
    r"(?:_?)(?:ip|ipv4|ipv6|mac|master|zmq|tcp|udp|url|uri|email|socket|bind|listen|net|network|host_ip|server|nic|rpc|http|broadcast)_\w*",
)
DEFAULT_BUFFER_FACTORIES: tuple[str, ...] = ("make_buffer", "_make_buffer", "CpuGpuBuffer")
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".ptrlint_cache",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
)
DEFAULT_TORCH_VERSION = "2.3"


class ConfigError(Exception):
    """Invalid configuration (exit 2). The message names the offending key."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    pointer_names: tuple[str, ...] = DEFAULT_POINTER_NAMES
    lookalike_names: tuple[str, ...] = DEFAULT_LOOKALIKE_NAMES
    buffer_factories: tuple[str, ...] = DEFAULT_BUFFER_FACTORIES
    pointer_functions: tuple[str, ...] = ()
    int64_consumers: tuple[str, ...] = ()
    uint64_consumers: tuple[str, ...] = ()
    torch_version: str = DEFAULT_TORCH_VERSION
    platforms: tuple[str, ...] = ("any",)  # where the code runs: per-platform dtypes are judged for these
    respect_gitignore: bool = True
    force_exclude: bool = False
    root: str = "."
    source: str | None = None  # the pyproject.toml it came from, if any
    # a configuration file that could not be read (malformed TOML, a bad value): the files it governs are
    # each reported with this error (E904), and the rest of the run goes on
    error: str | None = None

    def fingerprint(self) -> str:
        """Stable hash of everything that changes analysis results (for the cache)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("source",)}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=list).encode()).hexdigest()[:16]

    @property
    def torch_version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.torch_version)


def parse_version(text: str) -> tuple[int, ...]:
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text.strip())
    if not match:
        raise ConfigError(f'torch-version: expected a version such as "2.3", got {text!r}')
    return tuple(int(g) for g in match.groups() if g is not None)


def _str_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a list of strings, got {type(value).__name__} {value!r}")
    return tuple(value)


def _regex_list(key: str, value: Any) -> tuple[str, ...]:
    """Name patterns from the configuration: the tree's configuration is untrusted too, so a pattern whose
    matching time can grow exponentially (a repetition inside a repetition, ``(\\w+_)*ptr``) is refused."""
    items = _str_list(key, value)
    for item in items:
        if len(item) > MAX_PATTERN_LENGTH:
            raise ConfigError(f"{key}: pattern longer than {MAX_PATTERN_LENGTH} characters: {item[:40]!r}...")
        try:
            re.compile(item)
            parsed = _sre_parse(item)
        except re.error as exc:
            raise ConfigError(f"{key}: invalid regular expression {item!r}: {exc}") from exc
        if _nested_repeat(parsed, False):
            raise ConfigError(
                f"{key}: {item!r} repeats a group that repeats itself (such as `(\\w+_)*ptr`), which can "
                "take exponential time on some names; write it without the nested repetition "
                "(`\\w*_ptr`)"
            )
    return items


MAX_PATTERN_LENGTH = 500


def _sre_parse(pattern: str) -> Any:  # an sre_parse.SubPattern (a private module)
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # Python < 3.11
        import sre_parse
    return sre_parse.parse(pattern)


def _nested_repeat(parsed: Any, inside: bool) -> bool:
    """Whether an unbounded-ish repetition holds another repetition (the catastrophic-backtracking shape)."""
    for op, argument in parsed:
        name = str(op)
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = argument
            repeats = high is not None and (high > 1 or str(high) == "MAXREPEAT")
            if repeats and inside:
                return True
            if _nested_repeat(sub, inside or repeats):
                return True
        elif name == "SUBPATTERN":
            if _nested_repeat(argument[-1], inside):
                return True
        elif name == "BRANCH":
            if any(_nested_repeat(alt, inside) for alt in argument[1]):
                return True
        elif name in ("ASSERT", "ASSERT_NOT"):
            if _nested_repeat(argument[1], inside):
                return True
    return False


_QUALIFIED_PATTERN = re.compile(r"[A-Za-z_*?\[][\w.*?\[\]!-]*")


def _qualified_patterns(key: str, value: Any) -> tuple[str, ...]:
    """Qualified-name patterns (``mypkg.ops.*``, ``torch.ops.myext.*``), matched with fnmatch."""
    items = _str_list(key, value)
    for item in items:
        if not _QUALIFIED_PATTERN.fullmatch(item):
            raise ConfigError(f'{key}: {item!r} is not a qualified-name pattern such as "mypkg.ops.*"')
    return items


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {type(value).__name__} {value!r}")
    return value


def _per_file_ignores(key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a table of glob = [codes], got {type(value).__name__}")
    return tuple((str(glob), _str_list(f"{key}.{glob}", codes)) for glob, codes in value.items())


def _version(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f'{key}: expected a string such as "2.3", got {type(value).__name__} {value!r}')
    parse_version(value)
    return value


PLATFORMS = ("any", "cuda", "rocm", "xpu", "npu", "cpu", "mps", "tpu")


def _platforms(key: str, value: Any) -> tuple[str, ...]:
    names = tuple(v.lower() for v in _str_list(key, value))
    unknown = [n for n in names if n not in PLATFORMS]
    if not names or unknown:
        raise ConfigError(f"{key}: expected a non-empty list of {', '.join(PLATFORMS)}, got {value!r}")
    return names


_KEYS: dict[str, tuple[str, Any]] = {
    "select": ("select", _str_list),
    "extend-select": ("extend_select", _str_list),
    "ignore": ("ignore", _str_list),
    "exclude": ("exclude", _str_list),
    "extend-exclude": ("extend_exclude", _str_list),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "pointer-names": ("pointer_names", _regex_list),
    "lookalike-names": ("lookalike_names", _regex_list),
    "buffer-factories": ("buffer_factories", _str_list),
    "pointer-functions": ("pointer_functions", _str_list),
    "int64-consumers": ("int64_consumers", _qualified_patterns),
    "uint64-consumers": ("uint64_consumers", _qualified_patterns),
    "torch-version": ("torch_version", _version),
    "platforms": ("platforms", _platforms),
    "respect-gitignore": ("respect_gitignore", _bool),
    "force-exclude": ("force_exclude", _bool),
}
CONFIG_KEYS: tuple[str, ...] = tuple(_KEYS)


def config_from_table(table: dict[str, Any], root: Path, source: str | None) -> Config:
    values: dict[str, Any] = {}
    for key, raw in table.items():
        if key not in _KEYS:
            known = ", ".join(CONFIG_KEYS)
            raise ConfigError(f"unknown key {key!r} in [tool.ptrlint] of {source or 'config'} (known keys: {known})")
        attr, convert = _KEYS[key]
        try:
            values[attr] = convert(key, raw)
        except ConfigError as exc:
            raise ConfigError(f"{source or 'config'}: [tool.ptrlint] {exc}") from exc
    return replace(Config(), root=str(root), source=source, **values)


def with_overrides(config: Config, table: dict[str, Any]) -> Config:
    """``config`` with the ``--config KEY=VALUE`` settings on top (each checked as in a file)."""
    if not table:
        return config
    values: dict[str, Any] = {}
    for key, raw in table.items():
        if key not in _KEYS:
            raise ConfigError(f"--config: unknown key {key!r} (known keys: {', '.join(CONFIG_KEYS)})")
        attr, convert = _KEYS[key]
        values[attr] = convert(key, raw)
    return replace(config, **values)


def parse_override(text: str) -> dict[str, Any]:
    """One ``--config`` value that is not a file: a TOML ``key = value`` pair (``select = ["PTR001"]``)."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {text!r}: neither a file nor a TOML `key = value` pair ({exc})") from exc
    if not table:
        raise ConfigError(f"--config {text!r}: neither a file nor a TOML `key = value` pair")
    return table


def load_file(path: Path) -> Config:
    """Read ``[tool.ptrlint]`` from one pyproject.toml (an absent table gives the defaults)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    table = data.get("tool", {}).get("ptrlint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.ptrlint] must be a table")
    return config_from_table(table, path.parent.resolve(), str(path))


def find_config_file(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.ptrlint] table."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate_dir in (directory, *directory.parents):
        candidate = _own_config_file(candidate_dir)
        if candidate is not None:
            return candidate
    return None


def _own_config_file(directory: Path) -> Path | None:
    """``directory``'s pyproject.toml when it has a [tool.ptrlint] table."""
    candidate = directory / "pyproject.toml"
    if candidate.is_file():
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{candidate}: cannot read as TOML: {exc}") from exc
        if "ptrlint" in data.get("tool", {}):
            return candidate
    return None


def resolve_config(explicit: Path | None, isolated: bool, start: Path) -> Config:
    if isolated:
        return replace(Config(), root=str(Path.cwd().resolve()))
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"--config: {explicit} does not exist")
        return load_file(explicit)
    found = find_config_file(start)
    if found is None:
        return replace(Config(), root=str(Path.cwd().resolve()))
    return load_file(found)


class ConfigResolver:
    """Each file's configuration: the nearest ``pyproject.toml`` with a ``[tool.ptrlint]`` table
    above it (like ruff), unless ``--config FILE`` or ``--isolated`` fixes one for every file; the
    ``--config KEY=VALUE`` overrides go on top of either."""

    def __init__(
        self, explicit: Path | None = None, isolated: bool = False, overrides: dict[str, Any] | None = None
    ) -> None:
        self.overrides = overrides or {}  # `--config KEY=VALUE`: on top of every file's configuration
        self.fixed: Config | None = None
        if isolated or explicit is not None:
            self.fixed = with_overrides(resolve_config(explicit, isolated, Path(".")), self.overrides)
        self._by_dir: dict[str, Config] = {}
        self._by_file: dict[str, Config] = {}
        self._by_raw_dir: dict[str, Config] = {}  # folders as the paths spell them
        self._default = with_overrides(replace(Config(), root=str(Path.cwd().resolve())), self.overrides)

    def for_path(self, path: str | Path) -> Config:
        if self.fixed is not None:
            return self.fixed
        raw = os.fspath(path)
        folder = os.path.normpath(raw if os.path.isdir(raw) else os.path.dirname(raw))  # "./a" as "a"
        known = self._by_raw_dir.get(folder)  # each file of a folder: one stat, no resolving
        if known is not None:
            return known
        found = self._for_directory(Path(folder).resolve())  # "" (a bare file name) is the working folder
        self._by_raw_dir[folder] = found
        return found

    def _for_directory(self, directory: Path) -> Config:
        """The configuration of a resolved folder: its own pyproject.toml's, else its parent's (each
        folder of a tree is looked at once, not once per folder below it)."""
        key = str(directory)
        found = self._by_dir.get(key)
        if found is None:
            try:
                config_file = _own_config_file(directory)
            except ConfigError as exc:  # a pyproject.toml that is not TOML: it fails its files alone
                config_file, found = None, replace(self._default, error=str(exc), root=str(directory))
            if found is not None:
                pass
            elif config_file is not None:
                file_key = str(config_file)
                if file_key not in self._by_file:
                    try:
                        self._by_file[file_key] = with_overrides(load_file(config_file), self.overrides)
                    except ConfigError as exc:
                        self._by_file[file_key] = replace(
                            self._default, error=str(exc), root=str(directory), source=file_key
                        )
                found = self._by_file[file_key]
            elif directory.parent == directory:
                found = self._default
            else:
                found = self._for_directory(directory.parent)
            self._by_dir[key] = found
        return found
