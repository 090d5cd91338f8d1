"""The runtime's public names are listed once (``_EXPORTS`` in ``runtime/__init__.py``, which
``__all__`` is sorted from); the imports that give type checkers their types must say the same, and
every name must load from the module it is listed under."""

from __future__ import annotations

import ast

import ptrlint.runtime as runtime
import pytest

from ..conftest import REPO


def _typing_imports() -> dict[str, str]:
    tree = ast.parse((REPO / "runtime" / "__init__.py").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom) and item.level == 1 and item.module:
                    out.update({alias.name: item.module for alias in item.names})
    return out


def test_the_typing_imports_say_what_the_export_list_says():
    assert _typing_imports() == runtime._EXPORTS
    assert runtime.__all__ == sorted(runtime._EXPORTS)


@pytest.mark.parametrize("name", sorted(runtime._EXPORTS))
def test_every_export_loads_from_its_module(name):
    import importlib

    module = importlib.import_module(f"ptrlint.runtime.{runtime._EXPORTS[name]}")
    assert getattr(runtime, name) is getattr(module, name)
