"""Pure fix builders: ast nodes -> fix intents, spelled the way the file already spells things.

Each builder returns ``None`` for any shape it does not expect, so a finding then simply has
no fix. Fixes change only the dtype (or ctypes) token, plus where needed one name appended to an
existing from-import; the old name is never removed. The intents are applied by the rewrite
engine (:mod:`ptrlint.rewrite`), on libcst's tree, only when a fix is applied or shown.
"""

from __future__ import annotations

import ast

from .analysis.semantic.scopes import LiteScope
from .analysis.source import SourceMap
from .findings import Intent


def _intent(source: SourceMap, node: ast.AST, action: str, value: str) -> Intent:
    start, end = source.span(node)
    return Intent(start, end, action, value)


def module_alias(module: ast.Module, name: str) -> str | None:
    """The local name under which ``import <name>`` (or ``import <name> as x``) binds the module."""
    for stmt in module.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is not None and alias.name == name:
                    return alias.asname
                if alias.asname is None and (alias.name == name or alias.name.startswith(name + ".")):
                    return name
    return None


def _from_imports(module: ast.Module, name: str) -> list[ast.ImportFrom]:
    return [s for s in module.body if isinstance(s, ast.ImportFrom) and not s.level and s.module == name]


def import_name_intents(
    module: ast.Module, source: SourceMap, library: str, new_name: str, scope: LiteScope | None
) -> list[Intent] | None:
    """Intents that make the bare name ``new_name`` refer to ``library.new_name``.

    Appends it to the module's existing ``from <library> import ...``; returns [] when it is
    already imported, None when no such import exists or the name is bound to something else.
    """
    imports = _from_imports(module, library)
    for node in imports:
        for alias in node.names:
            if alias.name == "*" or (alias.asname is None and alias.name == new_name):
                return []
    if scope is not None and scope.is_bound(new_name):
        return None  # bound to something else: do not shadow it
    for node in imports:
        if node.names:
            return [_intent(source, node, "add_import_name", new_name)]
    return None


def replace_dtype(
    module: ast.Module,
    source: SourceMap,
    dtype: ast.expr,
    library: str | None,
    scope: LiteScope | None,
    qname: str,
    new: str = "uint64",
) -> list[Intent] | None:
    """Intents that turn the dtype expression into its unsigned 64-bit spelling.

    ``torch.int64``/``th.long``/``numpy.intp`` -> same base with ``uint64``; ``"int64"`` -> ``"uint64"``;
    a from-imported ``int64`` -> ``uint64`` (appended to that import); builtin ``int``/``float`` ->
    ``<module alias>.uint64``.
    """
    if isinstance(dtype, ast.Attribute):
        return [_intent(source, dtype, "rename_attribute", new)]
    if isinstance(dtype, ast.Constant) and isinstance(dtype.value, str):
        if not is_single_string_literal(source.segment(dtype)):
            return None  # implicit concatenation or an f-string: not ours to rewrite
        return [_intent(source, dtype, "replace_string", new)]
    if isinstance(dtype, ast.Name):
        if qname.startswith("builtins."):
            if library is None:
                return None
            return alias_spelling(module, source, dtype, library, scope, new)
        module_name = qname.rpartition(".")[0]
        imports = import_name_intents(module, source, module_name, new, scope)
        if imports is None:
            return None
        return [_intent(source, dtype, "replace_name", new), *imports]
    return None


def is_single_string_literal(text: str) -> bool:
    """True for one string token (``'int64'``, ``r"i8"``), false for ``"a" "b"`` or f-strings."""
    i = 0
    while i < len(text) and text[i] not in "'\"":
        i += 1
    prefix = text[:i].lower()
    if "f" in prefix or "b" in prefix or i == len(text):
        return False
    quote = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else text[i]
    body = text[i + len(quote) : len(text) - len(quote)]
    return text.endswith(quote) and len(text) >= i + 2 * len(quote) and quote not in body


def alias_spelling(
    module: ast.Module, source: SourceMap, node: ast.expr, library: str, scope: LiteScope | None, new: str
) -> list[Intent] | None:
    """Replace ``node`` by ``<alias>.<new>`` or, with no module import, by a from-imported bare name."""
    spelled = spell(module, source, library, scope, new)
    if spelled is None:
        return None
    text, imports = spelled
    return [_intent(source, node, "replace_name", text), *imports]


def spell(
    module: ast.Module, source: SourceMap, library: str, scope: LiteScope | None, new: str, prefer: str | None = None
) -> tuple[str, list[Intent]] | None:
    """How to write ``library.new`` here: ``(text, import intents)``."""
    if prefer is not None:
        return f"{prefer}.{new}", []
    alias = module_alias(module, library)
    if alias is not None:
        return f"{alias}.{new}", []
    imports = import_name_intents(module, source, library, new, scope)
    if imports is None:
        return None
    return new, imports


def append_keyword(source: SourceMap, call: ast.Call, text: str) -> list[Intent] | None:
    """Append ``text`` (``dtype=...``) as the last argument of ``call``, keeping its layout."""
    if not call.args and not call.keywords:
        return None
    return [_intent(source, call, "append_keyword", text)]


def replace_method_call(source: SourceMap, call: ast.Call, argument: str) -> list[Intent]:
    """``x.long()`` -> ``x.to(argument)``."""
    return [_intent(source, call, "replace_method_call", argument)]
