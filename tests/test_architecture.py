"""The package's shape: imports go one way, modules and classes stay small (issue 22).

Every import counts, a deferred one inside a function too; only imports under
``if TYPE_CHECKING:`` (annotations, never executed) are left out. The graph is read from the
source with ast, so the test needs nothing installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"ptrlint": REPO / "ptrlint", "ptrlint.runtime": REPO / "runtime"}
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            elif base == "runtime" or base.startswith("runtime."):
                base = "ptrlint." + base
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            names = []
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_the_checker_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_deferred_and_type_checking_imports_are_told_apart(tmp_path):
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
              "def f():\n    from .c import g\n    return g\n")
    (tmp_path / "a.py").write_text(source)
    assert _imports("p.a", tmp_path / "a.py", {"p", "p.a", "p.b", "p.c"}) == {"p.c"}


def test_no_import_circles():
    cycles = _cycles(_graph())
    assert not cycles, "import circles (a deferred import counts): " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("module", sorted(_modules()))
def test_module_and_classes_are_small(module):
    path = _modules()[module]
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)} has {lines} lines (at most {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            assert size <= MAX_CLASS_LINES, f"class {node.name} in {path.relative_to(REPO)} has {size} lines"


def test_the_engine_knows_no_project_planner_or_cache():
    """The per-file pipeline sits under the planner: it never reaches up to it, to the project
    index or to the cache (those are the planner's)."""
    graph = _graph()
    reach: set[str] = set()
    todo = ["ptrlint.engine"]
    while todo:
        current = todo.pop()
        for target in graph.get(current, ()):
            if target not in reach:
                reach.add(target)
                todo.append(target)
    forbidden = {m for m in reach if m.startswith(("ptrlint.planner", "ptrlint.cache", "ptrlint.cli", "ptrlint.lsp"))}
    assert not forbidden, f"ptrlint.engine reaches {sorted(forbidden)}"
