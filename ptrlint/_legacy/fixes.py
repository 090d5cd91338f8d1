"""Pure fix builders: node -> text edits, spelled the way the file already spells things.

Each builder returns ``None`` for any shape it does not expect, so a finding then simply has
no fix. Fixes change only the dtype (or ctypes) token, plus where needed one name appended to an
existing from-import; the old name is never removed.
"""

from __future__ import annotations

import bisect

import libcst as cst

from ..model import Edit
from .pointers import dotted as _dotted
from ..analysis.scopes import LiteScope
from .sourcemap import SourceMap


def module_alias(module: cst.Module, name: str) -> str | None:
    """The local name under which ``import <name>`` (or ``import <name> as x``) binds the module."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    dotted = _dotted(alias.name)
                    if alias.asname is not None and dotted == name:
                        asname = alias.asname.name
                        if isinstance(asname, cst.Name):
                            return asname.value
                    elif alias.asname is None and (dotted == name or dotted.startswith(name + ".")):
                        return name
    return None


def _from_imports(module: cst.Module, name: str) -> list[cst.ImportFrom]:
    found: list[cst.ImportFrom] = []
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.ImportFrom)
                    and not small.relative
                    and small.module is not None
                    and _dotted(small.module) == name
                ):
                    found.append(small)
    return found


def import_name_edits(module: cst.Module, source: SourceMap, library: str, new_name: str,
                      scope: LiteScope | None) -> list[Edit] | None:
    """Edits that make the bare name ``new_name`` refer to ``library.new_name``.

    Appends it to the module's existing ``from <library> import ...``; returns [] when it is
    already imported, None when no such import exists or the name is bound to something else.
    """
    imports = _from_imports(module, library)
    for node in imports:
        if isinstance(node.names, cst.ImportStar):
            return []
        for alias in node.names:
            if alias.asname is None and isinstance(alias.name, cst.Name) and alias.name.value == new_name:
                return []
    if scope is not None and scope.is_bound(new_name):
        return None  # bound to something else: do not shadow it
    for node in imports:
        if isinstance(node.names, cst.ImportStar) or not node.names:
            continue
        last = node.names[-1]
        anchor: cst.CSTNode = last.asname.name if last.asname is not None else last.name
        end = source.end(anchor)
        return [Edit(end, end, f", {new_name}")]
    return None


def replace_dtype(module: cst.Module, source: SourceMap, dtype: cst.BaseExpression, library: str | None,
                  scope: LiteScope | None, qname: str, new: str = "uint64") -> list[Edit] | None:
    """Edits that turn the dtype expression into its unsigned 64-bit spelling.

    ``torch.int64``/``th.long``/``numpy.intp`` -> same base with ``uint64``; ``"int64"`` -> ``"uint64"``;
    a from-imported ``int64`` -> ``uint64`` (appended to that import); builtin ``int``/``float`` ->
    ``<module alias>.uint64``.
    """
    if isinstance(dtype, cst.Attribute):
        return [Edit(source.start(dtype.attr), source.end(dtype.attr), new)]
    if isinstance(dtype, cst.SimpleString):
        text = dtype.value
        i = 0
        while i < len(text) and text[i] not in "'\"":
            i += 1
        prefix = text[:i]
        quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else text[i:i + 1]
        return [Edit(source.start(dtype), source.end(dtype), f"{prefix}{quote}{new}{quote}")]
    if isinstance(dtype, cst.Name):
        if qname.startswith("builtins."):
            if library is None:
                return None
            return alias_spelling_edit(module, source, dtype, library, scope, new)
        module_name = qname.rpartition(".")[0]
        imports = import_name_edits(module, source, module_name, new, scope)
        if imports is None:
            return None
        return [Edit(source.start(dtype), source.end(dtype), new), *imports]
    return None


def alias_spelling_edit(module: cst.Module, source: SourceMap, node: cst.CSTNode, library: str,
                        scope: LiteScope | None, new: str) -> list[Edit] | None:
    """Replace ``node`` by ``<alias>.<new>`` or, with no module import, by a from-imported bare name."""
    spelled = spell(module, source, library, scope, new)
    if spelled is None:
        return None
    text, imports = spelled
    return [Edit(source.start(node), source.end(node), text), *imports]


def spell(module: cst.Module, source: SourceMap, library: str, scope: LiteScope | None, new: str,
          prefer: str | None = None) -> tuple[str, list[Edit]] | None:
    """How to write ``library.new`` here: ``(text, import edits)``."""
    if prefer is not None:
        return f"{prefer}.{new}", []
    alias = module_alias(module, library)
    if alias is not None:
        return f"{alias}.{new}", []
    imports = import_name_edits(module, source, library, new, scope)
    if imports is None:
        return None
    return new, imports


def insert_keyword(source: SourceMap, call: cst.Call, text: str) -> list[Edit] | None:
    """Append ``text`` (``dtype=...``) as the last argument of ``call``, keeping its layout."""
    args = list(call.args)
    if not args:
        return None
    last = args[-1]
    value_end = source.end(last.value)
    if isinstance(last.comma, cst.Comma):
        comma = source.text.find(",", value_end)
        if comma < 0:
            return None
        close_line = source.range(call).end.line
        comma_line = bisect.bisect_right(source.line_starts, comma)
        if close_line != comma_line:
            indent_line = source.line_text(source.range(last).start.line)
            indent = indent_line[: len(indent_line) - len(indent_line.lstrip())]
            at = source.line_end(comma)
            return [Edit(at, at, f"{source.newline}{indent}{text},")]
        return [Edit(comma + 1, comma + 1, f" {text}")]
    return [Edit(value_end, value_end, f", {text}")]
