"""Readers of a table stored or returned where other code may reach it: an attribute (read by
name wherever an object of its module may go), a module-level name (read by the modules that
import it) and a function's result (its callers here and, through the index, elsewhere); and the answers this module gives when another module of the
project asks what it does with a value (what a call returns, an attribute, a name).

An ``x.attr`` read is taken for a reader of a table stored in ``attr`` unless ``x`` is known to
be an instance of another class of the module: that reads more than the table's own readers,
never fewer, so the fix it chooses is never bolder than the truth allows.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..semantic.records import FunctionNode, Key, MemberKey, NameKey, ObjectAttributeKey
from ..semantic.syntax import attr_name
from .consumer_parts import ConsumersPart
from .uses import Path, Trail, Use, UseKind


class Readers(ConsumersPart):
    """Who reads what a module stores in attributes and module-level names (``consumers.readers``)."""

    def attribute_readers(self, root: Key, trail: Trail, visited: set[object]) -> list[Use]:
        """Every ``x.attr`` read in this module that may be the attribute ``root`` names (``x`` not
        known to be an instance of another class), and, through the index, in other modules."""
        assert isinstance(root, (MemberKey, ObjectAttributeKey)), root
        attr = root.attr
        own_class = root.owner if isinstance(root, MemberKey) and isinstance(root.owner, int) else None
        out: list[Use] = []
        for node in self.search.attribute_loads.get(attr, []):
            if id(node) in visited:
                continue
            key = self.model.key_of(node)
            if (
                isinstance(key, MemberKey)
                and isinstance(key.owner, int)
                and own_class is not None
                and not self.related_classes(key.owner, own_class)
            ):
                continue  # an attribute of another class of this module
            visited.add(id(node))
            out.extend(self.search.context(node, trail, visited))
        question = ("attribute", attr, trail.path)
        if self.view is not None and question not in visited:
            visited.add(question)
            found = self.view.attribute_consumers(attr, trail.path, self.facts.options)
            out.extend(self.search.carried(found, trail))
        return out

    def same_attribute(self, roots: list[Key]) -> list[Key]:
        """``roots`` and the alias classes of every other location that may be the same attribute:
        ``x.attr`` of an object whose class is unknown (``view = bufs.src_ptrs.numpy()`` in a
        function given ``bufs``), for each attribute the roots hold. Their writes are the table's."""
        groups = self.facts.groups
        attrs: dict[str, int | None] = {}
        for root in roots:
            for m in groups.get(root, [root]):
                if isinstance(m, (MemberKey, ObjectAttributeKey)) and not m.attr.startswith("["):
                    attrs.setdefault(m.attr, m.owner if isinstance(m, MemberKey) and isinstance(m.owner, int) else None)
        out = list(roots)
        if not attrs:
            return out
        for root, members in groups.items():
            if root in out:
                continue
            for m in members:
                if isinstance(m, (MemberKey, ObjectAttributeKey)) and m.attr in attrs:
                    own = attrs[m.attr]
                    if (
                        isinstance(m, MemberKey)
                        and isinstance(m.owner, int)
                        and own is not None
                        and not self.related_classes(m.owner, own)
                    ):
                        continue  # the attribute of another class of this module
                    out.append(root)
                    break
        return out

    def related_classes(self, a: int, b: int) -> bool:
        """Whether one of two classes of this module may be the other (the same, or one names the
        other among its bases)."""
        if a == b:
            return True
        nodes = self.model.class_nodes
        names = {cid: node.name for cid, node in nodes.items()}
        return any(
            attr_name(base) == names.get(other)
            for cid, other in ((a, b), (b, a))
            for base in (nodes[cid].bases if cid in nodes else ())
        )

    def name_readers(self, name: str, trail: Trail, visited: set[object]) -> list[Use]:
        """Readers, in other modules of the project, of a module-level name of this one."""
        question = ("name", name, trail.path)
        if self.view is None or not self.module_name or question in visited:
            return []
        visited.add(question)
        found = self.view.name_consumers(f"{self.module_name}.{name}", trail.path, self.facts.options)
        return self.search.carried(found, trail)

    def returned(self, ret: ast.Return, trail: Trail, visited: set[object]) -> list[Use]:
        function = self.enclosing_function(ret)
        if function is None:
            return [Use(UseKind.ESCAPE, ret, "returned", trail.after)]
        token = ("fn", id(function), trail.after, trail.path)
        if token in visited:
            return []
        visited.add(token)
        out: list[Use] = []
        class_id = self.model.method_class.get(id(function))
        if class_id is not None and any(
            attr_name(d) in ("property", "cached_property") for d in function.decorator_list
        ):
            # a property's result is read as an attribute, wherever an instance of its class may be
            readers = self.attribute_readers(MemberKey(class_id, function.name), trail.step(), visited)
            return readers or [
                Use(
                    UseKind.ESCAPE,
                    ret,
                    f"the property `{function.name}`, which nothing in the project reads",
                    trail.after,
                )
            ]
        calls = self.calls_of(function)
        for call in calls:
            out.extend(self.search.context(call, trail.step(), visited))
        external = self.search.kinds.external_callers(function, trail.path)
        out.extend(self.search.carried(external, trail))
        if not calls and not external and not trail.in_field:
            out.append(
                Use(
                    UseKind.ESCAPE,
                    ret,
                    f"returned by `{function.name}()`, which nothing in the project calls",
                    trail.after,
                    private=self.private_function(function),
                )
            )
        return out

    def private_searched(self, locations: Sequence[Key]) -> bool:
        """Locations only the project reads (private names: ``self._tables``, ``_CACHE``), and the
        project was searched for their readers: none read them, so nothing can."""
        if self.view is None or not locations:
            return False
        return all(is_private(m.name if isinstance(m, NameKey) else m.attr) for m in locations)  # type: ignore[union-attr]

    def private_function(self, function: FunctionNode) -> bool:
        """A private function or method (``_build``) that nothing in the project calls, with the project
        searched for its callers: no caller can read what it returns."""
        if self.view is None or not function.name.startswith("_") or function.name.startswith("__"):
            return False
        return True

    def calls_of(self, function: FunctionNode) -> list[ast.Call]:
        """The calls of a module function or method in this module: those that resolve to it, and,
        for a method, every ``x.name(...)`` whose receiver may be an instance of its class (of
        unknown type, or of a class that does not define ``name`` itself: it may inherit it)."""
        self.search.build_index()
        calls = list(self.search.callers.get(id(function), []))
        class_id = self.model.method_class.get(id(function))
        if class_id is None:
            return calls
        seen = {id(call) for call in calls}
        for call in self.search.method_calls.get(function.name, []):
            if id(call) in seen:
                continue
            receiver = self.model.types.receiver_class(call.func.value)  # type: ignore[attr-defined]
            if (
                isinstance(receiver, int)
                and receiver != class_id
                and function.name in self.model.class_methods.get(receiver, {})
            ):
                continue  # another class of this module that defines the method itself
            calls.append(call)
        return calls

    def enclosing_function(self, node: ast.AST) -> FunctionNode | None:
        current = self.search.parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return current
            if isinstance(current, ast.Lambda):
                return None
            current = self.search.parent(current)
        return None

    def result_uses(self, qname: str, path: Path = (), method: bool = False) -> list[Use]:
        """Uses, in this module, of what calls to ``qname`` (another module's function or method)
        return. A ``method`` is called through instances: every ``x.m(...)`` counts."""
        self.search.build_index()
        model = self.model
        name = qname.rpartition(".")[2]
        visited: set[object] = set()
        out: list[Use] = []
        for node in self.search.calls_by_name.get(name, []):
            if qname in model.qualified_names(node.func) or (method and isinstance(node.func, ast.Attribute)):
                out.extend(self.search.context(node, Trail(depth=1, path=path), visited))
        return out

    def attribute_uses(self, attr: str, path: Path = ()) -> list[Use]:
        """Uses, in this module, of every ``x.attr`` read (a table another module stores in ``attr``)."""
        self.search.build_index()
        visited: set[object] = {("shared", attr, path)}  # whether anything reads it is the asker's to say
        out: list[Use] = []
        for node in self.search.attribute_loads.get(attr, []):
            if id(node) not in visited:
                visited.add(id(node))
                out.extend(self.search.context(node, Trail(depth=1, path=path), visited))
        return out

    def name_uses(self, qname: str, path: Path = ()) -> list[Use]:
        """Uses, in this module, of another module's module-level name (imported, or ``mod.NAME``)."""
        self.search.build_index()
        visited: set[object] = set()
        out: list[Use] = []
        name = qname.rpartition(".")[2]
        for node in self.search.name_loads.get(name, []):
            if qname in self.model.qualified_names(node):
                out.extend(self.search.context(node, Trail(depth=1, path=path), visited))
        return out


def is_private(name: str) -> bool:
    """``_x`` and ``__x`` (not ``__x__``): by Python's convention, read only inside its package."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
