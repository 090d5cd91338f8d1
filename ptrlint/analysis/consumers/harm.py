"""The harm model: a finding exists only where ptrlint can name the failure and the path to it.

A signed 64-bit table of addresses fails in three ways, each with a path ptrlint can show:

- **a Python int enters it** (at creation, by an element store, through a function it is passed to,
  from another module): an address >= 2**63 makes torch raise ``Overflow when unpacking long long``
  and numpy raise ``OverflowError``;
- **its values come back as Python numbers** and are read (``tolist``, ``item``, iteration, an
  element read) or ordered (a comparison, ``max``, ``sort``): an address >= 2**63 reads as a
  negative number;
- neither, but **its values leave for code ptrlint cannot see** (returned to callers outside the
  project, kept in a public attribute nothing in the project reads): there a reader *may* read them
  back as negative numbers. That is a doubt, not a failure ptrlint can reach: a *note*.

A table that only receives bits (a kernel, an extension, a collective, torch arithmetic, ``copy_``
fill it) and whose values stay in code ptrlint follows has no path to a failure, and is not reported.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...discovery import display_path
from ...findings import ERROR, NOTE
from ..semantic.records import Creation, Key, MemberKey
from ..values.lattice import Location, Value
from .consumer_parts import ConsumersPart
from .uses import Entry, UseKind, describe

OVERFLOW = {
    "torch": "torch raises `Overflow when unpacking long long`",
    "numpy": "numpy raises `OverflowError`",
}


@dataclass(frozen=True)
class Harm:
    """What fails (one sentence), how sure ptrlint is (``error``: the path is in sight; ``note``: the
    values leave for code it cannot see), and where."""

    failure: str
    severity: str
    node: ast.AST | Location | None = None


class HarmModel(ConsumersPart):
    """Failures of one module's address tables (``consumers.harm``)."""

    def signed_table(self, creation: Creation) -> Harm | None:
        """How a signed 64-bit table of addresses (explicit or inferred int64) fails, or None."""
        entry = self.search.ints.python_int_entry(creation)
        if entry is not None:
            return Harm(self.entry_failure(creation, entry), ERROR, entry.node)
        uses = self.search.of_creation(creation)
        read = next((u for u in uses if u.kind in (UseKind.READBACK, UseKind.ORDER)), None)
        if read is not None:
            what = "ordered" if read.kind is UseKind.ORDER else "read back as Python numbers"
            return Harm(
                f"its values are {what} ({describe(read)}): an address >= 2**63 stored in it reads as a "
                "negative number",
                ERROR,
                read.node,
            )
        unwritten = creation.data is None and creation.fill is None and not any(u.write or u.opaque for u in uses)
        # a placeholder nothing writes, kept in a private name nothing in the project reads: no values, no reader
        leave = next((u for u in uses if u.kind is UseKind.ESCAPE and not (u.private and unwritten)), None)
        if leave is not None:
            return Harm(
                f"no Python int enters it (only bits), but its values leave for code ptrlint cannot see "
                f"({describe(leave)}); read back as Python numbers there, an address >= 2**63 is negative",
                NOTE,
                leave.node,
            )
        return None

    def ctypes_read_back(self, field: str | None, container: ast.AST | None) -> ast.AST | None:
        """Where the value of a signed ctypes slot that received an address is read back as a Python
        int (``args.src``, ``view[i]``), or None: ctypes wraps silently and keeps the bits, so a slot that
        only travels as bytes (a kernel's argument block) fails nowhere."""
        self.search.build_index()
        if field is not None:
            return next(iter(self.search.attribute_loads.get(field, [])), None)
        key = self.model.key_of(container) if isinstance(container, (ast.Name, ast.Attribute)) else None
        if key is None:
            return None
        for node in self.search.loads.get(self.facts.root(key), []):
            parent = self.search.parent(node)
            if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
                return parent
        return None

    def ctypes_escape(self, owner: int | None, container: ast.AST | None) -> ast.AST | None:
        """Where a signed ctypes storage object that received addresses leaves for code ptrlint cannot see
        (returned, kept in an attribute), or None: passed on only as bytes (``byref``, a kernel's argument
        block, memory someone else owns), its bits are the address's."""
        model = self.model
        key: Key | None
        if owner is not None:

            def instance(expr: ast.AST) -> bool:
                if isinstance(expr, ast.Call):
                    return model.types.class_of_name(expr.func) == owner
                key = model.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
                return key is not None and any(
                    b.how == "expr" and isinstance(b.expr, ast.Call) and model.types.class_of_name(b.expr.func) == owner
                    for b in model.bindings.get(key, [])
                )

            for returned in model.returns.values():
                found: ast.AST | None = next((r for r in returned if instance(r)), None)
                if found is not None:
                    return found
            for key, bindings in model.bindings.items():
                if isinstance(key, MemberKey):
                    found = next((b.node for b in bindings if b.how == "expr" and instance(b.expr)), None)
                    if found is not None:
                        return found
            return None
        if container is None:
            return None
        self.search.build_index()
        if isinstance(self.search.parent(container), ast.Return):
            return container
        key = model.key_of(container) if isinstance(container, (ast.Name, ast.Attribute)) else None
        for node in self.search.loads.get(self.facts.root(key), []) if key is not None else []:
            if isinstance(self.search.parent(node), ast.Return):
                return node
        return None

    @staticmethod
    def entry_failure(creation: Creation, entry: Entry) -> str:
        """``an address (`data_ptr()`, line 12) enters it at creation: torch raises ...``."""
        effect = OVERFLOW["numpy" if entry.numpy else creation.library or "torch"]
        if creation.library is None or entry.numpy is None:  # a buffer factory's, or a store not seen here
            effect = "torch or numpy raises"
        where = _place(entry.node)
        if entry.encoding == "raw":
            who = f"an address ({source_of(entry.value)})"
        else:
            who = "a Python int that may be an address (known only by its name, or not traced)"
        return f"{who} enters it {entry.how} ({where}): {effect} once the address is >= 2**63"


def source_of(value: Value | None, first: bool = False) -> str:
    """Where an address comes from, as its evidence says (the oldest piece first found), with its place: a line of
    this module, or the path and line of another. ``first``: failing a pointer value, the newest piece."""
    if value is None:
        return "untraced"
    for node, message in reversed(value.evidence):
        if message.startswith("pointer value"):
            return f"{message.partition(': ')[2] or message}, {_place(node)}"
    if first and value.evidence:
        node, message = value.evidence[0]
        return f"{message}, {_place(node)}"
    return "traced"


def _place(node: object) -> str:
    if isinstance(node, Location):  # in another module: say which
        return f"{display_path(node.path)}:{node.line}"
    return f"line {getattr(node, 'lineno', 0)}"
