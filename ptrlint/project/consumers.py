"""Consumers across modules: what other modules of the project do with a table (fix safety).

Asked by :mod:`ptrlint.analysis.consumers` through the project view, for the few tables that
leave their module: a function's parameter that receives a table (the callee's module is read),
and the result of a function that returns one (the modules that import it are read). Modules are
parsed here on demand, once per process, without their own project view (one level deep), and
the answers carry ``Location`` nodes so the message can name ``file:line``.
"""

from __future__ import annotations

import ast
import os
import pickle
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..analysis.consumers import Consumers
from ..analysis.uses import Use
from ..analysis.device import parse_host
from ..analysis.facts import FactCollector
from ..analysis.factories import FactorySignature, factory_signature
from ..analysis.records import FunctionNode
from ..analysis.records import ModuleContext
from ..analysis.names import AnalysisOptions
from ..analysis.source import SourceMap
from ..analysis.lattice import Location
from ..analysis.values import ModuleFacts
from ..config import DEFAULT_EXCLUDE
from ..files import display_path
from .imports import function_text, imported_bindings, imported_modules, top_level_defs
from .layout import module_name, project_files, project_root

_EXCLUDED = tuple(e for e in DEFAULT_EXCLUDE if "/" not in e)


@dataclass
class _Module:
    path: str
    tree: ast.Module
    facts: ModuleFacts
    source: SourceMap
    consumers: Consumers


def _parse(text: str) -> ast.Module | None:
    def parse(source: str) -> ast.Module:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)

    try:
        return parse_host(text, parse)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class ProjectConsumers:
    """Parsed modules of one project, and the imports of every project file (read once)."""

    def __init__(self) -> None:
        self._modules: dict[tuple[str, int], _Module | None] = {}
        self._imports: dict[str, dict[str, set[str]]] = {}  # project root -> {path: imported modules}
        self._answers: dict[tuple, list[Use] | None] = {}  # (question, qname, ...) -> uses, once per process
        self._texts: dict[str, tuple[str, dict[str, int], dict[str, str]]] = {}  # files read for factory lookups
        self._known: dict[str, set[str]] = {}  # real path -> imported modules, as the planner read them
        self._known_pickled: bytes | None = None  # _known, as shipped: unpickled when first asked

    def __getstate__(self) -> dict[str, object]:
        """What a worker process gets: the import tables (a dict per project), never the parsed
        modules or the answers built on them (each process parses what it asks about)."""
        return {"_imports": self._imports, "_known": self._known, "_known_pickled": self._known_pickled}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]
        self._imports = state["_imports"]  # type: ignore[assignment]
        self._known = state["_known"]  # type: ignore[assignment]
        self._known_pickled = state.get("_known_pickled")  # type: ignore[assignment]

    def shipped(self) -> ProjectConsumers:
        """A copy for a worker started before the run's imports were read: the planner's import
        table pickled apart, unpickled only if the worker asks for a module's importers (few do)."""
        copy = ProjectConsumers()
        copy._imports = self._imports
        copy._known_pickled = pickle.dumps(self._known, protocol=pickle.HIGHEST_PROTOCOL)
        return copy

    def known_imports(self, real: str, modules: set[str]) -> None:
        """What a project file imports, read by the planner from the file on disk (its
        classification): the import table takes it instead of reading the file again."""
        self._known[real] = modules

    def close(self) -> None:
        """The run is done: drop the parsed modules and the answers built on them, releasing each
        module's facts so that reference counting frees them (ptrlint/gcpause.py)."""
        for module in self._modules.values():
            if module is not None:
                module.consumers.release()
                module.facts.release()
        self._modules.clear()
        self._answers.clear()

    def _load(self, path: str, options: AnalysisOptions) -> _Module | None:
        key = (os.path.realpath(path), id(options))
        if key in self._modules:
            return self._modules[key]
        found: _Module | None = None
        try:
            text = Path(path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            text = None
        tree = _parse(text) if text is not None else None
        if tree is not None:
            name, is_package = module_name(path)
            facts = ModuleFacts(FactCollector(options, ModuleContext(name, is_package, None)).run(tree))
            found = _Module(path, tree, facts, SourceMap(text or ""), Consumers(tree, facts, module_name=name, path=path))
        self._modules[key] = found
        return found

    def _located(self, module: _Module, uses: list[Use]) -> list[Use]:
        out = []
        for use in uses:
            node = use.node
            if not isinstance(node, Location):
                line, column = module.source.line_column(module.source.start(node)) if hasattr(node, "lineno") else (0, 0)
                node = Location(display_path(module.path), line, column)
            out.append(replace(use, node=node))
        return out

    def parameter(self, qname: str, locate: Callable[[str], tuple[Path, str] | None], position: int | None,
                  keyword: str | None, options: AnalysisOptions, depth: int = 0) -> list[Use] | None:
        """Uses of the parameter a call binds (by position or keyword) in the function ``qname``
        (``locate`` finds its file and the rest of the name, ``f`` or ``Cls.m``), following re-exports."""
        key = ("parameter", qname, position, keyword, id(options))
        if key not in self._answers:
            self._answers[key] = self._parameter(qname, locate, position, keyword, options, depth)
        return self._answers[key]

    def _function(self, qname: str, locate: Callable[[str], tuple[Path, str] | None], options: AnalysisOptions,
                  depth: int = 0) -> tuple[_Module, FunctionNode] | None:
        """The module and the function (``f`` or ``Cls.m``) that ``qname`` names, following re-exports."""
        found = locate(qname)
        if found is None or depth > 4:
            return None
        file, rest = found
        module = self._load(str(file), options)
        if module is None:
            return None
        c = module.facts.c
        function = None
        head, _, method = rest.partition(".")
        if method:
            for class_id, qualname in c.class_qualnames.items():
                if qualname == head:
                    function = c.class_methods.get(class_id, {}).get(method)
        else:
            function = next((f for k, f in c.functions.items() if k[1] == id(c.module_scope) and k[2] == head), None)
        if function is None:
            target = c.module_scope.imports.get(head)  # `from .impl import f` re-exported here
            if target is None:
                return None
            return self._function(".".join([target, *([method] if method else [])]), locate, options, depth + 1)
        return module, function

    def factory(self, qname: str, locate: Callable[[str], tuple[Path, str] | None],
                options: AnalysisOptions, depth: int = 0) -> FactorySignature | None:
        """The factory signature of the module function ``qname`` names (analysis/factories.py).

        Asked for many calls of many modules, so it never analyses the callee's module: it finds
        the function's text (a top-level ``def`` that mentions ``dtype`` and returns), and
        analyses only that function with the module's imports (read without parsing)."""
        key = ("factory", qname, id(options))
        if key not in self._answers:
            self._answers[key] = self._factory(qname, locate, options, depth)  # type: ignore[assignment]
        return self._answers[key]  # type: ignore[return-value]

    def _factory(self, qname: str, locate: Callable[[str], tuple[Path, str] | None], options: AnalysisOptions,
                 depth: int) -> FactorySignature | None:
        found = locate(qname)
        if found is None or depth > 4 or "." in found[1]:
            return None
        file, name = found
        text, defs, bindings = self._index_file(str(file))
        module, is_package = module_name(str(file))
        block = function_text(text, defs[name]) if name in defs else None
        if block is None:
            target = bindings.get(name)  # `from .impl import f` re-exported here
            return self.factory(target, locate, options, depth + 1) if target else None
        if "dtype" not in block or "return" not in block:
            return None
        header = "".join(f"import {q} as {local}\n" if "." not in q else
                         f"from {q.rpartition('.')[0]} import {q.rpartition('.')[2]} as {local}\n"
                         for local, q in bindings.items())
        tree = _parse(header + block)
        if tree is None:
            return None
        model = FactCollector(options, ModuleContext(module, is_package, None)).run(tree)
        function = next((f for f in model.functions.values() if f.name == name), None)
        signature = factory_signature(model, function) if function is not None else None
        return signature[0] if signature is not None else None

    def _index_file(self, path: str) -> tuple[str, dict[str, int], dict[str, str]]:
        """(text, offsets of its top-level ``def`` lines by name, what its imports bind), once per file."""
        if path not in self._texts:
            try:
                text = Path(path).read_bytes().decode("utf-8", errors="replace")
            except OSError:
                text = ""
            module, is_package = module_name(path)
            self._texts[path] = (text, top_level_defs(text), imported_bindings(text, module, is_package))
        return self._texts[path]

    def _parameter(self, qname: str, locate: Callable[[str], tuple[Path, str] | None], position: int | None,
                   keyword: str | None, options: AnalysisOptions, depth: int) -> list[Use] | None:
        found = self._function(qname, locate, options, depth)
        if found is None:
            return None
        module, function = found
        c = module.facts.c
        args = function.args
        params = [a.arg for a in (*args.posonlyargs, *args.args)]
        if c.method_kinds.get(id(function)) in ("instance", "class") and params:
            params = params[1:]
        if keyword is not None:
            param = keyword if keyword in params or keyword in {a.arg for a in args.kwonlyargs} else None
        else:
            param = params[position] if position is not None and position < len(params) else None
        if param is None:
            return None
        return self._located(module, module.consumers.parameter_uses(function, param))

    def results(self, qname: str, own_file: Path, options: AnalysisOptions) -> list[Use]:
        """Uses of what ``qname`` returns, in the project modules that import its module."""
        key = ("results", qname, str(own_file), id(options))
        if key in self._answers:
            return self._answers[key] or []
        target_module = qname.rpartition(".")[0]
        while target_module and module_name(str(own_file))[0] != target_module:
            target_module = target_module.rpartition(".")[0]  # `pkg.mod.Cls.method` -> `pkg.mod`
        name = qname.rpartition(".")[2]
        out: list[Use] = []
        for path in self._importers(own_file, target_module or qname.rpartition(".")[0]):
            try:
                with open(path, "rb") as handle:
                    if name.encode() not in handle.read():
                        continue  # never spells the function's name: no call to parse for
            except OSError:
                continue
            module = self._load(path, options)
            if module is not None:
                out.extend(self._located(module, module.consumers.result_uses(qname)))
        self._answers[key] = out
        return out

    def _importers(self, own_file: Path, module: str) -> list[str]:
        """Project files whose import lines name ``module`` (each file read once per process)."""
        root = str(_package_root(own_file, module))
        if self._known_pickled is not None:
            self._known, self._known_pickled = pickle.loads(self._known_pickled), None
        table = self._imports.get(root)
        if table is None:
            table = self._imports[root] = {}
            for path in project_files(Path(root), _EXCLUDED):
                real = os.path.realpath(path)
                known = self._known.get(real)
                if known is not None:
                    if known:
                        table[real] = known
                    continue
                try:
                    with open(path, "rb") as handle:
                        text = handle.read().decode("utf-8", errors="replace")
                except OSError:
                    continue
                if "import" not in text:
                    continue
                name, is_package = module_name(path)
                table[real] = imported_modules(text, name, is_package)
        own = os.path.realpath(own_file)
        return [p for p, imported in table.items() if module in imported and p != own]


def _package_root(own_file: Path, module: str) -> Path:
    """Where the importers of ``module`` live: the folder of its top package when the file lies
    under one named so (namespace packages included), else the file's project root."""
    top = module.partition(".")[0]
    for folder in Path(os.path.realpath(own_file)).parents:
        if folder.name == top:
            return folder
    return project_root(str(own_file))


