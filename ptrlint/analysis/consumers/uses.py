"""The vocabulary of consumers: how a use treats a pointer table (:class:`UseKind`), which fix
that asks for (:func:`choose_fix`), the :class:`Trail` a follow carries from a table to a value
that holds it, and the tables of what torch, numpy and the builtins do with a table.
:mod:`.search` finds the uses; :mod:`.load_uses` and :mod:`.use_kinds` classify each one."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import Enum
from urllib.parse import quote, unquote

from ...names import PASSTHROUGH_METHODS, UNSAFE_METHODS
from ..values.lattice import Location, Origin, Value

MAX_DEPTH = 8

# One step from a value to what it holds: ("index", i) item i of a tuple or list, ("key", k) the
# entry k of a dict, ("item", None) some element of a sequence, ("field", f) the attribute f of an
# object ("field", "*": some attribute of an instance whose class stores it).
Step = tuple[str, object]
Path = tuple[Step, ...]


@dataclass(frozen=True)
class Trail:
    """What a follow knows about the value it is at: where the table sits inside it (``path``,
    outermost step first; empty: the value is the table), whether it is a numpy array (``numpy``),
    whether it was computed from the table by arithmetic (``after``), and how far it has come."""

    numpy: bool = False
    after: bool = False
    depth: int = 0
    path: Path = ()

    def step(self, **changes: object) -> Trail:
        """One step further (the same value, or another as ``changes`` say)."""
        return replace(self, depth=self.depth + 1, **changes)  # type: ignore[arg-type]

    def into(self, step: Step) -> Trail:
        """The value was put into a container (or an object) at ``step``: follow the container."""
        return replace(self, depth=self.depth + 1, path=(step, *self.path))

    @property
    def in_field(self) -> bool:
        """The followed value is an object that holds the table in a field: wherever the object
        goes, the table is read only through the field's name, and every such read is a reader."""
        return any(kind == "field" for kind, _ in self.path)

    def out(self) -> Trail:
        """The container's ``path[0]`` was read: follow what it holds."""
        return replace(self, depth=self.depth + 1, path=self.path[1:])


def path_text(path: Path) -> str:
    """A path as text without ``:``, ``|`` or brackets (part of the keys of the project's recorded
    answers, which are split on those): percent-quoted JSON."""
    return quote(json.dumps([list(step) for step in path], separators=(",", ":")), safe="") if path else ""


def parse_path(text: str) -> Path:
    """The path :func:`path_text` wrote."""
    return tuple((kind, value) for kind, value in json.loads(unquote(text))) if text else ()


class UseKind(Enum):
    READY = "works on uint64"
    READBACK = "reads the values back"  # tolist/item/int()/iteration/element reads: works on uint64
    ESCAPE = "escapes to readers ptrlint cannot see"  # not seen: never proven uint64-ready
    INT64 = "needs int64"  # sign-agnostic: the same 64 bits as int64 keep it right
    RECEIVE = "is written by a collective"  # int64 bits arrive; uint64 is rejected
    ORDER = "compares or reduces the values"  # uint64 lacks the kernels, int64 bits order wrongly above 2**63


@dataclass(frozen=True)
class Use:
    kind: UseKind
    node: ast.AST | Location
    why: str
    after_arithmetic: bool = False  # a use of a table computed from this one by arithmetic
    write: bool = False  # writes into the table (element store, `copy_`/`fill_` on it): reads no value
    metadata: bool = False  # reads only the dtype, shape or device
    opaque: bool = (
        False  # a call into code ptrlint cannot see (compiled, outside the project): it may read or fill the table
    )
    copy: bool = False  # a derived copy (`.repeat()`, `torch.stack`): carries the dtype; a related location
    private: bool = False  # an escape into a private name nothing in the (searched) project reads or calls

    @property
    def exposed(self) -> bool:
        """A derived (computed) table whose values are read or leave: int64 bits would be read as
        negative numbers, and uint64 lacks the arithmetic that made it."""
        return self.after_arithmetic and self.kind in (UseKind.READBACK, UseKind.ESCAPE)

    @property
    def unseen(self) -> bool:
        """ptrlint did not follow the table to its end here: an escape, or code it cannot see. Such a
        use may or may not need int64; the plain uint64 change is offered only as an unsafe fix."""
        return self.kind is UseKind.ESCAPE or (self.kind is UseKind.INT64 and self.opaque)


@dataclass(frozen=True)
class Entry:
    """Where a Python int enters a table: the node, how (``at creation``, ``by an element store``, ...),
    and the value that enters (None: values ptrlint cannot trace)."""

    node: ast.AST | Location
    how: str
    value: Value | None
    via: str = ""  # entered inside a function the table was passed to (its name): a store a fix here cannot reach
    numpy: bool | None = False  # stored through a numpy view of a torch table (numpy raises); None: not known

    @property
    def encoding(self) -> str:
        """``raw`` (an address from an address API, 0..2**64-1), or ``unknown`` (known by a name only,
        or not traced: raw or already wrapped)."""
        return "raw" if self.value is not None and self.value.origin is Origin.RAW else "unknown"


class FixKind(Enum):
    UINT64 = "uint64"
    BIT_PRESERVING = "bit-preserving"
    NONE = "none"


@dataclass(frozen=True)
class FixChoice:
    kind: FixKind
    decider: Use | None  # the use that chose it (None: every use works on uint64)


def choose_fix(uses: Iterable[Use]) -> FixChoice:
    """Plain uint64 only when every use was seen and works on uint64. A sign-sensitive use, a
    collective receive or a computed table that is read back or leaves: no safe fix. Otherwise a
    use that needs int64, or one ptrlint did not follow to its end: bit-preserving (the deciding
    use is the first known int64 consumer, else the first call into code ptrlint cannot see, else
    the first escape)."""
    uses = list(uses)
    for use in uses:
        if use.kind is UseKind.ORDER or use.kind is UseKind.RECEIVE or use.exposed:
            return FixChoice(FixKind.NONE, use)
    wanted: Callable[[Use], bool]
    for wanted in (
        lambda u: u.kind is UseKind.INT64 and not u.opaque,  # a consumer known to need int64
        lambda u: u.kind is UseKind.INT64,  # code ptrlint cannot see
        lambda u: u.kind is UseKind.ESCAPE,
    ):  # readers out of sight
        found = next((use for use in uses if wanted(use)), None)
        if found is not None:
            return FixChoice(FixKind.BIT_PRESERVING, found)
    return FixChoice(FixKind.UINT64, None)


def describe(use: Use, path: str | None = None) -> str:
    """``line 12: `ptrcorpus_ext.gather_pages()` is code outside the project (needs int64)``."""
    if isinstance(use.node, Location):
        where = f"{use.node.path}:{use.node.line}"
    else:
        line = getattr(use.node, "lineno", 0)
        where = f"{path}:{line}" if path else f"line {line}"
    derived = "a table computed from it: " if use.after_arithmetic else ""
    return f"{where}: {derived}{use.why}"


# ----- what torch, numpy and the builtins do with a table ------------------------------------------
# Methods that give a table with the same values and dtype (followed further).
SAME_TABLE_METHODS = (PASSTHROUGH_METHODS - {"tolist", "numpy"}) | frozenset(
    {
        "expand",
        "expand_as",
        "repeat",
        "permute",
        "transpose",
        "t",
        "narrow",
        "select",
        "split",
        "chunk",
        "unbind",
        "roll",
        "gather",
        "take",
        "masked_select",
        "index",
        "__getitem__",
        "as_strided",
        "movedim",
        "swapaxes",
        "sort",
        "unique",
        "type_as",
        "repeat_interleave",
        "tile",
    }
)
READY_METHODS = frozenset(
    {
        "data_ptr",
        "numel",
        "size",
        "dim",
        "stride",
        "element_size",
        "is_contiguous",
        "nbytes",
        "untyped_storage",
        "storage",
        "get_device",
        "is_pinned",
        "eq",
        "ne",
        "equal",
        "__len__",
        "record_stream",
        "argsort",
        "nonzero",
        "any",
        "all",
        "bool",
        "long",
        "int",
        "short",
        "type",
        "astype",
        "register",
        "wait",
        "synchronize",
    }
)
WRITE_METHODS = frozenset(
    {
        "copy_",
        "fill_",
        "zero_",
        "index_copy_",
        "index_fill_",
        "masked_fill_",
        "scatter_",
        "put_",
        "random_",
        "uniform_",
        "normal_",
    }
)
# Methods of another tensor or array that take the table as a tensor argument and work on uint64.
TENSOR_ARGUMENT_METHODS = frozenset(
    {"copy_", "copyto", "view_as", "expand_as", "type_as", "new_tensor", "equal", "eq", "ne"}
)
# Methods of another tensor that take the table as their source and require the two dtypes to match
# (measured on torch 2.13: `index_copy_(): self and source expected to have the same dtype`): a uint64
# table into an int64 buffer raises. `copy_` converts instead (above).
DTYPE_MATCHING_METHODS = frozenset(
    {
        "index_copy_",
        "masked_scatter_",
        "scatter_",
        "put_",
        "set_",
        "index_put_",
        "index_put",
        "index_copy",
        "masked_scatter",
        "scatter",
        "put",
    }
)
# Functions that combine the table with other tensors: uint64 does not promote with int64 (torch 2.13:
# `Promotion for uint16, uint32, uint64 types is not supported`).
COMBINING_FUNCTIONS = frozenset(
    {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack", "torch.where"}
)
READBACK_METHODS = frozenset({"tolist", "item", "__iter__", "tobytes", "__int__"})
ORDER_METHODS = frozenset(
    {
        "max",
        "min",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "aminmax",
        "searchsorted",
        "bucketize",
        "lt",
        "gt",
        "le",
        "ge",
        "clamp",
        "clamp_",
        "clip",
        "topk",
        "kthvalue",
        "median",
        "abs",
        "neg",
        "div",
        "div_",
        "floor_divide",
        "remainder",
        "fmod",
        "mean",
    }
)
INT64_METHODS = UNSAFE_METHODS - ORDER_METHODS | frozenset({"index_fill_", "scatter_add_"})
# Copies that keep the table's dtype and values (torch 2.13 has uint64 kernels for all of them):
# one finding at the source, the copies among its related locations.
COPY_METHODS = frozenset({"repeat_interleave", "repeat", "tile", "clone", "contiguous", "copy"})
COPY_FUNCTIONS = frozenset(
    {
        "torch.repeat_interleave",
        "torch.stack",
        "torch.cat",
        "torch.concat",
        "torch.tile",
        "torch.clone",
        "numpy.repeat",
        "numpy.tile",
        "numpy.stack",
        "numpy.concatenate",
        "numpy.copy",
    }
)
ORDER_FUNCTIONS = frozenset(
    {
        "torch.searchsorted",
        "torch.bucketize",
        "torch.max",
        "torch.min",
        "torch.amax",
        "torch.amin",
        "torch.argmax",
        "torch.argmin",
        "torch.clamp",
        "torch.lt",
        "torch.gt",
        "torch.le",
        "torch.ge",
        "torch.remainder",
        "torch.floor_divide",
        "torch.mean",
        "torch.topk",
        "builtins.max",
        "builtins.min",
    }
)
SAME_TABLE_FUNCTIONS = frozenset(
    {
        "torch.cat",
        "torch.concat",
        "torch.concatenate",
        "torch.stack",
        "torch.hstack",
        "torch.vstack",
        "torch.flatten",
        "torch.reshape",
        "torch.squeeze",
        "torch.unsqueeze",
        "torch.narrow",
        "torch.as_tensor",
        "torch.asarray",
        "torch.from_numpy",
        "torch.clone",
        "torch.gather",
        "torch.take",
        "torch.sort",
        "torch.unique",
        "torch.roll",
        "torch.broadcast_to",
        "torch.tensor",
        "numpy.asarray",
        "numpy.array",
        "numpy.ascontiguousarray",
        "numpy.concatenate",
        "numpy.stack",
        "numpy.hstack",
        "numpy.vstack",
        "numpy.copy",
        "numpy.take",
        "numpy.reshape",
        "numpy.sort",
        "numpy.unique",
        "numpy.frombuffer",
        "builtins.list",
        "builtins.tuple",
        "builtins.sorted",
        "builtins.reversed",
        "torch.repeat_interleave",
        "torch.tile",
        "numpy.repeat",
        "numpy.tile",
        "copy.deepcopy",
        "copy.copy",  # the copy's own uses are followed; but see REDUCED_COPIES
    }
)
# Copies rebuilt from a table's pickled (reduced) form: a numpy uint64 array comes back whole, a torch
# uint64 tensor does not (torch 2.13: rebuilding fails in torch.storage, `UntypedStorage` has no
# `_untyped_storage`); `copy.deepcopy` clones a tensor instead and keeps uint64. tests/linter/test_consumers.py
# runs all three.
REDUCED_COPIES = frozenset({"copy.copy"})
LIKE_FUNCTIONS = frozenset(
    {
        "torch.empty_like",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "numpy.empty_like",
        "numpy.zeros_like",
        "numpy.ones_like",
    }
)
READY_FUNCTIONS = frozenset(
    {
        "builtins.len",
        "builtins.isinstance",
        "builtins.id",
        "builtins.print",
        "builtins.repr",
        "builtins.type",
        "builtins.hash",
        "builtins.bool",
        "builtins.getattr",
        "builtins.hasattr",
        "torch.equal",
        "torch.is_tensor",
        "torch.numel",
        "numpy.shape",
        "numpy.size",
        "numpy.array_equal",
        "numpy.copyto",
    }
)
READBACK_FUNCTIONS = frozenset(
    {
        "builtins.int",
        "builtins.float",
        "builtins.hex",
        "builtins.str",
        "builtins.iter",
        "builtins.next",
        "builtins.enumerate",
        "builtins.zip",
        "builtins.map",
        "builtins.set",
        "builtins.frozenset",
        "builtins.dict",
        "builtins.sum",
    }
)
LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)


def copied(call: ast.Call, name: str, after: bool) -> list[Use]:
    """A derived copy of the table (``.repeat()``, ``torch.stack``): it carries the dtype, so the
    finding at the source lists it; reads nothing itself (its own uses are followed)."""
    if name not in COPY_METHODS and name not in COPY_FUNCTIONS:
        return []
    spelled = name.rpartition(".")[2]
    return [Use(UseKind.READY, call, f"`{spelled}` copy carries this dtype", after, metadata=True, copy=True)]
