"""Canonical name tables: dtypes, creation calls, casts, ctypes wrappers and collectives. Name evidence
(the pointer and look-alike name patterns) is :mod:`.pointer_names`'. Imports nothing of ptrlint.

Everything here is keyed by *qualified* names as the scope model (analysis/semantic/scopes.py) resolves them
(``import torch as th; th.long`` -> ``torch.long``), never by the text a file happens to use.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class DtypeClass(Enum):
    SIGNED64 = "signed 64-bit"
    NARROW = "narrow"
    UNSIGNED64 = "unsigned 64-bit"
    OTHER = "other"


_TORCH_SIGNED64 = {"int64", "long"}
_TORCH_NARROW = {
    "int32",
    "int",
    "int16",
    "short",
    "int8",
    "uint8",
    "uint16",
    "uint32",
    "float",
    "float32",
    "float64",
    "double",
    "float16",
    "half",
    "bfloat16",
}
_TORCH_UNSIGNED64 = {"uint64"}
_NUMPY_SIGNED64 = {"int64", "intp", "longlong", "int_", "long", "signedinteger"}
_NUMPY_NARROW = {
    "int32",
    "int16",
    "int8",
    "uint32",
    "uint16",
    "uint8",
    "intc",
    "uintc",
    "short",
    "ushort",
    "byte",
    "ubyte",
    "float16",
    "float32",
    "float64",
    "half",
    "single",
    "double",
    "float_",
    "longdouble",
    "float128",
}
_NUMPY_UNSIGNED64 = {"uint64", "uintp", "ulonglong", "uint", "ulong"}
# numpy spells dtypes as strings too; torch does not accept strings.
_STRING_SIGNED64 = {"int64", "i8", "<i8", "=i8", "long", "longlong", "intp", "int", "int_", "q", "p"}
_STRING_NARROW = {
    "int32",
    "int16",
    "int8",
    "uint32",
    "uint16",
    "uint8",
    "i4",
    "<i4",
    "i2",
    "i1",
    "u4",
    "<u4",
    "u2",
    "u1",
    "float",
    "float16",
    "float32",
    "float64",
    "double",
    "single",
    "half",
    "f2",
    "f4",
    "f8",
    "<f4",
    "<f8",
    "d",
    "f",
}
_STRING_UNSIGNED64 = {"uint64", "u8", "<u8", "=u8", "uintp", "ulonglong", "uint", "Q", "P"}

# numpy dtype strings that name a signed integer type, by the qualified dtype they spell (`np.dtype("i8")`).
SIGNED_DTYPE_STRINGS = {
    "int64": "numpy.int64",
    "i8": "numpy.int64",
    "<i8": "numpy.int64",
    "int32": "numpy.int32",
    "i4": "numpy.int32",
    "intp": "numpy.intp",
    "long": "numpy.int64",
}


def classify_qualified_dtype(qname: str) -> tuple[DtypeClass, str] | None:
    """Classify ``torch.int64`` / ``numpy.intp`` / ``builtins.int``; library is "torch" or "numpy"."""
    module, _, attr = qname.rpartition(".")
    if module == "torch":
        if attr in _TORCH_SIGNED64:
            return DtypeClass.SIGNED64, "torch"
        if attr in _TORCH_NARROW:
            return DtypeClass.NARROW, "torch"
        if attr in _TORCH_UNSIGNED64:
            return DtypeClass.UNSIGNED64, "torch"
        if attr in {"bool", "complex64", "complex128", "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2"}:
            return DtypeClass.OTHER, "torch"
        return None
    if module == "numpy":
        if attr in _NUMPY_SIGNED64:
            return DtypeClass.SIGNED64, "numpy"
        if attr in _NUMPY_NARROW:
            return DtypeClass.NARROW, "numpy"
        if attr in _NUMPY_UNSIGNED64:
            return DtypeClass.UNSIGNED64, "numpy"
        if attr in {"bool_", "complex64", "complex128", "object_", "str_", "bytes_"}:
            return DtypeClass.OTHER, "numpy"
        return None
    return None


_INT32_NAMES = {"int32", "uint32", "int", "intc", "uintc", "i4", "<i4", "u4", "<u4", "=i4", "=u4"}


def is_32bit_integer(name: str) -> bool:
    """``int32``/``uint32`` in any spelling (``torch.int``, ``np.intc``, ``"i4"``)."""
    return name in _INT32_NAMES


def classify_builtin_dtype(name: str) -> DtypeClass | None:
    """Python types used as dtypes: ``int`` is int64 in both libraries, ``float`` float64."""
    return {"int": DtypeClass.SIGNED64, "float": DtypeClass.NARROW, "bool": DtypeClass.OTHER}.get(name)


def classify_string_dtype(text: str) -> DtypeClass | None:
    if text in _STRING_SIGNED64:
        return DtypeClass.SIGNED64
    if text in _STRING_NARROW:
        return DtypeClass.NARROW
    if text in _STRING_UNSIGNED64:
        return DtypeClass.UNSIGNED64
    return None


# Creation calls: qualified name -> (library, index of a positional dtype or None, index of the data argument or None,
#                                    whether the dtype is inferred from data when omitted)
CREATION_CALLS: dict[str, tuple[str, int | None, int | None, bool]] = {
    "torch.tensor": ("torch", None, 0, True),
    "torch.as_tensor": ("torch", None, 0, True),
    "torch.asarray": ("torch", None, 0, True),
    "torch.zeros": ("torch", None, None, False),
    "torch.empty": ("torch", None, None, False),
    "torch.ones": ("torch", None, None, False),
    "torch.full": ("torch", None, None, False),
    "torch.empty_strided": ("torch", None, None, False),
    "torch.zeros_like": ("torch", None, None, False),
    "torch.empty_like": ("torch", None, None, False),
    "torch.ones_like": ("torch", None, None, False),
    "torch.full_like": ("torch", None, None, False),
    "numpy.array": ("numpy", 1, 0, True),
    "numpy.asarray": ("numpy", 1, 0, True),
    "numpy.ascontiguousarray": ("numpy", 1, 0, True),
    "numpy.zeros": ("numpy", 1, None, False),
    "numpy.empty": ("numpy", 1, None, False),
    "numpy.ones": ("numpy", 1, None, False),
    "numpy.full": ("numpy", 2, None, False),
    "numpy.fromiter": ("numpy", 1, 0, True),
    "numpy.zeros_like": ("numpy", 1, None, False),
    "numpy.empty_like": ("numpy", 1, None, False),
    "numpy.ones_like": ("numpy", 1, None, False),
    "numpy.arange": ("numpy", 3, 0, False),  # a range from a start (two bounds or more: RANGE_CALLS)
}
# Creations whose elements run from their first argument to their second (`np.arange(start, stop, step)`):
# a creation only with both bounds given (`np.arange(n)` counts from zero: an index, never a table).
RANGE_CALLS = frozenset({"numpy.arange"})
# Modules that mirror numpy's array API: their dtypes are numpy's own scalar types and their creation
# functions take numpy's arguments and convert Python ints by numpy's rules (`cupy.array([p],
# dtype=cupy.uint64)` raises for a negative `p` exactly as numpy does). A qualified name of one of them
# that numpy also defines (`cupy.uintp`, `cupy.arange`) is read as numpy's as well (model.qualified_names).
NUMPY_MIRRORS = frozenset({"cupy"})
_NUMPY_MIRRORED = frozenset(
    {
        *_NUMPY_SIGNED64,
        *_NUMPY_NARROW,
        *_NUMPY_UNSIGNED64,
        "arange",
        *(q.partition(".")[2] for q in CREATION_CALLS if q.startswith("numpy.") and q != "numpy.fromiter"),
    }
)


def numpy_twin(qname: str) -> str | None:
    """numpy's name for a name of a module that mirrors its array API (``cupy.uintp`` -> ``numpy.uintp``)."""
    module, _, attr = qname.rpartition(".")
    return f"numpy.{attr}" if module in NUMPY_MIRRORS and attr in _NUMPY_MIRRORED else None


# Concrete signed 64-bit dtypes by qualified name: what a bit-preserving `.view(...)` hands on (and a `.dtype`
# check insists on). numpy's abstract `signedinteger` and its platform-dependent `long` are left out.
SIGNED64_DTYPES = frozenset(
    {*(f"torch.{n}" for n in _TORCH_SIGNED64), *(f"numpy.{n}" for n in ("int64", "intp", "longlong", "int_"))}
)
# numpy scalar types that convert a Python int (`np.int64(p)`: raises above 2**63-1, `np.int32(p)`: truncates).
NUMPY_SCALAR_CASTS = frozenset({q for q in SIGNED64_DTYPES if q.startswith("numpy.")} | {"numpy.int32"})
# Signed integer dtypes a dtype expression may resolve to (`dtype=...`, a `.dtype` comparison, a default).
SIGNED_DTYPE_QNAMES = (
    SIGNED64_DTYPES
    | NUMPY_SCALAR_CASTS
    | frozenset({"torch.int32", "torch.int", "torch.int16", "torch.short", "builtins.int"})
)
# Last names of explicit signed 64-bit element types a consumer may be given with a table (`cutlass.Int64`, `tl.int64`).
ELEMENT_TYPE_NAMES = frozenset({"Int64", "int64", "Int64_t", "int64_t"})
# Calls whose missing dtype means int64 inferred from pointer values (PTR002).
IMPLICIT_DTYPE_CALLS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.asarray", "numpy.array", "numpy.asarray", "numpy.ascontiguousarray"}
)
# Calls that take a fill value which may itself be a pointer value.
FILL_VALUE_INDEX = {"torch.full": 1, "numpy.full": 1}

# PTR006: signed ctypes integers. SIGNED64 ones get a safe fix, narrower ones an unsafe fix.
CTYPES_SIGNED64 = frozenset({"c_long", "c_int64", "c_longlong", "c_ssize_t"})
# The same types qualified: `ctypes.c_int64(p).value` reinterprets an address as signed on purpose.
CTYPES_SIGNED64_QNAMES = frozenset(f"ctypes.{n}" for n in CTYPES_SIGNED64)
CTYPES_NARROW = frozenset(
    {
        "c_int",
        "c_int32",
        "c_int16",
        "c_int8",
        "c_short",
        "c_byte",
        "c_uint",
        "c_uint32",
        "c_uint16",
        "c_uint8",
        "c_ushort",
        "c_ubyte",
        "c_double",
        "c_float",
    }
)

# Methods that convert a tensor or array to another dtype (`.long()`, `.to(torch.int64)`, `.astype(np.int64)`).
CAST_METHODS = ("long", "int", "short", "to", "type", "astype")
# Methods that give a tensor of the receiver's dtype (`t.new_zeros(n)`).
NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_full", "new_ones", "new_tensor"})
# Value-preserving operations: the result holds the same pointer values as the receiver.
PASSTHROUGH_METHODS = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "clone",
        "contiguous",
        "numpy",
        "pin_memory",
        "share_memory_",
        "detach",
        "copy",
        "tolist",
        "reshape",
        "view_as",
        "flatten",
        "ravel",
        "squeeze",
        "unsqueeze",
        "copy_to_gpu",
        "copy_to_cpu",
        "flip",
    }
)
# The pass-through methods whose result is a torch tensor when the receiver is one (and `.view(dtype)`).
TENSOR_RESULT_METHODS = frozenset(
    {"to", "cuda", "cpu", "clone", "contiguous", "pin_memory", "detach", "view", "reshape", "copy_to_gpu"}
)
# Attributes that view a buffer without changing its values (CpuGpuBuffer, numpy).
VIEW_ATTRIBUTES = frozenset({"np", "cpu", "gpu", "T", "data"})
# Methods and functions uint64 tensors lack kernels for (analysis/consumers/uses.py: uses that need int64, or order).
UNSAFE_METHODS = frozenset(
    {
        "max",
        "min",
        "sum",
        "prod",
        "cumsum",
        "cumprod",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "aminmax",
        "mean",
        "searchsorted",
        "index_select",
        "index_put_",
        "index_put",
        "index_add_",
        "index_add",
        "diff",
        "bucketize",
        "isin",
        "add",
        "add_",
        "sub",
        "sub_",
        "div",
        "div_",
        "floor_divide",
        "remainder",
        "fmod",
        "lt",
        "gt",
        "le",
        "ge",
        "clamp",
        "clamp_",
        "clip",
        "abs",
        "neg",
        "topk",
        "kthvalue",
        "median",
    }
)
UNSAFE_FUNCTIONS = frozenset(
    {
        "torch.searchsorted",
        "torch.bucketize",
        "torch.index_select",
        "torch.max",
        "torch.min",
        "torch.sum",
        "torch.prod",
        "torch.cumsum",
        "torch.amax",
        "torch.amin",
        "torch.argmax",
        "torch.argmin",
        "torch.add",
        "torch.sub",
        "torch.diff",
        "torch.isin",
        "torch.clamp",
        "torch.where",
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
        "builtins.sum",
        "numpy.searchsorted",
        "numpy.max",
        "numpy.min",
        "numpy.sum",
        "numpy.diff",
        "numpy.cumsum",
    }
)


# Every finding also needs a *site*, and every site leaves a word in the text. Each rule declares
# the words its sites leave (``Rule.site_words``, ``Rule.site_methods``) and the prefilter takes
# their union from the catalog (ptrlint/catalog.py, generated from the rules). The words the rules
# share: a creation call (its last name is spelled at the call or in its import, `from torch import
# zeros as z` included) or a method that copies a tensor's dtype (`t.new_zeros(n)`); a configured
# buffer factory is added by the prefilter itself.
# (a range holds addresses only when its start is one: a module with none holds no site for one)
CREATION_SITE_WORDS = (
    *sorted({q.rpartition(".")[2] for q in CREATION_CALLS if q not in RANGE_CALLS}),
    *sorted(NEW_METHODS),
)
# A numpy scalar cast (`np.int64(p)`) spells its dtype's name.
NUMPY_SCALAR_CAST_WORDS = tuple(sorted(q.rpartition(".")[2] for q in NUMPY_SCALAR_CASTS))


class Collective(NamedTuple):
    """A ``torch.distributed`` collective: the argument positions that receive values (any other position
    holding a pointer table sends it; collectives reject uint64 either way), and how the evidence model
    follows the sent values to a receiver: ``"each"`` (every element of the output list gets the input's
    values), ``"whole"`` (the output tensor gets them), ``"kept"`` (the tensor keeps the root's values),
    None (not followed)."""

    receives: tuple[int, ...]
    flow: str | None = None


# torch.distributed collectives by last name (`torch.distributed.all_gather`, `dist.broadcast`).
COLLECTIVES: dict[str, Collective] = {
    "all_gather": Collective((0,), "each"),
    "all_gather_into_tensor": Collective((0,), "whole"),
    "_all_gather_base": Collective((0,), "whole"),
    "all_gather_object": Collective((0,)),
    "broadcast": Collective((0,), "kept"),
    "all_reduce": Collective((0,)),
    "reduce": Collective((0,)),
    "send": Collective(()),
    "isend": Collective(()),
    "recv": Collective((0,)),
    "irecv": Collective((0,)),
    "scatter": Collective((0,)),
    "gather": Collective((1,)),
    "reduce_scatter": Collective((0,)),
    "reduce_scatter_tensor": Collective((0,)),
    "all_to_all": Collective((0,)),
    "all_to_all_single": Collective((0,)),
    "broadcast_object_list": Collective((0,)),
}
# The collectives whose flow the evidence model follows.
FOLLOWED_COLLECTIVES = frozenset(name for name, collective in COLLECTIVES.items() if collective.flow is not None)
# Keyword arguments of collectives, by the position they stand for.
COLLECTIVE_KEYWORDS = {
    "tensor": 0,
    "tensor_list": 0,
    "output": 0,
    "output_tensor": 0,
    "output_tensor_list": 0,
    "input": 1,
    "input_tensor": 1,
    "input_tensor_list": 1,
}
