"""Consumers of pointer tables: where a buffer goes decides which fix keeps the program working.

This module owns fix safety by consumers (DESIGN.md "Fix safety (phase 3)"). It follows a
buffer from its creation to every use: through its aliases (the alias classes of ``facts.py``),
copies that keep its dtype (slices, gathers, ``.to()``, ``cat``, ``*_like``), results of
arithmetic on it, the parameters of module functions it is passed to, the callers of functions
that return it, containers it is appended to and, through the project index, functions and
callers in other modules. Each use is classified (:class:`~.uses.UseKind`, by :mod:`.use_kinds`); :func:`~.uses.choose_fix` turns
the uses into one of three answers: the plain uint64 dtype, the bit-preserving fix (create
unsigned, hand on the original signed dtype's bits), or no safe fix.

It also answers the other half of the phase-3 rule, "only Python ints overflow": whether any
Python int ever enters a signed table (:meth:`.int_entry.PythonInts.python_int_enters`), and whether its
values come back out as Python values or escape to readers ptrlint cannot see.

The uses are found from the module's tree with one extra walk (parents and loads), made only
for modules where a rule asks: modules with pointer-table findings are few.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from .int_entry import PythonInts
from .records import Creation, FunctionNode, Key
from .syntax import attr_name, is_slice_subscript
from .use_kinds import UseClassifier
from .uses import LOOPS, MAX_DEPTH, Use, UseKind
from .values import ModuleFacts


class Consumers:
    """The uses of one module's buffers, with cross-module answers from the project view.

    It finds the uses (following aliases, copies, parameters, returns and containers);
    ``self.kinds`` classifies each one and ``self.ints`` answers where Python ints enter.
    """

    def __init__(self, module: ast.Module, facts: ModuleFacts, int64_consumers: tuple[str, ...] = (),
                 uint64_consumers: tuple[str, ...] = (), view: object | None = None, module_name: str = "",
                 path: str = "") -> None:
        self.module = module
        self.facts = facts
        self.c = facts.c
        self.view = view
        self.module_name = module_name
        self.path = path
        self.int64_consumers = int64_consumers
        self.uint64_consumers = uint64_consumers
        self.parents: dict[int, ast.AST] | None = None
        self.loads: dict[Key, list[ast.expr]] = {}
        self.callers: dict[int, list[ast.Call]] = {}
        self.memo: dict[tuple, tuple[Use, ...]] = {}
        self.kinds, self.ints = UseClassifier(self), PythonInts(self)

    def release(self) -> None:
        """Drop the classifiers, which point back at this object (see ``ModuleFacts.release``)."""
        del self.kinds, self.ints

    def build_index(self) -> dict[int, ast.AST]:
        if self.parents is not None:
            return self.parents
        c = self.c
        parents: dict[int, ast.AST] = {}
        functions = {id(f): f for f in c.functions.values()}
        functions.update({id(m): m for methods in c.class_methods.values() for m in methods.values()})
        names = {f.name for f in functions.values()}
        for node in ast.walk(self.module):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
            cls = node.__class__
            if (cls is ast.Name or cls is ast.Attribute) and isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
                key = c.key_of(node)
                if key is not None:
                    self.loads.setdefault(self.facts.root(key), []).append(node)  # type: ignore[arg-type]
            elif cls is ast.Call and attr_name(node.func) in names:  # type: ignore[attr-defined]
                target = c.types.function_called(node.func)  # type: ignore[attr-defined]
                if target is not None:
                    self.callers.setdefault(id(target), []).append(node)  # type: ignore[arg-type]
        self.parents = parents
        return parents

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.build_index().get(id(node))

    def roots(self, creation: Creation) -> set[Key]:
        facts = self.facts
        return {facts.root(creation.key), *(facts.root(k) for k in facts.locations.get(creation.key, []))}

    def of_creation(self, creation: Creation) -> tuple[Use, ...]:
        memo = self.memo.get(("c", id(creation.call)))
        if memo is not None:
            return memo
        self.build_index()
        visited: set[object] = set()
        numpy = creation.library == "numpy"
        uses = list(self.class_uses(self.roots(creation), numpy, False, 0, visited, creation.call))
        parent = self.parent(creation.call)
        if not self.binds_alias(creation.call, parent):
            uses.extend(self.context(creation.call, numpy, False, 0, visited))
        result = tuple(uses)
        self.memo[("c", id(creation.call))] = result
        return result

    def binds_alias(self, expr: ast.AST, parent: ast.AST | None) -> bool:
        """``x = expr`` / ``self.x: T = expr``: the target is in the creation's alias class."""
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is expr:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return all(isinstance(t, (ast.Name, ast.Attribute)) for t in targets)
        return False

    def class_uses(self, roots: set[Key], numpy: bool, after: bool, depth: int, visited: set[object],
                    anchor: ast.AST | None = None) -> list[Use]:
        out: list[Use] = []
        loads = [node for root in roots for node in self.loads.get(root, [])]
        for node in loads:
            if id(node) in visited:
                continue
            visited.add(id(node))
            out.extend(self.context(node, numpy, after, depth, visited))
        shared = any(r[0] == "a" or (r[0] == "n" and r[1] == id(self.c.module_scope)) for r in roots)
        if shared and not self.read_here(out):
            # an attribute or module name that nothing here reads: whoever reads it is out of sight
            out.append(Use(UseKind.ESCAPE, self.anchor(roots) or anchor or self.module.body[0],
                           "stored where nothing in this module reads its values", after))
        return out

    @staticmethod
    def read_here(uses: list[Use]) -> bool:
        """Whether some use reads the table's values. Writes do not; neither does the one call into
        compiled code that fills a table no Python int enters (81: the filler, then the reader)."""
        readers = [u for u in uses if not u.write and not u.metadata]
        opaque = [u for u in readers if u.opaque]
        return len(readers) > 1 or (len(readers) == 1 and not opaque)

    def anchor(self, roots: set[Key]) -> ast.AST | None:
        for root in roots:
            for binding in self.c.bindings.get(root, []):
                return binding.node
        return None

    def follow_target(self, target: ast.AST, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        """Uses of a name a derived table was assigned to."""
        key = self.c.key_of(target)
        if key is None:
            return [Use(UseKind.ESCAPE, target, "stored where ptrlint cannot follow it", after)]
        root = self.facts.root(key)
        if ("root", root, after) in visited:
            return []
        visited.add(("root", root, after))
        return self.class_uses({root}, numpy, after, depth + 1, visited)

    def context(self, expr: ast.AST, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        if depth > MAX_DEPTH:
            return [Use(UseKind.ESCAPE, expr, "followed too far to see its readers", after)]
        parent = self.parent(expr)
        if parent is None:
            return []
        same = lambda: self.context(parent, numpy, after, depth + 1, visited)  # noqa: E731
        cls = parent.__class__
        if cls is ast.Subscript and parent.value is expr:  # type: ignore[attr-defined]
            if not isinstance(parent.ctx, ast.Load):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "element store", write=True)]
            if is_slice_subscript(parent):  # type: ignore[arg-type]
                return same()
            index = parent.slice  # type: ignore[attr-defined]
            if self.kinds.is_index_table(index):  # a gather by an index tensor: a table of the same dtype
                return same()
            return [Use(UseKind.READBACK, parent, "reads an element", after), *same()]
        if cls is ast.Attribute and parent.value is expr:  # type: ignore[attr-defined]
            return self.kinds.attribute_use(parent, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.Call:
            return self.kinds.argument_use(parent, expr, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.keyword:
            call = self.parent(parent)
            if isinstance(call, ast.Call):
                return self.kinds.argument_use(call, expr, numpy, after, depth, visited, keyword=parent.arg)  # type: ignore[attr-defined]
            return []
        if cls is ast.BinOp:
            return self.kinds.arithmetic_use(parent, expr, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls is ast.AugAssign:
            if isinstance(parent.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "bitwise update")]
            return [Use(UseKind.INT64, parent, "in-place arithmetic (torch's uint64 has no such kernel)", after)]
        if cls is ast.UnaryOp:
            if isinstance(parent.op, ast.Not):  # type: ignore[attr-defined]
                return [Use(UseKind.READY, parent, "truth test")]
            return [Use(UseKind.ORDER, parent, "a sign operation", after)]
        if cls is ast.Compare:
            ops = parent.ops  # type: ignore[attr-defined]
            if any(isinstance(op, (ast.Lt, ast.Gt, ast.LtE, ast.GtE)) for op in ops) and not numpy:
                return [Use(UseKind.ORDER, parent, "an ordering comparison", after)]
            return [Use(UseKind.READY, parent, "comparison")]
        if cls is ast.Return:
            return self.returned(parent, numpy, after, depth, visited)  # type: ignore[arg-type]
        if cls in (ast.Assign, ast.AnnAssign, ast.NamedExpr):
            targets = parent.targets if cls is ast.Assign else [parent.target]  # type: ignore[attr-defined]
            if getattr(parent, "value", None) is not expr:
                return []
            out: list[Use] = []
            for target in targets:
                if isinstance(target, (ast.Name, ast.Attribute)):
                    out.extend(self.follow_target(target, numpy, after, depth, visited))
                elif isinstance(target, ast.Subscript):
                    out.append(Use(UseKind.READY, parent, "copied into another buffer"))
                else:
                    out.append(Use(UseKind.READBACK, parent, "unpacked into Python values", after))
            return out
        if cls in LOOPS and getattr(parent, "iter", None) is expr:
            return [Use(UseKind.READBACK, parent, "iterated over", after)]
        if cls in (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.GeneratorExp, ast.Starred):
            grand = self.parent(parent)
            if isinstance(grand, ast.Return) or cls is ast.Starred or isinstance(grand, ast.Yield):
                return [Use(UseKind.ESCAPE, parent, "returned inside a container", after)]
            return self.context(parent, numpy, after, depth + 1, visited)
        if cls is ast.Dict:
            return [Use(UseKind.ESCAPE, parent, "stored in a dict", after)]
        if cls is ast.IfExp:
            return same() if parent.test is not expr else []  # type: ignore[attr-defined]
        if cls in (ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda):
            return [Use(UseKind.ESCAPE, parent, "yielded or captured", after)]
        return []

    def returned(self, ret: ast.Return, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        function = self.enclosing_function(ret)
        if function is None:
            return [Use(UseKind.ESCAPE, ret, "returned", after)]
        if ("fn", id(function), after) in visited:
            return []
        visited.add(("fn", id(function), after))
        out: list[Use] = []
        for call in self.callers.get(id(function), []):
            out.extend(self.context(call, numpy, after, depth + 1, visited))
        external = self.kinds.external_callers(function)
        if external is not None:
            out.extend(replace(u, after_arithmetic=after or u.after_arithmetic) for u in external)
        if not out:
            out.append(Use(UseKind.ESCAPE, ret, f"returned by `{function.name}()`, which nothing here calls", after))
        return out

    def enclosing_function(self, node: ast.AST) -> FunctionNode | None:
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return current
            if isinstance(current, ast.Lambda):
                return None
            current = self.parent(current)
        return None

    def like_uses(self, call: ast.Call, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        """``torch.empty_like(table)``: a new buffer with the table's dtype; its own uses count too."""
        creation = self.c.creation_by_id.get(id(call))
        if creation is None or ("like", id(call)) in visited:
            return [Use(UseKind.READY, call, "`*_like` copy")]
        visited.add(("like", id(call)))
        uses = self.class_uses(self.roots(creation), numpy, after, depth + 1, visited)
        if not self.binds_alias(call, self.parent(call)):
            uses.extend(self.context(call, numpy, after, depth + 1, visited))
        return uses

    def container_uses(self, container: ast.expr, numpy: bool, after: bool, depth: int,
                        visited: set[object]) -> list[Use]:
        """``gathered.append(table)``: what is done with the list is done with the table."""
        key = self.c.key_of(container)
        if key is None:
            return [Use(UseKind.ESCAPE, container, "put in a container ptrlint cannot follow", after)]
        root = self.facts.root(key)
        if ("container", root) in visited:
            return []
        visited.add(("container", root))
        return self.class_uses({root}, numpy, after, depth + 1, visited)

    def call_parameter_uses(self, function: FunctionNode, call: ast.Call, expr: ast.AST, position: int | None,
                        keyword: str | None, numpy: bool, after: bool, depth: int, visited: set[object]) -> list[Use]:
        param = None
        for name, arg in self.facts.flow.bind_arguments(function, call):
            if arg is expr:
                param = name
                break
        if param is None:
            return [Use(UseKind.ESCAPE, call, f"passed to `{function.name}()` in a way ptrlint cannot bind", after)]
        return self.parameter_uses(function, param, numpy, after, depth, visited)

    def parameter_uses(self, function: FunctionNode, param: str, numpy: bool = False, after: bool = False,
                       depth: int = 0, visited: set[object] | None = None) -> list[Use]:
        """Uses of a function's parameter inside the function (and wherever it goes from there)."""
        self.build_index()
        visited = set() if visited is None else visited
        scope_id = self.c.function_scopes.get(id(function))
        if scope_id is None:
            return []
        root = self.facts.root(("n", scope_id, param))
        if ("param", root, after) in visited:
            return []
        visited.add(("param", root, after))
        return self.class_uses({root}, numpy, after, depth + 1, visited)

    def result_uses(self, qualname: str, numpy: bool = False) -> list[Use]:
        """Uses, in this module, of what calls to ``qualname`` (another module's function) return."""
        self.build_index()
        c = self.c
        visited: set[object] = set()
        out: list[Use] = []
        for node in ast.walk(self.module):
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and \
                    attr_name(node.func) == qualname.rpartition(".")[2] and qualname in c.qualified_names(node.func):
                out.extend(self.context(node, numpy, False, 1, visited))
        return out
