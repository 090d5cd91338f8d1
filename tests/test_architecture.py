"""The package's shape (docs/architecture.md): imports go one way, modules, classes and functions stay
small (within 95% of their limits, or a ``# size:`` comment says why), the analysis reaches the project
only through the protocol it declares, one traversal builds the model, and rules never walk the tree.

Every import counts, a deferred one inside a function and one under ``if TYPE_CHECKING:`` too (an
annotation that names a module above is a dependency on it all the same). The graph is read from
the source with ast, so the test needs nothing installed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"ptrlint": REPO / "ptrlint", "ptrlint.runtime": REPO / "runtime"}
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 80
# Within 5% of a limit, a module, class or function says why it may be that long: a `# size: <reason>`
# comment on its `class`/`def` line (a module: in its first 5 lines). Otherwise it is split first.
SIZE_MARGIN = 0.95
_SIZE_NOTE = re.compile(r"#\s*size:\s*\S")


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
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(module: str, path: Path, known: set[str], type_checking: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
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
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # `from . import mod` needs the submodule; the package itself counts only for a name defined in it
            names = submodules + ([base] if any(name not in known for name in submodules) else [])
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


def _graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Who imports whom; ``type_checking``: imports for annotations only count too."""
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known, type_checking) for name, path in modules.items()}


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
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
        "def f():\n    from .c import g\n    return g\n"
    )
    (tmp_path / "a.py").write_text(source)
    assert _imports("p.a", tmp_path / "a.py", {"p", "p.a", "p.b", "p.c"}) == {"p.c"}


def test_no_import_circles():
    cycles = _cycles(_graph(type_checking=True))
    assert not cycles, "import circles (deferred and TYPE_CHECKING imports count): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


def _size_problems(name: str, text: str) -> list[str]:
    """What is too long in one module: over a limit, or within 5% of it without a ``# size:`` reason."""
    lines = text.splitlines()
    count = text.count("\n")
    problems = []
    if count > MAX_MODULE_LINES:
        problems.append(f"{name} has {count} lines (at most {MAX_MODULE_LINES})")
    elif count > MAX_MODULE_LINES * SIZE_MARGIN and not any(_SIZE_NOTE.search(line) for line in lines[:5]):
        problems.append(
            f"{name} has {count} lines, within 5% of {MAX_MODULE_LINES}: split it, or give the reason "
            "in a `# size: <reason>` comment in its first 5 lines"
        )
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef):
            what, limit = f"class {node.name}", MAX_CLASS_LINES
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            what, limit = f"{node.name}()", MAX_FUNCTION_LINES
        else:
            continue
        size = (node.end_lineno or 0) - node.lineno + 1
        if size > limit:
            problems.append(f"{what} in {name} has {size} lines (at most {limit})")
        elif size > limit * SIZE_MARGIN and not _SIZE_NOTE.search(lines[node.lineno - 1]):
            problems.append(
                f"{what} in {name} has {size} lines, within 5% of {limit}: split it, or give the reason "
                f"in a `# size: <reason>` comment on its line {node.lineno}"
            )
    return problems


def test_the_size_check_asks_a_reason_within_the_margin():
    body = "    x = 1\n" * 76  # a function of 77 lines: above 95% of 80
    assert _size_problems("m.py", "def f():\n" + body)
    assert not _size_problems("m.py", "def f():  # size: one table, read top to bottom\n" + body)
    assert _size_problems("m.py", "def f():  # size:\n" + body), "a note without a reason"
    assert _size_problems("m.py", "def f():  # size: long\n" + body + "    x = 1\n" * 4), "over the limit itself"
    assert not _size_problems("m.py", "def f():\n" + "    x = 1\n" * 75)
    module = "x = 1\n" * 476
    assert _size_problems("m.py", module)
    assert not _size_problems("m.py", '"""A table."""\n# size: generated, one entry a line\n' + module)


@pytest.mark.parametrize("module", sorted(_modules()))
def test_module_and_classes_are_small(module):
    """At most 500 lines a module, 300 a class and 80 a function; past 95% of that, a ``# size:`` reason."""
    path = _modules()[module]
    problems = _size_problems(str(path.relative_to(REPO)), path.read_text(encoding="utf-8"))
    assert not problems, "; ".join(problems)


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


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    reach: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in reach:
                reach.add(target)
                todo.append(target)
    return reach


def test_the_analysis_imports_nothing_above_it():
    """analysis/ sees the project only through analysis/boundary.py's protocol, which project/ implements."""
    graph = _graph(type_checking=True)
    above = (
        "ptrlint.project",
        "ptrlint.planner",
        "ptrlint.engine",
        "ptrlint.cache",
        "ptrlint.rules",
        "ptrlint.rewrite",
        "ptrlint.cli",
        "ptrlint.lsp",
    )
    for module in sorted(m for m in graph if m.startswith("ptrlint.analysis")):
        forbidden = sorted(t for t in _reach(graph, module) if t.startswith(above))
        assert not forbidden, f"{module} reaches {forbidden}"


def _members(cls: type) -> set[str]:
    """What a class defines: its methods and properties, and the attributes its methods assign on self."""
    import inspect

    names = {name for name in dir(cls) if not name.startswith("__")}
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))  # type: ignore[arg-type]
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    for target in ast.walk(node):
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.ctx, ast.Store)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            names.add(target.attr)
    return names


def _protocol_members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")} | set(getattr(protocol, "__annotations__", {}))


@pytest.mark.parametrize(
    "implementation, protocol",
    [
        ("ptrlint.project.view:ProjectView", "ptrlint.analysis.boundary:ProjectLookup"),
        ("ptrlint.analysis.consumers.search:Consumers", "ptrlint.analysis.consumers.consumer_parts:UseSearch"),
        (
            "ptrlint.analysis.consumers.use_kinds:UseClassifier",
            "ptrlint.analysis.consumers.consumer_parts:ArgumentUses",
        ),
        ("ptrlint.analysis.consumers.held:HeldUses", "ptrlint.analysis.consumers.consumer_parts:HeldValues"),
        ("ptrlint.analysis.consumers.readers:Readers", "ptrlint.analysis.consumers.consumer_parts:ReturnReaders"),
        ("ptrlint.analysis.semantic.model:SemanticModel", "ptrlint.analysis.semantic.types:TypedTables"),
    ],
)
def test_each_protocol_is_implemented(implementation, protocol):
    """The protocols a lower module declares are met by the class above that is handed in (mypy checks
    the types; this checks the names, without mypy)."""
    import importlib
    import inspect

    def load(spec: str) -> type:
        module, _, name = spec.partition(":")
        return getattr(importlib.import_module(module), name)

    cls, proto = load(implementation), load(protocol)
    missing = _protocol_members(proto) - _members(cls)
    assert not missing, f"{implementation} lacks {sorted(missing)} of {protocol}"
    for name, member in vars(proto).items():
        if inspect.isfunction(member) and not name.startswith("_"):
            wanted = list(inspect.signature(member).parameters)
            got = list(inspect.signature(getattr(cls, name)).parameters)
            if got[:1] != ["self"]:
                got = ["self", *got]  # a staticmethod
            assert got == wanted, f"{implementation}.{name}{got} differs from {protocol}.{name}{wanted}"


def test_one_traversal_and_no_tree_walk_in_rules():
    """The fact collector's traversal is the only walk of a module's tree in analysis/ and rules/ but
    one: the consumer search, asked only when a finding needs its fix chosen, indexes parents, loads
    and calls in one more walk (``Consumers.build_index``, once per module). Rules and queries may
    look inside an expression or a function a fact hands them; nothing else walks the module."""
    allowed = {
        ("ptrlint.analysis.semantic.collector", "FactCollector._walk"),
        ("ptrlint.analysis.consumers.search", "Consumers.build_index"),
    }
    found = set()
    for module, path in _modules().items():
        if not module.startswith(("ptrlint.analysis", "ptrlint.rules")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in [None, *[n for n in tree.body if isinstance(n, ast.ClassDef)]]:
            body = tree.body if cls is None else cls.body
            for func in [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
                calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)]
                if any(
                    isinstance(c.func, ast.Attribute)
                    and c.func.attr in ("walk", "iter_child_nodes", "generic_visit")
                    and isinstance(c.func.value, ast.Name)
                    and c.func.value.id == "ast"
                    and c.args
                    and not _walks_a_part(c.args[0])
                    for c in calls
                ):
                    found.add((module, f"{cls.name}.{func.name}" if cls else func.name))
    assert found <= allowed, f"walks of the whole tree outside the one traversal: {sorted(found - allowed)}"


def _walks_a_part(arg: ast.expr) -> bool:
    """``ast.walk(node.body[i])``, ``ast.walk(function)``: a walk of a part (a function, an expression) is
    a query of that part; only a walk of the module (``module``, ``self.module``, ``ctx.module``) is a
    second traversal."""
    name = arg.attr if isinstance(arg, ast.Attribute) else arg.id if isinstance(arg, ast.Name) else None
    return name not in ("module", "tree")


def test_the_analysis_layers_import_downward():
    """analysis/semantic (the traversal and the model) < analysis/values (what values are addresses)
    < analysis/consumers (where they go): no layer imports one above it, annotations included.
    boundary.py and options.py sit beside them: any layer may use them."""
    order = ["ptrlint.analysis.semantic", "ptrlint.analysis.values", "ptrlint.analysis.consumers"]
    graph = _graph(type_checking=True)
    for module, targets in graph.items():
        layer = next((i for i, p in enumerate(order) if module.startswith(p + ".")), None)
        if layer is None:
            continue
        above = [t for t in targets if any(t.startswith(p + ".") or t == p for p in order[layer + 1 :])]
        assert not above, f"{module} imports {sorted(above)}, a layer above it"


def test_module_names_are_unique():
    """No two modules share a file name across folders (one `model.py`, one `consumers.py`)."""
    seen: dict[str, str] = {}
    for module, path in _modules().items():
        if path.name in ("__init__.py", "__main__.py"):
            continue
        assert path.name not in seen, f"{module} and {seen[path.name]} share the name {path.name}"
        seen[path.name] = module


def test_the_architecture_page_names_every_module():
    """docs/architecture.md's module index lists exactly the modules of ptrlint/ and runtime/."""
    import re

    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    index = page.partition("\n## Every module\n")[2]
    listed = set(re.findall(r"^\| `((?:ptrlint|runtime)/[^`]+\.py)` \|", index, re.M))
    on_disk = {
        path.relative_to(REPO).as_posix() for root in ("ptrlint", "runtime") for path in (REPO / root).rglob("*.py")
    }
    assert listed == on_disk, (
        f"missing from the page: {sorted(on_disk - listed)}; gone from the code: {sorted(listed - on_disk)}"
    )
