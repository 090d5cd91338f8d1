"""Consumers of pointer tables: where a buffer goes decides which fix keeps the program working.

This module owns fix safety by consumers (DESIGN.md "Fix safety (phase 3)"). It follows a
buffer from its creation to every use: through its aliases (the alias classes of ``facts.py``),
copies that keep its dtype (slices, gathers, ``.to()``, ``cat``, ``*_like``), results of
arithmetic on it, the parameters of functions it is passed to, the callers of functions that
return it, the containers and objects that hold it (a tuple returned and unpacked, a dataclass
field, an attribute: :mod:`.held` follows a value that holds the table, with the
:class:`~.uses.Trail`'s path from the value to the table) and, through the project index, the
functions, callers and readers in other modules. Each use is classified (:class:`~.uses.UseKind`,
by :mod:`.load_uses` and :mod:`.use_kinds`); :func:`~.uses.choose_fix` turns the uses into one of three answers: the
plain uint64 dtype, the bit-preserving fix (create unsigned, hand on the original signed dtype's
bits), or no safe fix.

A use ptrlint does not follow to its end (returned where nothing in the project calls, stored
where nothing in the project reads it, passed to code it cannot see) is never taken for
uint64-ready: plain uint64 is chosen only when every use was seen.

Attributes are read by name: every ``x.attr`` the project spells is a reader of a table stored
in an attribute ``attr`` (unless ``x`` is known to be an instance of another class), since any
object may be passed anywhere. That reads more than the table's own readers, never fewer.

It also answers the other half of the phase-3 rule, "only Python ints overflow": whether any
Python int ever enters a signed table (:meth:`.int_entry.PythonInts.python_int_entry`), and whether its
values come back out as Python values or escape to readers ptrlint cannot see.

The uses are found from the module's tree with one extra walk (parents and loads), made only
for modules where a rule asks: modules with pointer-table findings are few.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import replace
from typing import cast

from ..boundary import ProjectLookup
from ..semantic.records import Creation, FunctionNode, Key, MemberKey, NameKey, ObjectAttributeKey
from ..semantic.syntax import CHILD_FIELDS, attr_name
from ..values.facts import ModuleFacts
from .harm import HarmModel
from .held import HeldUses
from .int_entry import PythonInts
from .load_uses import LoadUses
from .readers import Readers
from .use_kinds import UseClassifier
from .uses import Trail, Use, UseKind

_Memo = dict["Key | tuple[str, int]", "tuple[Use, ...] | tuple[Key, ...]"]


class Consumers:
    """The uses of one module's buffers, with cross-module answers from the project view.

    It finds the uses (following aliases, copies, parameters, returns and containers);
    ``self.load_uses`` classifies what the code around a load does with it and ``self.kinds`` what a
    call does with an argument, ``self.held`` follows values that hold a table,
    ``self.readers`` finds the readers of attributes and names (and answers other modules'
    questions), and ``self.ints`` answers where Python ints enter.
    """

    def __init__(
        self,
        module: ast.Module,
        facts: ModuleFacts,
        int64_consumers: tuple[str, ...] = (),
        uint64_consumers: tuple[str, ...] = (),
        view: ProjectLookup | None = None,
        module_name: str = "",
        path: str = "",
    ) -> None:
        self.module = module
        self.facts = facts
        self.model = facts.model
        self.view = view
        self.module_name = module_name
        self.path = path
        self.int64_consumers = int64_consumers
        self.uint64_consumers = uint64_consumers
        self.parents: dict[int, ast.AST] | None = None
        self.loads: dict[Key, list[ast.expr]] = {}
        self.attribute_loads: dict[str, list[ast.Attribute]] = {}  # every `x.attr` read, by attr
        self.method_calls: dict[str, list[ast.Call]] = {}  # every `x.name(...)`, by name
        self.calls_by_name: dict[str, list[ast.Call]] = {}  # every `name(...)` and `x.name(...)`, by name
        self.name_loads: dict[str, list[ast.expr]] = {}  # every `name` and `x.name` read, by name
        self.callers: dict[int, list[ast.Call]] = {}
        self.memo: _Memo = {}  # a creation's uses; ("w", call id): its writes
        self.kinds, self.ints, self.held, self.readers = (
            UseClassifier(self),
            PythonInts(self),
            HeldUses(self),
            Readers(self),
        )
        self.harm = HarmModel(self)
        self.load_uses = LoadUses(self)

    def release(self) -> None:
        """Drop the parts, which point back at this object (see ``ModuleFacts.release``)."""
        del self.kinds, self.ints, self.held, self.readers, self.harm, self.load_uses

    def build_index(self) -> dict[int, ast.AST]:
        if self.parents is not None:
            return self.parents
        model = self.model
        parents: dict[int, ast.AST] = {}
        functions = {id(f): f for f in model.functions.values()}
        functions.update({id(m): m for methods in model.class_methods.values() for m in methods.values()})
        names = {f.name for f in functions.values()}
        for node in _breadth_first(self.module, parents):
            cls = node.__class__
            if (cls is ast.Name or cls is ast.Attribute) and isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                self.name_loads.setdefault(attr_name(node), []).append(node)  # type: ignore[arg-type]
                key = model.key_of(node)
                if key is not None:
                    self.loads.setdefault(self.facts.root(key), []).append(node)  # type: ignore[arg-type]
                if cls is ast.Attribute:
                    self.attribute_loads.setdefault(node.attr, []).append(node)  # type: ignore[attr-defined,arg-type]
            elif cls is ast.Call:
                func = node.func  # type: ignore[attr-defined]
                if isinstance(func, (ast.Name, ast.Attribute)):
                    self.calls_by_name.setdefault(attr_name(func), []).append(node)  # type: ignore[arg-type]
                if isinstance(func, ast.Attribute):
                    self.method_calls.setdefault(func.attr, []).append(node)  # type: ignore[arg-type]
                if attr_name(func) in names:
                    target = model.types.function_called(func)
                    if target is not None:
                        self.callers.setdefault(id(target), []).append(node)  # type: ignore[arg-type]
        self.parents = parents
        return parents

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.build_index().get(id(node))

    def roots(self, creation: Creation) -> list[Key]:
        """The alias classes the creation's buffer lives in: its own, then the names and attributes
        it was stored in, in the order the module stores it (a list: keys hold ids, and the order
        of a set of them changes from run to run, so would the order of the uses)."""
        facts = self.facts
        out: list[Key] = []
        for key in (creation.key, *facts.locations.get(creation.key, [])):
            root = facts.root(key)
            if root not in out:
                out.append(root)
        return out

    def written(self, creation: Creation) -> list[Key]:
        """The alias classes whose writes reach the creation's buffer: its roots, and every location
        that may be the same attribute (:meth:`.readers.Readers.same_attribute`)."""
        memo = cast("tuple[Key, ...] | None", self.memo.get(("w", id(creation.call))))
        if memo is None:
            memo = self.memo[("w", id(creation.call))] = tuple(self.readers.same_attribute(self.roots(creation)))
        return list(memo)

    def of_creation(self, creation: Creation) -> tuple[Use, ...]:
        memo = cast("tuple[Use, ...] | None", self.memo.get(creation.key))
        if memo is not None:
            return memo
        self.build_index()
        visited: set[object] = set()
        trail = Trail(numpy=creation.library == "numpy")
        uses = list(self.class_uses(self.roots(creation), trail, visited, creation.call))
        parent = self.parent(creation.call)
        if not self.binds_alias(creation.call, parent):
            uses.extend(self.context(creation.call, trail, visited))
        result = tuple(uses)
        self.memo[creation.key] = result
        return result

    def of_expression(self, expr: ast.AST, numpy: bool = False) -> list[Use]:
        """The uses of the value an expression computes (the result of PTR007's arithmetic)."""
        self.build_index()
        return self.context(expr, Trail(numpy=numpy), set())

    def binds_alias(self, expr: ast.AST, parent: ast.AST | None) -> bool:
        """``x = expr`` / ``self.x: T = expr``: the target is in the creation's alias class."""
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is expr:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return all(isinstance(t, (ast.Name, ast.Attribute)) for t in targets)
        return False

    # ----- the loads of a storage location ------------------------------------------------------------
    def class_uses(
        self, roots: list[Key], trail: Trail, visited: set[object], anchor: ast.AST | None = None
    ) -> list[Use]:
        """Uses of the values stored in ``roots``: their loads here, and for an attribute or a
        module-level name, its readers anywhere in the project. A location nothing reads is an escape:
        its readers are out of sight."""
        members = [m for root in roots for m in self.facts.groups.get(root, [root])]
        shared = [
            m
            for m in dict.fromkeys(members)  # an alias class may hold an attribute or module-level name
            if (isinstance(m, (MemberKey, ObjectAttributeKey)) and not m.attr.startswith("["))
            or (isinstance(m, NameKey) and m.scope == id(self.model.module_scope))
        ]
        tokens = {("shared", m.attr if not isinstance(m, NameKey) else m, trail.path) for m in shared}
        fresh = bool(tokens - visited)  # a location an enclosing follow met already is checked there
        visited.update(tokens)  # before following: what the loads lead back to is this location
        out: list[Use] = []
        for root in roots:
            for node in self.loads.get(root, []):
                if anchor is not None and reads_an_earlier_value(node, anchor, self.build_index()):
                    continue
                if id(node) not in visited:
                    visited.add(id(node))
                    out.extend(self.context(node, trail, visited))
        for member in shared:
            if isinstance(member, NameKey):
                out.extend(self.readers.name_readers(member.name, trail, visited))
            else:
                out.extend(self.readers.attribute_readers(member, trail, visited))
        if fresh and not self.read_here(out) and not trail.in_field:
            out.append(
                Use(
                    UseKind.ESCAPE,
                    self.anchor(roots) or anchor or self.module.body[0],
                    "stored where nothing in the project reads its values",
                    trail.after,
                    private=self.readers.private_searched(shared),
                )
            )
        return out

    @staticmethod
    def carried(found: list[Use] | None, trail: Trail) -> list[Use]:
        """Uses found in another module, seen from here (a table computed from ours stays one)."""
        return [replace(u, after_arithmetic=trail.after or u.after_arithmetic) for u in found or ()]

    @staticmethod
    def read_here(uses: list[Use]) -> bool:
        """Whether some use reads the table's values. Writes do not; neither does the one call into
        compiled code that fills a table no Python int enters (81: the filler, then the reader)."""
        readers = [u for u in uses if not u.write and not u.metadata]
        opaque = [u for u in readers if u.opaque]
        filled = any(u.write for u in uses)  # filled here: the one call into compiled code reads it
        return len(readers) > 1 or (len(readers) == 1 and (not opaque or filled))

    def anchor(self, roots: list[Key]) -> ast.AST | None:
        """Where the values were stored: the first binding of the locations, in source order."""
        nodes = [
            binding.node
            for root in roots
            for member in self.facts.groups.get(root, [root])
            for binding in self.model.bindings.get(member, [])
        ]
        return min(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)), default=None)

    def follow_target(self, target: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        """Uses of a name or attribute a value was assigned to."""
        key = self.model.key_of(target)
        if key is None:
            return [Use(UseKind.ESCAPE, target, "stored where ptrlint cannot follow it", trail.after)]
        root = self.facts.root(key)
        token = ("root", root, trail.after, trail.path)
        if token in visited:
            return []
        visited.add(token)
        return self.class_uses([root], trail.step(), visited)

    # ----- what the code around one load of the table does with it ---------------------------------
    def context(self, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        return self.load_uses.context(expr, trail, visited)

    def like_uses(self, call: ast.Call, trail: Trail, visited: set[object]) -> list[Use]:
        """``torch.empty_like(table)``: a new buffer with the table's dtype; its own uses count too."""
        creation = self.model.creation_by_id.get(id(call))
        if creation is None or ("like", id(call)) in visited:
            return [Use(UseKind.READY, call, "`*_like` copy")]
        visited.add(("like", id(call)))
        uses = self.class_uses(self.roots(creation), trail.step(), visited)
        if not self.binds_alias(call, self.parent(call)):
            uses.extend(self.context(call, trail.step(), visited))
        return uses

    def container_uses(self, container: ast.expr, trail: Trail, visited: set[object]) -> list[Use]:
        """``gathered.append(table)``: the list holds the table among its items."""
        key = self.model.key_of(container)
        if key is None:
            return [Use(UseKind.ESCAPE, container, "put in a container ptrlint cannot follow", trail.after)]
        root = self.facts.root(key)
        inner = trail.into(("item", None))
        token = ("container", root, inner.path)
        if token in visited:
            return []
        visited.add(token)
        return self.class_uses([root], inner, visited)

    def call_parameter_uses(
        self, function: FunctionNode, call: ast.Call, expr: ast.AST, trail: Trail, visited: set[object]
    ) -> list[Use]:
        param = None
        for name, arg in self.facts.flow.results.bind_arguments(function, call):
            if arg is expr:
                param = name
                break
        if param is None:
            return [
                Use(UseKind.ESCAPE, call, f"passed to `{function.name}()` in a way ptrlint cannot bind", trail.after)
            ]
        return self.parameter_uses(function, param, trail, visited)

    def parameter_uses(
        self, function: FunctionNode, param: str, trail: Trail | None = None, visited: set[object] | None = None
    ) -> list[Use]:
        """Uses of a function's parameter inside the function (and wherever it goes from there)."""
        self.build_index()
        trail = Trail() if trail is None else trail
        visited = set() if visited is None else visited
        scope_id = self.model.function_scopes.get(id(function))
        if scope_id is None:
            return []
        root = self.facts.root(NameKey(scope_id, param))
        token = ("param", root, trail.after, trail.path)
        if token in visited:
            return []
        visited.add(token)
        return self.class_uses([root], trail.step(), visited)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module, ast.ClassDef)


def reads_an_earlier_value(load: ast.AST, anchor: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """A local name read before the statement that binds the table, in the same function and in no
    loop around both, reads what the name held before: ``ptrs.append(p)`` then
    ``ptrs = torch.tensor(ptrs, dtype=torch.int64)`` (the list is not a reader of the tensor)."""
    if not isinstance(load, ast.Name):
        return False
    statement: ast.AST | None = anchor
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = parents.get(id(statement))
    if statement is None or statement.end_lineno is None or statement.end_col_offset is None:
        return False
    if (load.lineno, load.col_offset) >= (statement.end_lineno, statement.end_col_offset):
        return False
    around = _enclosing(statement, parents)
    for node in _enclosing(load, parents):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node in around:
            return False  # a loop runs the earlier read again after the binding
        if isinstance(node, _SCOPES):
            return node in around  # the same function (or module): read before it is bound
    return False


def _enclosing(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST]:
    """The nodes around ``node``, innermost first."""
    out: list[ast.AST] = []
    parent = parents.get(id(node))
    while parent is not None:
        out.append(parent)
        parent = parents.get(id(parent))
    return out


def _breadth_first(module: ast.Module, parents: dict[int, ast.AST]) -> list[ast.AST]:
    """Every node, in ast.walk's order (the uses' order follows it), each child's parent recorded;
    one loop over the child fields, not ast.walk's two generators per node."""
    order: list[ast.AST] = []
    todo: deque[ast.AST] = deque([module])
    pop, push, keep, fields_of, node_class = todo.popleft, todo.append, order.append, CHILD_FIELDS, ast.AST
    while todo:
        node = pop()
        keep(node)
        for field in fields_of[node.__class__]:
            value = getattr(node, field)
            if value.__class__ is list:
                for item in value:
                    if isinstance(item, node_class):
                        parents[id(item)] = node
                        push(item)
            elif isinstance(value, node_class):
                parents[id(value)] = node
                push(value)
    return order
