"""The parts of one module's consumer search and what they ask of the search as a whole.

Finding the uses of a table is one recursion: a use of the table may be an argument, a container, a
field or a returned value, whose own uses are found in turn. :class:`~.search.Consumers` drives
it; its parts classify a use (:mod:`.load_uses`, :mod:`.use_kinds`), follow held values (:mod:`.held`), follow readers
(:mod:`.readers`) and judge Python-int entry (:mod:`.int_entry`). Each part takes a
:class:`UseSearch`, the protocol declared here of what it may ask of the search, never the class
that implements it, so the parts depend on nothing above them.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .uses import Entry, Path, Trail, Use

if TYPE_CHECKING:
    from ..boundary import ProjectLookup
    from ..semantic.records import Creation, FunctionNode, Key
    from ..values.facts import ModuleFacts


class ArgumentUses(Protocol):
    """What a call does with an argument (:class:`~.use_kinds.UseClassifier`)."""

    def argument_use(
        self, call: ast.Call, expr: ast.AST, trail: Trail, visited: set[object], keyword: str | None = None
    ) -> list[Use]: ...

    def is_project(self, qname: str) -> bool: ...

    def external_callers(self, function: FunctionNode, path: Path = ()) -> list[Use] | None: ...


class HeldValues(Protocol):
    """Values and objects that hold a table (:class:`~.held.HeldUses`)."""

    def context(self, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]: ...

    def assigned(
        self, node: ast.Assign | ast.AnnAssign | ast.NamedExpr, trail: Trail, visited: set[object]
    ) -> list[Use]: ...

    def dict_value(self, node: ast.Dict, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]: ...

    def constructor(
        self,
        call: ast.Call,
        expr: ast.AST,
        class_id: int | str,
        keyword: str | None,
        trail: Trail,
        visited: set[object],
    ) -> list[Use]: ...


class IntEntries(Protocol):
    """Where Python ints enter a table (:class:`~.int_entry.PythonInts`)."""

    def python_int_entry(self, creation: Creation) -> Entry | None: ...


class ReturnReaders(Protocol):
    """The readers of a returned table (:class:`~.readers.Readers`)."""

    def returned(self, ret: ast.Return, trail: Trail, visited: set[object]) -> list[Use]: ...

    def private_searched(self, locations: Sequence[Key]) -> bool: ...


class UseSearch(Protocol):
    """The consumer search of one module, as its parts see it (:class:`~.search.Consumers`)."""

    @property
    def facts(self) -> ModuleFacts: ...

    @property
    def module(self) -> ast.Module: ...

    @property
    def view(self) -> ProjectLookup | None: ...

    @property
    def module_name(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def int64_consumers(self) -> tuple[str, ...]: ...

    @property
    def uint64_consumers(self) -> tuple[str, ...]: ...

    @property
    def attribute_loads(self) -> dict[str, list[ast.Attribute]]: ...

    @property
    def method_calls(self) -> dict[str, list[ast.Call]]: ...

    @property
    def callers(self) -> dict[int, list[ast.Call]]: ...

    @property
    def kinds(self) -> ArgumentUses: ...

    @property
    def held(self) -> HeldValues: ...

    @property
    def readers(self) -> ReturnReaders: ...

    @property
    def ints(self) -> IntEntries: ...

    @property
    def calls_by_name(self) -> dict[str, list[ast.Call]]: ...

    @property
    def name_loads(self) -> dict[str, list[ast.expr]]: ...

    @property
    def loads(self) -> dict[Key, list[ast.expr]]: ...

    def build_index(self) -> dict[int, ast.AST]: ...

    def parent(self, node: ast.AST) -> ast.AST | None: ...

    def roots(self, creation: Creation) -> list[Key]: ...

    def of_creation(self, creation: Creation) -> tuple[Use, ...]: ...

    def written(self, creation: Creation) -> list[Key]: ...

    def context(self, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]: ...

    def class_uses(
        self, roots: list[Key], trail: Trail, visited: set[object], anchor: ast.AST | None = None
    ) -> list[Use]: ...

    def carried(self, found: list[Use] | None, trail: Trail) -> list[Use]: ...

    def follow_target(self, target: ast.AST, trail: Trail, visited: set[object]) -> list[Use]: ...

    def like_uses(self, call: ast.Call, trail: Trail, visited: set[object]) -> list[Use]: ...

    def container_uses(self, container: ast.expr, trail: Trail, visited: set[object]) -> list[Use]: ...

    def call_parameter_uses(
        self, function: FunctionNode, call: ast.Call, expr: ast.AST, trail: Trail, visited: set[object]
    ) -> list[Use]: ...


class ConsumersPart:
    """A part of one module's consumer search: the same facts, view and configured consumers, and the
    search (``self.search``) for what the other parts answer."""

    def __init__(self, search: UseSearch) -> None:
        self.search = search
        self.facts, self.model, self.view, self.module = search.facts, search.facts.model, search.view, search.module
        self.module_name, self.path = search.module_name, search.path
        self.int64_consumers, self.uint64_consumers = search.int64_consumers, search.uint64_consumers
