"""The records the one traversal produces: small data types that the later stages read.

A :class:`Key` names a storage location: a local/global name in its scope, a ``self`` attribute of
a class (all methods share it), an attribute of another object, or a creation call itself. Keys
that alias one buffer are merged with :class:`UnionFind`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, NamedTuple, Union

from .scopes import LiteScope

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


# ----- keys: the storage locations of one module ----------------------------------------------------
# Each kind of key is a tuple whose first item says the kind, so that keys of different kinds never
# compare equal (a dict of keys mixes them); the classes name the items. Build them with the class
# (``NameKey(scope_id, "x")``) and test the kind with isinstance. The classes build the tuple directly
# (``tuple.__new__``), which costs a third less than going through the NamedTuple's own ``__new__``:
# a large module builds hundreds of thousands of keys.
_new = tuple.__new__


class _ScopedNameFields(NamedTuple):
    kind: str
    scope: int  # id of the scope: that binds the name (NameKey), where it is read (PendingNameKey)
    name: str


class _ScopedName(_ScopedNameFields):
    __slots__ = ()

    def __getnewargs__(self) -> tuple[int, str]:
        return self.scope, self.name


class NameKey(_ScopedName):
    """A local or global name, in the scope that binds it."""

    __slots__ = ()

    def __new__(cls, scope: int, name: str) -> NameKey:
        return _new(cls, ("n", scope, name))


class PendingNameKey(_ScopedName):
    """A name read before the traversal knows every binding of the module: made a :class:`NameKey` when it ends."""

    __slots__ = ()

    def __new__(cls, scope: int, name: str) -> PendingNameKey:
        return _new(cls, ("r", scope, name))


class _MemberKey(NamedTuple):
    kind: str
    owner: int | str  # id of a class of this module, or the qualified name of another module's class
    attr: str


class MemberKey(_MemberKey):
    """An attribute of the instances of one class (``self.x`` in every method, ``obj.x`` of a typed ``obj``,
    a dataclass field), or one entry of it (``attr`` ``"[name]"``)."""

    __slots__ = ()

    def __new__(cls, owner: int | str, attr: str) -> MemberKey:
        return _new(cls, ("a", owner, attr))

    def __getnewargs__(self) -> tuple[int | str, str]:
        return self.owner, self.attr


class _ObjectAttributeKey(NamedTuple):
    kind: str
    base: Key
    attr: str


class ObjectAttributeKey(_ObjectAttributeKey):
    """An attribute (or an entry, ``attr`` ``"[name]"``) of an object whose class is not known."""

    __slots__ = ()

    def __new__(cls, base: Key, attr: str) -> ObjectAttributeKey:
        return _new(cls, ("o", base, attr))

    def __getnewargs__(self) -> tuple[Key, str]:
        return self.base, self.attr


class _CreationKey(NamedTuple):
    kind: str
    call: int  # id of the creation call


class CreationKey(_CreationKey):
    """The buffer a creation call makes."""

    __slots__ = ()

    def __new__(cls, call: int) -> CreationKey:
        return _new(cls, ("c", call))

    def __getnewargs__(self) -> tuple[int]:
        return (self.call,)


Key = Union[NameKey, PendingNameKey, MemberKey, ObjectAttributeKey, CreationKey]


@dataclass
class Creation:
    """A tensor/array creation call (or configured buffer factory)."""

    call: ast.Call
    qname: str  # "torch.zeros", "numpy.array", or "factory:make_buffer"
    library: str | None  # "torch", "numpy", or None for factories (decided by the dtype)
    dtype: ast.expr | None
    has_dtype_slot: bool  # False when **kwargs might carry a dtype
    data: ast.expr | None
    fill: ast.expr | None
    scope: LiteScope | None
    target_name: str | None = None
    target_node: ast.AST | None = None
    like_source: ast.expr | None = None  # `empty_like(src)`, `src.new_zeros(n)`: the dtype comes from `src`
    in_raises: bool = False  # inside `with pytest.raises(...)`: a deliberate failure, not a finding
    implicit_signed: bool = False  # a factory call given no dtype: the factory's default is signed
    factory: str | None = None  # a call of another module's factory: its qualified name
    substitutes: bool = False  # the factory puts a signed dtype in place of an unsigned one asked for
    view_library: str | None = None  # a factory that hands on its numpy array as a torch tensor: "torch"
    dtype_kwargs: ast.Name | None = None  # `f(x, **opts)` where `opts = dict(dtype=...)`: the name passed with `**`
    stop: ast.expr | None = None  # a range (`np.arange(start, stop, step)`): its data is the start, this the end

    @property
    def parts(self) -> tuple[ast.expr, ...]:
        """The values the buffer is made of: its data, its fill value, and a range's end."""
        return tuple(p for p in (self.data, self.fill, self.stop) if p is not None)

    @property
    def key(self) -> CreationKey:
        return CreationKey(id(self.call))


@dataclass
class Cast:
    """A value conversion: ``x.long()``, ``x.to(torch.int64)``, ``x.astype(np.int64)``, ``np.int64(x)``."""

    call: ast.Call
    operand: ast.expr
    dtype: ast.expr | None  # None for .long()/.int()
    method: str | None  # "long", "to", "type", "astype" or None for the function form
    dtype_qname: str
    scope: LiteScope | None
    in_raises: bool = False


@dataclass
class CtypesCall:
    call: ast.Call
    ctype: str  # "c_long"
    arg: ast.expr
    scope: LiteScope | None
    valued: bool = False  # `c_int64(p).value`: a deliberate signed reinterpretation, not a kept object
    in_raises: bool = False


@dataclass
class ScalarWrite:
    """``T[i] = v`` or ``T.fill_(v)``; PTR005 candidates."""

    node: ast.AST  # the Assign statement or the fill_ Call
    tensor: ast.expr  # T
    value: ast.expr
    how: str  # "setitem" | "fill_"
    in_raises: bool = False


@dataclass
class Binding:
    how: str  # "expr" | "elem" (an element of expr) | "index" (a loop counter) | "telem" (item `index` of the
    #           tuple a call returns) | "elem-of" (extend) | "seq" (copy_) | "each" (one of the items of a
    #           literal a loop takes in turn: its value, never an alias)
    expr: ast.expr
    node: ast.stmt | ast.expr | ast.keyword  # the statement, expression or keyword that binds
    index: int = -1


class UnionFind:
    """The alias classes of keys. ``find`` walks up and compresses the path with a loop, not a
    recursion: a generated module can chain a hundred thousand aliases (issue 44's nvshmem bindings
    hit the interpreter's recursion limit here)."""

    def __init__(self) -> None:
        self.parent: dict[Key, Key] = {}

    def find(self, key: Key) -> Key:
        parent = self.parent
        root = parent.setdefault(key, key)
        if root == key:
            return key
        path = [key]
        up = parent.setdefault(root, root)
        while up != root:
            path.append(root)
            root = up
            up = parent.setdefault(root, root)
        for step in path:
            parent[step] = root
        return root

    def union(self, a: Key, b: Key) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def members(self) -> dict[Key, list[Key]]:
        groups: dict[Key, list[Key]] = {}
        for key in list(self.parent):
            groups.setdefault(self.find(key), []).append(key)
        return groups


@dataclass(frozen=True)
class FactorySignature:
    """A buffer factory of the project (analysis/semantic/factories.py): which parameter is the data, which the dtype."""

    name: str
    library: str  # "torch" | "numpy"
    data: int | None  # position of the data parameter (``self``/``cls`` not counted); None: made by size
    data_name: str | None
    dtype: int | None  # position of the dtype parameter (None: keyword-only)
    dtype_name: str
    default_signed: bool  # without a dtype argument the buffer is signed (int64 default, or inferred from ints)
    substitution: tuple[int, int] | None = None  # (line, column) of a signed dtype put in place of the caller's
    returns: str | None = None  # the library of what it returns, where not the creation's (`torch.from_numpy(a)`)

    def to_json(self) -> list[Any]:
        return [
            self.name,
            self.library,
            self.data,
            self.data_name,
            self.dtype,
            self.dtype_name,
            self.default_signed,
            list(self.substitution) if self.substitution else None,
            self.returns,
        ]
