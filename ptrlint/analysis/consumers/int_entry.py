"""Where Python ints enter a table and where its values leave it again (only Python ints
overflow a signed table), whether they are known not to be negative (a table created unsigned
raises on a negative Python int, so a fix that creates it unsigned is safe only for values proven
non-negative), and the element stores of a table filled through a numpy view."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ...names import PASSTHROUGH_METHODS, VIEW_ATTRIBUTES
from ..semantic.records import Creation, Key, MemberKey, NameKey
from ..semantic.syntax import attr_name, is_slice_subscript
from ..values.ctypes_slots import CtypesSlots
from ..values.lattice import Kind, Location, Origin, Value
from .consumer_parts import ConsumersPart
from .uses import Entry

MAX_PARAMETER_DEPTH = 4


class PythonInts(ConsumersPart):
    """Only Python ints overflow a signed table: where they enter one, and where its values leave."""

    _parameters: dict[int, set[str]] | None = None
    _slots: CtypesSlots | None = None

    def python_int_entry(self, creation: Creation) -> Entry | None:
        """The first place a Python int (not a tensor's bits) enters the creation's buffer, or None."""
        facts = self.facts
        for part, how in (
            (creation.data, "at creation"),
            (creation.fill, "as the fill value at creation"),
            (creation.stop, "as the range's end at creation"),
        ):
            if part is not None and self.may_hold_python_ints(part):
                return Entry(part, how, facts.value(part))
        for root in self.search.written(creation):
            found = self._entry_into(root, 0, set())
            if found is not None:
                return found
        elsewhere = self.written_elsewhere(creation)
        if elsewhere:
            value = elsewhere[0]
            node = next((n for n, _ in value.evidence if isinstance(n, Location)), None)
            return Entry(node or creation.call, "by a store in another module", value, numpy=None)  # torch or numpy
        return None

    def _entry_into(self, root: Key, depth: int, seen: set[Key]) -> Entry | None:
        """A Python int written into an alias class: appended, stored as an element, or stored by a
        module function the buffer is passed to (into its parameter, followed a few calls deep)."""
        if root in seen:
            return None
        seen.add(root)
        facts, model = self.facts, self.model
        for member in facts.groups.get(root, [root]):
            for binding in model.adds.get(member, []):
                return Entry(binding.node, "appended", facts.value(binding.expr))
            for binding in model.stores.get(member, []):
                if binding.how != "seq" and self.python_values(binding.expr):
                    node = binding.node
                    target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
                    base = target.value if isinstance(target, ast.Subscript) else None
                    if base is not None and self._ctypes_view(base):
                        continue  # through a ctypes view: ctypes wraps silently, the table gets the bits (PTR006's)
                    view = numpy_view_call(base) is not None or through_view_attribute(base)
                    return Entry(
                        node,
                        "by an element store" + (" through a numpy view" if view else ""),
                        facts.value(binding.expr),
                        numpy=view,
                    )
            for function, param, call in facts.passes.get(member, []):
                found = self._entry_through(function, param, call, depth, seen)
                if found is not None:
                    return found
        return None

    def _ctypes_view(self, base: ast.expr) -> bool:
        """A ctypes pointer view or array (``ctypes.cast(t.data_ptr(), POINTER(c_int64))``): its element
        stores convert a Python int the way ctypes does, without a range check."""
        if self._slots is None:
            self._slots = CtypesSlots(self.facts)
        return self._slots.container_type(base) is not None

    def _entry_through(self, function: object, param: str, call: ast.Call, depth: int, seen: set[Key]) -> Entry | None:
        """A Python int that the function a buffer is passed to stores into that parameter."""
        writes = getattr(function, "writes", None)
        if writes is not None:  # another module's function: what its summary says it writes
            value = writes.get(param)
            if value is not None and value.is_pointer and value.python_int and not value.array:
                name = getattr(function, "qname", "?").rpartition(".")[2]
                return Entry(
                    call,
                    f"by `{name}()`, which stores Python ints into its parameter `{param}`",
                    value,
                    via=name,
                    numpy=None,
                )  # a store another module makes: torch or numpy
            return None
        if depth >= MAX_PARAMETER_DEPTH:
            return None
        scope_id = self.model.function_scopes.get(id(function))
        if scope_id is None:
            return None
        inner = self._entry_into(self.facts.root(NameKey(scope_id, param)), depth + 1, seen)
        if inner is None:
            return None
        name = getattr(function, "name", "?")
        return Entry(
            inner.node,
            f"{inner.how} in `{name}()`, called with it on line {call.lineno}",
            inner.value,
            via=inner.via or name,
            numpy=inner.numpy,
        )

    def written_elsewhere(self, creation: Creation) -> list[Value]:
        """Python ints other modules of the project store into the attribute the table is kept in
        (``bufs.src.numpy()[i] = p`` in another module): values a fix made here cannot reach."""
        if self.view is None:
            return []
        out: list[Value] = []
        for root in self.search.roots(creation):
            for member in self.facts.groups.get(root, [root]):
                if not isinstance(member, MemberKey) or not isinstance(member.owner, int):
                    continue
                qualname = self.model.types.class_qualname(member.owner)
                if qualname is None:
                    continue
                for value in self.view.external_writes(qualname, member.attr):
                    if value.is_pointer and value.python_int and not value.array:
                        out.append(value)
        return out

    # ----- the sign of what enters -----------------------------------------------------------------
    def sign_unknown(self, creation: Creation, stores: bool) -> str | None:
        """Why a Python int that enters the table created unsigned may be negative (None: every one
        is proven non-negative: an address from an address API, plus or minus an offset, or a
        non-negative constant). ``stores``: the Python ints stored into the table after it is created
        count too (they reach the unsigned table of a plain uint64 fix; a bit-preserving fix hands
        them an int64 table, but its unsigned numpy views take them as well)."""
        parts = [
            p for p in creation.parts if (self.may_hold_python_ints(p) or isinstance(p, ast.UnaryOp))
        ]  # `torch.full(n, -1, ...)`
        if stores:
            for root in self.search.written(creation):
                for member in self.facts.groups.get(root, [root]):
                    parts += [
                        b.expr
                        for b in self.model.stores.get(member, [])
                        if b.how != "seq" and self.python_values(b.expr)
                    ]
        seen: set[object] = set()
        for part in parts:
            for leaf in self._sources(part, 0, seen):
                why = self._sign(leaf)
                if why is not None:
                    return why
        return None

    def value_sign(self, expr: ast.AST) -> str | None:
        """Why the Python ints an expression gives may be negative (None: proven non-negative)."""
        for leaf in self._sources(expr, 0, set()):
            why = self._sign(leaf)
            if why is not None:
                return why
        return None

    def _sources(self, expr: ast.AST, depth: int, seen: set[object]) -> Iterable[ast.AST]:
        """The expressions whose Python ints end up in ``expr`` (a creation's data, a stored value):
        the items of literals and comprehensions, what a name was bound, appended or stored."""
        if id(expr) in seen:
            return
        seen.add(id(expr))
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            for element in expr.elts:
                yield from self._sources(element.value if isinstance(element, ast.Starred) else element, depth, seen)
        elif isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            yield from self._sources(expr.elt, depth, seen)
        elif isinstance(expr, ast.Call) and attr_name(expr.func) in ("list", "tuple", "sorted") and len(expr.args) == 1:
            yield from self._sources(expr.args[0], depth, seen)
        elif isinstance(expr, (ast.Name, ast.Attribute)) and depth < 4 and self._bound_only(expr):
            key = self.model.key_of(expr)
            root = self.facts.root(key)  # type: ignore[arg-type]
            for member in self.facts.groups.get(root, [root]):
                for table in (self.model.bindings, self.model.adds, self.model.stores):
                    for binding in table.get(member, []):
                        if binding.how in ("expr", "elem-of") and binding.expr is not expr:
                            yield from self._sources(binding.expr, depth + 1, seen)
                        elif binding.how != "index":
                            yield binding.expr
        else:
            yield expr

    def _bound_only(self, expr: ast.AST) -> bool:
        """A name or attribute whose values all come from what this module binds, appends or stores
        (not a parameter, not an attribute of another module's object)."""
        key = self.model.key_of(expr)
        if key is None:
            return False
        root = self.facts.root(key)
        members = self.facts.groups.get(root, [root])
        if any(self._is_parameter(m) for m in members):
            return False
        return any(self.model.bindings.get(m) or self.model.adds.get(m) for m in members)

    def _is_parameter(self, key: Key) -> bool:
        if not isinstance(key, NameKey):
            return False
        if self._parameters is None:  # scope id -> its function's parameter names, built on the first ask
            model = self.model
            functions = [
                *model.functions.values(),
                *(m for methods in model.class_methods.values() for m in methods.values()),
            ]
            self._parameters = {
                model.function_scopes[id(f)]: {a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)}
                for f in functions
                if id(f) in model.function_scopes
            }
        return key.name in self._parameters.get(key.scope, ())

    def _sign(self, leaf: ast.AST) -> str | None:
        """Why one source of Python ints may be negative, or None."""
        line = getattr(leaf, "lineno", 0)
        if isinstance(leaf, ast.UnaryOp) and isinstance(leaf.op, ast.USub) and isinstance(leaf.operand, ast.Constant):
            return f"line {line}: the negative constant `-{leaf.operand.value!s}` enters it"
        if isinstance(leaf, ast.Constant):
            return None
        value = self.facts.value(leaf)
        if value is None:
            return f"line {line}: values ptrlint cannot trace enter it, and may be negative"
        if value.kind is Kind.SEQ and value.array:
            return None  # a tensor's or array's bits, not Python ints
        if value.origin is Origin.RAW or value.origin is Origin.INDEX:
            return None
        if value.origin is Origin.WRAPPED:
            return f"line {line}: addresses wrapped into int64 range (negative above 2**63) enter it"
        return f"line {line}: values known to be addresses only by their names enter it, and may be negative"

    def may_hold_python_ints(self, part: ast.AST) -> bool:
        """A creation's data or fill: Python values unless known to be a tensor's bits or only indices."""
        value = self.facts.value(part)
        if value is None:
            return True  # `torch.tensor(pointers)` of a list ptrlint cannot trace: Python ints, as far as it knows
        if not value.is_pointer:
            return False  # built only from constants, shapes, lengths (contrary evidence), or wrapped on purpose
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def python_values(self, expr: ast.AST) -> bool:
        value = self.facts.value(expr)
        if value is None or not value.is_pointer:
            return False
        return value.python_int if value.kind is Kind.SCALAR else not value.array

    def element_stores(self, creation: Creation) -> tuple[list[ast.Call], str | None]:
        """The numpy views (``table.numpy()`` calls) through which Python ints are stored into a torch
        table, and why a bit-preserving creation cannot cover the stores (or None). Element stores
        straight into the torch tensor are PTR005's to fix."""
        model = self.model
        sites: list[ast.Call] = []
        for root in self.search.written(creation):
            for member in self.facts.groups.get(root, [root]):
                for binding in model.stores.get(member, []):
                    if binding.how == "seq" or not self.python_values(binding.expr):
                        continue
                    node = binding.node
                    target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
                    base = target.value if isinstance(target, ast.Subscript) else None
                    chains = [base] if base is not None else []
                    if isinstance(base, (ast.Name, ast.Attribute)):
                        chains += [b.expr for b in model.bindings.get(member, []) if b.how == "expr"]
                    found = next((s for s in map(numpy_view_call, chains) if s is not None), None)
                    if found is not None:
                        if found not in sites:
                            sites.append(found)
                    elif creation.library == "numpy":
                        return sites, f"Python ints are stored into the numpy array on line {node.lineno}"
                    elif any(through_view_attribute(b) for b in chains):
                        return sites, f"Python ints are stored through a buffer view on line {node.lineno}"
        return sites, None


def numpy_view_call(expr: ast.AST | None) -> ast.Call | None:
    """The ``x.numpy()`` call in an alias chain (``buf.numpy()[:n]``, ``view = t.numpy()``)."""
    while expr is not None:
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "numpy" and not expr.args:
                return expr
            expr = expr.func.value if expr.func.attr in PASSTHROUGH_METHODS else None
        elif isinstance(expr, ast.Subscript) and is_slice_subscript(expr):
            expr = expr.value
        else:
            return None
    return None


def through_view_attribute(expr: ast.AST | None) -> bool:
    while isinstance(expr, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Attribute) and expr.attr in VIEW_ATTRIBUTES:
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False
