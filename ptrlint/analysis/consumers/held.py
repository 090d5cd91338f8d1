"""Values that hold a table: a tuple returned and unpacked, a dict entry, an object's field.

A table put into a container or an object is not read where the container goes, only where the
table is taken out of it again: ``a, b = tables()`` binds item 0 to ``a``, ``pair[1]`` reads item
1, ``buffers.src_ptrs`` reads the field. The follow carries the way from the value to the table
(:class:`~.uses.Trail`'s ``path``) and, at each use of the container, either takes the table out
(the path gets shorter), passes the container on (a name it is bound to, a parameter, a caller),
or ends: a container given to code ptrlint cannot see may be read there (int64, unseen); one that
leaves where it cannot follow is an escape.

An object's field is read by name (``x.src_ptrs``) and every such read in the project is a
reader already (:meth:`.search.Consumers.attribute_readers`), so an object that holds a table
in a field is followed only to the code outside the project it is handed to.
"""

from __future__ import annotations

import ast

from ..semantic.records import MemberKey
from ..semantic.syntax import attr_name
from .consumer_parts import ConsumersPart, UseSearch
from .dtype_match import DtypeMatch
from .uses import COMBINING_FUNCTIONS, LOOPS, READY_FUNCTIONS, Trail, Use, UseKind

# Methods of a list, tuple or dict that read nothing of a table it holds.
_CONTAINER_READY = frozenset(
    {
        "index",
        "count",
        "keys",
        "__len__",
        "append",
        "extend",
        "insert",
        "clear",
        "remove",
        "setdefault",
        "update",
        "add",
        "discard",
    }
)
_COPIES = frozenset({"builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed", "copy.copy"})


def _constant(node: ast.AST) -> object:
    return node.value if isinstance(node, ast.Constant) else ...


class HeldUses(ConsumersPart):
    """The uses of a value that holds a table (``trail.path`` not empty)."""

    def __init__(self, search: UseSearch) -> None:
        super().__init__(search)
        self.match = DtypeMatch(search)

    def context(self, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        search = self.search
        parent = search.parent(expr)
        if parent is None:
            return []
        kind, value = trail.path[0]
        after = trail.after
        cls = parent.__class__
        if cls is ast.Subscript and parent.value is expr:  # type: ignore[attr-defined]
            return self.subscript(parent, trail, visited)  # type: ignore[arg-type]
        if cls is ast.Attribute and parent.value is expr:  # type: ignore[attr-defined]
            return self.attribute(parent, trail, visited)  # type: ignore[arg-type]
        if cls is ast.Call:
            if parent.func is expr:  # type: ignore[attr-defined]
                return []
            return self.argument(parent, expr, trail, visited)  # type: ignore[arg-type]
        if cls is ast.keyword:
            call = search.parent(parent)
            return self.argument(call, expr, trail, visited, parent.arg) if isinstance(call, ast.Call) else []  # type: ignore[attr-defined]
        if cls is ast.Return:
            return search.readers.returned(parent, trail, visited)  # type: ignore[arg-type]
        if cls in (ast.Assign, ast.AnnAssign, ast.NamedExpr):
            if getattr(parent, "value", None) is not expr:
                return []
            return self.assigned(parent, trail, visited)  # type: ignore[arg-type]
        if cls in LOOPS and getattr(parent, "iter", None) is expr:
            if kind in ("index", "item"):  # each item may be the table
                return self.bound(parent.target, parent, trail.out(), visited)  # type: ignore[attr-defined]
            if kind == "key":
                return []  # a dict iterates over its keys
            return [Use(UseKind.ESCAPE, parent, "an object holding it is iterated over", after)]
        if cls in (ast.List, ast.Tuple):
            position = next(i for i, e in enumerate(parent.elts) if e is expr)  # type: ignore[attr-defined]
            return search.context(parent, trail.into(("index", position)), visited)
        if cls in (ast.Set, ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return search.context(parent, trail.into(("item", None)), visited)
        if cls is ast.Dict:
            return self.dict_value(parent, expr, trail, visited)  # type: ignore[arg-type]
        if cls is ast.IfExp:
            return search.context(parent, trail.step(), visited) if parent.test is not expr else []  # type: ignore[attr-defined]
        if cls in (ast.Starred, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda):
            return (
                []
                if kind == "field"
                else [Use(UseKind.ESCAPE, parent, "a container holding it is yielded, unpacked or captured", after)]
            )
        return []

    # ----- taking the table out -------------------------------------------------------------------
    def subscript(self, node: ast.Subscript, trail: Trail, visited: set[object]) -> list[Use]:
        kind, value = trail.path[0]
        if not isinstance(node.ctx, ast.Load):
            return []  # writing into the container
        if kind == "field":
            return [Use(UseKind.ESCAPE, node, "an object holding it is indexed", trail.after)] if value == "*" else []
        index = _constant(node.slice)
        if isinstance(node.slice, ast.Slice):
            return self.search.context(node, trail.step(path=(("item", None), *trail.path[1:])), visited)
        if (
            kind in ("index", "key")
            and index is not ...
            and index != value
            and not (kind == "index" and isinstance(index, int) and index < 0)
        ):  # `pair[-1]` may be it
            return []  # another item
        return self.search.context(node, trail.out(), visited)

    def attribute(self, node: ast.Attribute, trail: Trail, visited: set[object]) -> list[Use]:
        kind, value = trail.path[0]
        search = self.search
        if kind == "field":
            if node.attr == value:
                return search.context(node, trail.out(), visited)
            return []  # another attribute, or a method of its class (whose reads of the field are readers already)
        call = search.parent(node)
        method = node.attr
        if not (isinstance(call, ast.Call) and call.func is node):
            return []
        if method in ("get", "pop", "setdefault") and kind in ("key", "item") and call.args:
            key = _constant(call.args[0])  # an item of unknown key (`d[k] = table`) may be any
            return search.context(call, trail.out(), visited) if kind == "item" or key is ... or key == value else []
        if method == "copy":
            return search.context(call, trail.step(), visited)
        if method in ("values", "items") and kind == "key":
            return (
                search.context(call, trail.step(path=(("item", None), *trail.path[1:])), visited)
                if method == "values"
                else [Use(UseKind.ESCAPE, call, "a dict holding it is iterated over", trail.after)]
            )
        if method in _CONTAINER_READY:
            return []
        return [Use(UseKind.ESCAPE, call, f"a container holding it goes through `.{method}()`", trail.after)]

    def assigned(
        self, node: ast.Assign | ast.AnnAssign | ast.NamedExpr, trail: Trail, visited: set[object]
    ) -> list[Use]:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        out: list[Use] = []
        for target in targets:
            out.extend(self.bound(target, node, trail, visited))
        return out

    def bound(self, target: ast.AST, node: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        """The value ``trail`` describes bound to ``target`` (a name, or a tuple of targets)."""
        search = self.search
        if not trail.path:
            if isinstance(target, (ast.Name, ast.Attribute)):
                return search.follow_target(target, trail, visited)
            if isinstance(target, ast.Subscript):
                return self.match.stored_into(target, node, trail, visited)
            if isinstance(target, (ast.Tuple, ast.List)):
                return [Use(UseKind.READBACK, node, "unpacked into Python values", trail.after)]
            return []
        if isinstance(target, (ast.Name, ast.Attribute)):
            return search.follow_target(target, trail, visited)
        if isinstance(target, ast.Subscript):
            return []  # the container stored into another container's item: followed no further
        if isinstance(target, (ast.Tuple, ast.List)):
            kind, value = trail.path[0]
            if kind == "field":
                return (
                    [Use(UseKind.ESCAPE, node, "an object holding it is unpacked", trail.after)] if value == "*" else []
                )
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            out: list[Use] = []
            for position, element in enumerate(target.elts):
                if kind == "index" and not starred and position != value:
                    continue
                element = element.value if isinstance(element, ast.Starred) else element
                out.extend(self.bound(element, node, trail.out(), visited))
            return out
        return []

    # ----- passing the container on ---------------------------------------------------------------
    def argument(
        self, call: ast.Call, expr: ast.AST, trail: Trail, visited: set[object], keyword: str | None = None
    ) -> list[Use]:
        """A call given the container: code of the project follows it; code ptrlint cannot see may read it."""
        search, model = self.search, self.model
        kind = trail.path[0][0]
        func = call.func
        qnames = model.qualified_names(func) if isinstance(func, (ast.Name, ast.Attribute)) else set()
        spelled = next(iter(sorted(qnames)), attr_name(func) or "a call")
        if qnames & READY_FUNCTIONS:
            return []
        loop = search.parent(call)
        if (
            qnames & {"builtins.enumerate", "builtins.zip"}
            and kind in ("index", "item")
            and isinstance(loop, LOOPS)
            and loop.iter is call
            and isinstance(loop.target, (ast.Tuple, ast.List))
        ):
            # `for i, t in enumerate(tables)`, `for s, d in zip(srcs, dsts)`: the loop binds the items
            slot = 1 if "builtins.enumerate" in qnames else next(i for i, a in enumerate(call.args) if a is expr)
            targets = loop.target.elts
            return self.bound(targets[slot], loop, trail.out(), visited) if slot < len(targets) else []
        if qnames & _COPIES:
            return search.context(
                call, trail.step(path=(("item", None), *trail.path[1:])) if kind == "index" else trail.step(), visited
            )
        if kind in ("index", "item") and any(q.startswith(("torch.", "numpy.")) for q in qnames):
            # `torch.stack(tables)`, `dist.all_gather(tables, mine)`: torch and numpy take a sequence of
            # tensors as the tensors themselves; a combining one (`torch.cat([header, table])`) is judged
            # on the element itself, beside its partners
            step = trail.path[0][1]
            if (
                qnames & COMBINING_FUNCTIONS
                and isinstance(expr, (ast.List, ast.Tuple))
                and isinstance(step, int)
                and 0 <= step < len(expr.elts)
            ):
                return search.kinds.argument_use(call, expr.elts[step], trail.out(), visited, keyword)
            return search.kinds.argument_use(call, expr, trail.out(), visited, keyword)
        if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert", "add") and not qnames:
            return search.container_uses(func.value, trail, visited)
        target = model.types.function_called(func)
        if target is not None:
            return search.call_parameter_uses(target, call, expr, trail, visited)
        class_id = model.types.class_of_name(func)
        if class_id is not None:
            return self.constructor(call, expr, class_id, keyword, trail, visited)
        external = model.types.external_callee(func) if self.view is not None else None
        project = external is not None and search.kinds.is_project(external)
        if external is not None and self.view is not None and project:
            position = next((i for i, a in enumerate(call.args) if a is expr), None)
            found = self.view.param_consumers(external, position, keyword, trail.path, self.facts.options)
            if found is not None:
                return search.carried(found, trail)
        if kind == "field" and not project and not (qnames and not self.in_project(qnames)):
            # an object handed to code of the project (or a callable that may be): whatever reads its
            # field there spells the field's name, and every such read is a reader already
            return []
        return [
            Use(
                UseKind.INT64,
                call,
                f"passed, inside a container or object, to `{spelled}()`, which ptrlint "
                "cannot see (unknown means int64)",
                trail.after,
                opaque=True,
            )
        ]

    def in_project(self, qnames: set[str]) -> bool:
        return any(self.search.kinds.is_project(q) for q in qnames)

    def constructor(
        self,
        call: ast.Call,
        expr: ast.AST,
        class_id: int | str,
        keyword: str | None,
        trail: Trail,
        visited: set[object],
    ) -> list[Use]:
        """``Cls(..., table, ...)``: the object holds the value in an attribute. A class with an
        ``__init__`` of this module binds a parameter (followed to the attribute it is stored in);
        a dataclass or NamedTuple binds the field named by the keyword or the position."""
        search, model = self.search, self.model
        position = next((i for i, a in enumerate(call.args) if a is expr), None)
        init = model.class_methods.get(class_id, {}).get("__init__") if isinstance(class_id, int) else None
        out: list[Use] = []
        field: str | None = None
        if init is not None:
            out.extend(search.call_parameter_uses(init, call, expr, trail, visited))
        else:
            fields = model.types.class_fields(class_id)
            field = (
                keyword
                if keyword is not None and (keyword in fields or not fields)
                else fields[position]
                if position is not None and position < len(fields)
                else None
            )
            if field is not None:
                out.extend(search.class_uses([self.facts.root(MemberKey(class_id, field))], trail.step(), visited))
            elif isinstance(class_id, str) and self.view is not None:  # another module's class: its `__init__`
                found = self.view.param_consumers(
                    f"{class_id}.__init__", position, keyword, trail.path, self.facts.options
                )
                if found is None:
                    return [
                        Use(
                            UseKind.INT64,
                            call,
                            f"passed to `{attr_name(call.func)}()`, whose fields ptrlint "
                            "cannot see (unknown means int64)",
                            trail.after,
                            opaque=True,
                        )
                    ]
                out.extend(search.carried(found, trail))
            else:
                return [
                    Use(
                        UseKind.ESCAPE,
                        call,
                        f"passed to `{attr_name(call.func)}()` in a way ptrlint cannot bind",
                        trail.after,
                    )
                ]
        return out + search.context(call, trail.into(("field", field or "*")), visited)

    def dict_value(self, node: ast.Dict, expr: ast.AST, trail: Trail, visited: set[object]) -> list[Use]:
        """``{"ptrs": table}``: the dict holds the table under its key."""
        for key, value in zip(node.keys, node.values):
            if value is expr:
                name = _constant(key) if key is not None else ...
                if isinstance(name, (str, int)):
                    return self.search.context(node, trail.into(("key", name)), visited)
        return [Use(UseKind.ESCAPE, node, "stored in a dict ptrlint cannot follow", trail.after)]
