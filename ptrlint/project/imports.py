"""Imports read from a module's text without parsing it: what it binds and which modules it names.

The project index decides which modules to read from these (a text scan is far cheaper than a
parse), and :mod:`.consumers` finds the modules that import a table's module the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import cast

from ..analysis.semantic.scopes import resolve_relative

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#]+)", re.M)


def _import_lines(text: str) -> Iterable[int]:
    """Start offsets of the lines that spell ``import`` (the only lines an import statement can
    start on); ``str.find`` skips the rest of a large file at memchr speed."""
    at = text.find("import")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        yield start
        end = text.find("\n", at)
        if end == -1:
            return
        at = text.find("import", end)


def read_imports(text: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """``(from-imports as (dots, module, names), plain import lists)`` of a text, without parsing."""
    froms: list[tuple[str, str, str]] = []
    plain: list[str] = []
    for start in _import_lines(text):
        match = _FROM.match(text, start)
        if match is not None:
            froms.append(cast("tuple[str, str, str]", match.groups()))  # the three groups always take part
            continue
        match = _IMPORT.match(text, start)
        if match is not None:
            plain.append(match.group(1))
    return froms, plain


def imported_bindings(
    text: str, module: str, is_package: bool, parsed: tuple[list[tuple[str, str, str]], list[str]] | None = None
) -> dict[str, str]:
    """The names a text's import statements bind, and what they name (``{"np": "numpy",
    "block_addrs": "pkg.addresses.block_addrs"}``), read without parsing."""
    froms, plain = parsed if parsed is not None else read_imports(text)
    out: dict[str, str] = {}
    for dots, name, names in froms:
        base = resolve_relative(module, is_package, len(dots), name or None) if dots else name
        if not base:
            continue
        for item in names.strip("()").replace("\n", " ").split(","):
            target, _, alias = item.strip().partition(" as ")
            target = target.strip()
            if target and target != "*":
                out[(alias or target).strip()] = f"{base}.{target}"
    for names in plain:
        for item in names.split(","):
            target, _, alias = item.strip().partition(" as ")
            target = target.strip()
            if target:
                out[alias.strip() or target.partition(".")[0]] = target if alias else target.partition(".")[0]
    return out


def imported_modules(
    text: str, module: str, is_package: bool, bindings: dict[str, str] | None = None, plain: list[str] | None = None
) -> set[str]:
    """Absolute names of what a text imports (modules, and names that may be submodules)."""
    if bindings is None or plain is None:
        parsed = read_imports(text)
        bindings, plain = imported_bindings(text, module, is_package, parsed), parsed[1]
    out: set[str] = set()
    for qualified in bindings.values():
        out.add(qualified)
        out.add(qualified.rpartition(".")[0])
    for names in plain:  # `import a.b.c` names a.b.c, not only a
        out.update(item.strip().partition(" as ")[0].strip() for item in names.split(","))
    out.discard("")
    return out


_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)


def top_level_defs(text: str) -> dict[str, int]:
    """Offsets of the top-level ``def`` lines of a text, by function name (the first one wins)."""
    out: dict[str, int] = {}
    for match in _DEF.finditer(text):
        out.setdefault(match.group(1), match.start())
    return out


def function_text(text: str, start: int) -> str:
    """The source of the top-level ``def`` that starts at ``start``, read without parsing: to the
    next line at column 0 that is not blank or a comment."""
    end = len(text)
    at = text.find("\n", start)
    while at != -1 and at + 1 < len(text):
        line_start = at + 1
        if text[line_start] not in " \t\n\r#":
            end = line_start
            break
        at = text.find("\n", line_start)
    return text[start:end]
