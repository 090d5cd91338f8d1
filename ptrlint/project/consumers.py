"""Consumers across modules: what other modules of the project do with a table (fix safety).

Asked by :mod:`ptrlint.analysis.consumers.search` through the project view, for the few tables that
leave their module: a function's parameter that receives a table (the callee's module is read),
the result of a function that returns one (the modules that import it are read; for a method,
every module that calls a method of that name), an attribute a table is stored in (every module
that reads an attribute of that name) and a module-level name (the modules that import it).
Modules are parsed here on demand, once per process, without their own project view (one level
deep: what they pass on to a third module is code ptrlint cannot see), and the answers carry
``Location`` nodes so the message can name ``file:line``.

An answer is a function of the files on disk alone: the modules it reads are found by listing
and reading the project's files, in sorted order, never from what the run happens to have
analysed already; each is analysed afresh for each question, so no answer depends on which
questions a process was asked before.
"""

from __future__ import annotations

import ast
import os
import pickle
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from ..analysis.boundary import ModuleContext
from ..analysis.consumers.search import Consumers
from ..analysis.consumers.uses import Path as TablePath
from ..analysis.consumers.uses import Trail, Use, UseKind
from ..analysis.options import AnalysisOptions
from ..analysis.semantic.collector import FactCollector
from ..analysis.semantic.device import parse_host
from ..analysis.semantic.factories import factory_signature
from ..analysis.semantic.records import FactorySignature, FunctionNode
from ..analysis.source import SourceMap
from ..analysis.values.facts import ModuleFacts
from ..analysis.values.lattice import Location
from ..config import DEFAULT_EXCLUDE
from ..discovery import display_path
from ..sources import read_bytes
from .imports import function_text, imported_bindings, imported_modules, top_level_defs
from .layout import module_name, project_files, project_root

_EXCLUDED = tuple(e for e in DEFAULT_EXCLUDE if "/" not in e)
MAX_READER_MODULES = 24  # modules read for one question; more readers than that are not followed
REACH_DEPTH = 3  # import steps from a module to the modules where its objects are looked for


_ALIAS = re.compile(r"^([A-Za-z_]\w*)[ \t]*=[ \t]*([A-Za-z_][\w.]*)[ \t]*$", re.MULTILINE)  # `_empty = torch.empty`


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
        self._module_names: dict[str, str] = {}  # real path -> module name, for the files of the import tables
        self._imports: dict[str, dict[str, set[str]]] = {}  # project root -> {path: imported modules}
        self._answers: dict[tuple[object, ...], list[Use] | None] = {}  # (question, qname, ...) -> uses, per process
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
        """The run is done: drop the answers."""
        self._answers.clear()

    def parameter(
        self,
        qname: str,
        locate: Callable[[str], tuple[Path, str] | None],
        position: int | None,
        keyword: str | None,
        options: AnalysisOptions,
        path: TablePath = (),
    ) -> list[Use] | None:
        """Uses of the parameter a call binds (by position or keyword) in the function ``qname``
        (``locate`` finds its file and the rest of the name, ``f`` or ``Cls.m``), following
        re-exports; ``path``: where the table sits in the argument."""
        key = ("parameter", qname, position, keyword, path, id(options))
        if key not in self._answers:
            self._answers[key] = self._parameter(qname, locate, position, keyword, options, path)
        return self._answers[key]

    def _function_file(
        self, qname: str, locate: Callable[[str], tuple[Path, str] | None], depth: int = 0
    ) -> tuple[str, str] | None:
        """The file that defines the function (``f`` or ``Cls.m``) ``qname`` names, and that name,
        following re-exports (read from the file's text: ``from .impl import f``)."""
        found = locate(qname)
        if found is None or depth > 4:
            return None
        file, rest = found
        head, _, method = rest.partition(".")
        text, defs, bindings = self._index_file(str(file))
        if head in defs or re.search(rf"^[ \t]*class[ \t]+{re.escape(head)}\b", text, re.MULTILINE):
            return str(file), rest
        target = bindings.get(head)
        if target is None:
            return str(file), rest  # the module defines it some other way: let the analysis look
        return self._function_file(".".join([target, *([method] if method else [])]), locate, depth + 1)

    def factory(
        self, qname: str, locate: Callable[[str], tuple[Path, str] | None], options: AnalysisOptions, depth: int = 0
    ) -> FactorySignature | None:
        """The factory signature of the module function ``qname`` names (analysis/semantic/factories.py).

        Asked for many calls of many modules, so it never analyses the callee's module: it finds
        the function's text (a top-level ``def`` that mentions ``dtype`` and returns), and
        analyses only that function with the module's imports (read without parsing)."""
        key = ("factory", qname, id(options))
        if key not in self._answers:
            self._answers[key] = self._factory(qname, locate, options, depth)  # type: ignore[assignment]
        return self._answers[key]  # type: ignore[return-value]

    def _factory(
        self, qname: str, locate: Callable[[str], tuple[Path, str] | None], options: AnalysisOptions, depth: int
    ) -> FactorySignature | None:
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
        return _factory_of(block, name, text, bindings, ModuleContext(module, is_package, None), options)

    def _index_file(self, path: str) -> tuple[str, dict[str, int], dict[str, str]]:
        """(text, offsets of its top-level ``def`` lines by name, what its imports bind), once per file."""
        if path not in self._texts:
            try:
                text = read_bytes(path).decode("utf-8", errors="replace")
            except OSError:
                text = ""
            module, is_package = module_name(path)
            self._texts[path] = (text, top_level_defs(text), imported_bindings(text, module, is_package))
        return self._texts[path]

    def _parameter(
        self,
        qname: str,
        locate: Callable[[str], tuple[Path, str] | None],
        position: int | None,
        keyword: str | None,
        options: AnalysisOptions,
        path: TablePath,
    ) -> list[Use] | None:
        found = self._function_file(qname, locate)
        if found is None:
            return None
        file, rest = found
        with _analysed(file, options) as module:
            function = _find_function(module, rest) if module is not None else None
            if module is None or function is None:
                return None
            param = _bound_parameter(module, function, position, keyword)
            if param is None:
                return None
            return _located(module, module.consumers.parameter_uses(function, param, Trail(path=path)))

    def results(self, qname: str, own_file: Path, options: AnalysisOptions, path: TablePath = ()) -> list[Use]:
        """Uses of what ``qname`` returns in the other modules of the project: calls of a function in
        the modules that import its module; of a method (``pkg.mod.Cls.m``), every ``x.m(...)`` where
        an instance of its class may be (:meth:`_reach`)."""
        own_module = module_name(str(own_file))[0]
        name = qname.rpartition(".")[2]
        method = qname.rpartition(".")[0] != own_module
        if method:
            among, names = self._reach(own_file, own_module)
            pattern = rf"\.\s*{re.escape(name)}\s*\("
        else:
            among, names, pattern = self._importers(own_file, own_module), {own_module}, rf"\b{re.escape(name)}\b"
        return self._answer(
            ("results", qname, path),
            own_file,
            options,
            among,
            names,
            pattern,
            f"call `{name}()`",
            lambda module: module.consumers.readers.result_uses(qname, path, method),
        )

    def attribute_reads(self, attr: str, own_file: Path, options: AnalysisOptions, path: TablePath = ()) -> list[Use]:
        """Uses of every ``x.attr`` read where an object of ``own_file``'s module may be (:meth:`_reach`)."""
        among, names = self._reach(own_file, module_name(str(own_file))[0])
        return self._answer(
            ("attributes", attr, path),
            own_file,
            options,
            among,
            names,
            rf"\.\s*{re.escape(attr)}\b",
            f"read `.{attr}`",
            lambda module: module.consumers.readers.attribute_uses(attr, path),
        )

    def name_reads(self, qname: str, own_file: Path, options: AnalysisOptions, path: TablePath = ()) -> list[Use]:
        """Uses of the module-level name ``qname`` in the modules that import its module."""
        own_module = module_name(str(own_file))[0]
        name = qname.rpartition(".")[2]
        return self._answer(
            ("names", qname, path),
            own_file,
            options,
            self._importers(own_file, own_module),
            {own_module},
            rf"\b{re.escape(name)}\b",
            f"use `{name}`",
            lambda module: module.consumers.readers.name_uses(qname, path),
        )

    def _answer(
        self,
        question: tuple[str, str, TablePath],
        own_file: Path,
        options: AnalysisOptions,
        among: list[str],
        names: set[str],
        pattern: str,
        what: str,
        ask: Callable[[_Module], list[Use]],
    ) -> list[Use]:
        """The uses ``ask`` finds in the files of ``among`` that spell ``pattern`` (once per process)."""
        key = (*question, str(own_file), id(options))
        if key not in self._answers:
            self._answers[key] = self._ask_modules(_spelling(pattern, among), what, options, names, ask)
        return self._answers[key] or []

    def _ask_modules(
        self,
        paths: list[str],
        what: str,
        options: AnalysisOptions,
        names: set[str],
        ask: Callable[[_Module], list[Use]],
    ) -> list[Use]:
        """``ask`` each module (in sorted order) that really imports one of ``names`` (its text said
        so, but an import in a string says so too); more than ``MAX_READER_MODULES`` are not followed."""
        if len(paths) > MAX_READER_MODULES:
            where = Location(display_path(paths[0]), 1, 1)
            return [
                Use(UseKind.ESCAPE, where, f"{len(paths)} modules of the project {what}: more than ptrlint follows")
            ]
        out: list[Use] = []
        for path in paths:
            with _analysed(path, options) as module:
                if module is not None and _imports_one_of(module, names):
                    out.extend(_located(module, ask(module)))
        return out

    def _reach(self, own_file: Path, module: str) -> tuple[list[str], set[str]]:
        """Where an object made in ``module`` may be read: the project files that import it, or
        import a module that does, to ``REACH_DEPTH`` steps (an instance travels from where its
        module is imported to the callers of those modules), in sorted order; and the names of
        the modules on the way."""
        table = self._import_table(own_file, module)
        reached: set[str] = set()
        names = {module}
        for _ in range(REACH_DEPTH):
            found = {path for path, imported in table.items() if not imported.isdisjoint(names)} - reached
            if not found:
                break
            reached |= found
            names |= {self._module_names[path] for path in found if path in self._module_names}
        own = os.path.realpath(own_file)
        return sorted(p for p in reached if p != own), names

    def _importers(self, own_file: Path, module: str) -> list[str]:
        """Project files whose import lines name ``module``."""
        own = os.path.realpath(own_file)
        return sorted(
            p for p, imported in self._import_table(own_file, module).items() if module in imported and p != own
        )

    def _import_table(self, own_file: Path, module: str) -> dict[str, set[str]]:
        """{real path: the modules it imports} of the project files around ``module`` (each read once per process)."""
        root = str(_package_root(own_file, module))
        if self._known_pickled is not None:
            self._known, self._known_pickled = pickle.loads(self._known_pickled), None
        table = self._imports.get(root)
        if table is None:
            table = self._imports[root] = {}
            for path in project_files(Path(root), _EXCLUDED):
                real = os.path.realpath(path)
                name, is_package = module_name(path)
                self._module_names[real] = name
                known = self._known.get(real)
                if known is not None:
                    if known:
                        table[real] = known
                    continue
                try:
                    text = read_bytes(path).decode("utf-8", errors="replace")
                except OSError:
                    continue
                if "import" not in text:
                    continue
                table[real] = imported_modules(text, name, is_package)
        return table


@contextmanager
def _analysed(path: str, options: AnalysisOptions) -> Iterator[_Module | None]:
    """One module read and analysed afresh for one question, and released after it (so that
    reference counting frees its tree and facts: ptrlint/gcpause.py)."""
    try:
        text: str | None = read_bytes(path).decode("utf-8", errors="replace")
    except OSError:
        text = None
    tree = _parse(text) if text is not None else None
    if tree is None:
        yield None
        return
    name, is_package = module_name(path)
    facts = ModuleFacts(FactCollector(options, ModuleContext(name, is_package, None)).run(tree))
    module = _Module(path, tree, facts, SourceMap(text or ""), Consumers(tree, facts, module_name=name, path=path))
    try:
        yield module
    finally:
        module.consumers.release()
        facts.release()


def _located(module: _Module, uses: list[Use]) -> list[Use]:
    out = []
    for use in uses:
        node = use.node
        if not isinstance(node, Location):
            line, column = module.source.line_column(module.source.start(node)) if hasattr(node, "lineno") else (0, 0)
            node = Location(display_path(module.path), line, column)
        out.append(replace(use, node=node))
    return out


def _factory_of(
    block: str, name: str, text: str, bindings: dict[str, str], context: ModuleContext, options: AnalysisOptions
) -> FactorySignature | None:
    """The factory signature of the function ``name`` whose text is ``block``, analysed alone with its
    module's imports (``bindings``) and module-level aliases of imported names (read from ``text``)."""
    if "dtype" not in block or "return" not in block:
        return None
    header = "".join(
        f"import {q} as {local}\n"
        if "." not in q
        else f"from {q.rpartition('.')[0]} import {q.rpartition('.')[2]} as {local}\n"
        for local, q in bindings.items()
    )
    aliases = "".join(m.group(0) + "\n" for m in _ALIAS.finditer(text) if m.group(2).partition(".")[0] in bindings)
    tree = _parse(header + aliases + block)  # `_empty = torch.empty` kept by a monkey patch: a creation
    if tree is None:
        return None
    model = FactCollector(options, context).run(tree)
    function = next((f for f in model.functions.values() if f.name == name), None)
    signature = factory_signature(model, function) if function is not None else None
    return signature[0] if signature is not None else None


def _bound_parameter(module: _Module, function: FunctionNode, position: int | None, keyword: str | None) -> str | None:
    """The parameter of ``function`` a call binds by ``position`` (past a method's ``self``) or ``keyword``."""
    args = function.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    if module.facts.model.method_kinds.get(id(function)) in ("instance", "class") and params:
        params = params[1:]
    if keyword is not None:
        return keyword if keyword in params or keyword in {a.arg for a in args.kwonlyargs} else None
    return params[position] if position is not None and position < len(params) else None


def _find_function(module: _Module, rest: str) -> FunctionNode | None:
    model = module.facts.model
    head, _, method = rest.partition(".")
    if method:
        for class_id, qualname in model.class_qualnames.items():
            if qualname == head:
                return model.class_methods.get(class_id, {}).get(method)
        return None
    return next((f for k, f in model.functions.items() if k.scope == id(model.module_scope) and k.name == head), None)


def _spelling(pattern: str, among: list[str]) -> list[str]:
    """The files of ``among`` (the question's own file left out already) whose text matches ``pattern``, sorted."""
    compiled = re.compile(pattern.encode())
    out = []
    for path in among:
        try:
            if compiled.search(read_bytes(path)) is None:
                continue
        except OSError:
            continue
        out.append(path)
    return sorted(out)


def _imports_one_of(module: _Module, names: set[str]) -> bool:
    """Whether an analysed module's import statements (in any scope) name one of ``names``."""
    for scope in module.facts.model.scopes.values():
        for qualified in scope.imports.values():
            if (
                qualified in names
                or qualified.rpartition(".")[0] in names
                or any(name.startswith(qualified + ".") for name in names)
            ):
                return True
    return False


def _package_root(own_file: Path, module: str) -> Path:
    """Where the importers of ``module`` live: the folder of its top package when the file lies
    under one named so (namespace packages included), else the file's project root."""
    top = module.partition(".")[0]
    for folder in Path(os.path.realpath(own_file)).parents:
        if folder.name == top:
            return folder
    return project_root(str(own_file))
