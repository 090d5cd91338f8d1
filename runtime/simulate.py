"""Simulated high addresses: make pointer-table bugs fail in ordinary CPU (or CUDA) test runs.

CUDA and CPU hosts hand out addresses below 2**63, so a pointer table built as int64 passes
every test and fails on the first Intel XPU or unified-memory host. Under
``simulate_high_addresses()`` the address APIs Python code reads (``Tensor.data_ptr``,
``UntypedStorage.data_ptr``, ``TypedStorage.data_ptr``) return ``real + offset`` (offset
2**63 by default), so the same code fails where it would fail on such a host:
``torch.tensor(addrs, dtype=torch.int64)`` raises ``Overflow when unpacking long long``, a
numpy int64 store raises ``OverflowError``, and a uint64 table converted to a signed, narrow
or floating dtype (``.long()``, ``.to(torch.int64)``, ...) raises ``PointerCastError``.

Everything in ``ptrlint.runtime`` that dereferences or validates addresses (``batch_memcpy``
on both backends, the region registry, the strict checks) translates shifted addresses back
before a byte moves, so guarded paths still copy the right bytes. Code that dereferences a
shifted address by itself (ctypes, a kernel fed a table it did not get from ``ptrlint.runtime``)
would fault: the mode is for table-building code and guarded copy paths.

The mode is process-wide (the patched methods are class attributes) and reference counted:
nested and concurrent uses from several threads share one offset, and the originals come back
when the last use ends, also after an exception. Calls made from torch's or Triton's own
Python code (a Triton launcher reading a kernel argument's address, ``__cuda_array_interface__``)
get real addresses: those addresses are dereferenced, not tabled.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar, cast

from ._env import ENV_VAR, requested_value
from ._torch import np, torch
from .errors import PointerCastError, PointerGuardError

DEFAULT_OFFSET = 1 << 63
# The largest real address the mode accepts: 57-bit virtual addresses (x86-64 5-level paging)
# cover every CPU and GPU user-space allocation; real + offset must stay below 2**64.
REAL_ADDRESS_LIMIT = 1 << 57
_ALIGNMENT = 1 << 12  # the offset keeps every page-or-smaller alignment of the real address
_TOP_BIT = 1 << 63
# Callers whose addresses are dereferenced rather than tabled (top-level package names).
LIBRARY_CALLERS = frozenset({"torch", "triton"})

F = TypeVar("F", bound=Callable[..., Any])


def validate_offset(offset: int) -> int:
    """The offset as an int, or ValueError saying which bound it breaks."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"offset must be an int, got {type(offset).__name__}")
    if offset < _TOP_BIT:
        raise ValueError(
            f"offset {offset:#x} is below 2**63: shifted addresses must be >= 2**63 to expose signed tables"
        )
    if offset + REAL_ADDRESS_LIMIT > 1 << 64:
        raise ValueError(
            f"offset {offset:#x} is too large: real addresses up to 2**57 must stay below 2**64 once shifted "
            f"(use at most {(1 << 64) - REAL_ADDRESS_LIMIT:#x})"
        )
    if offset % _ALIGNMENT:
        raise ValueError(f"offset {offset:#x} must be a multiple of {_ALIGNMENT:#x} to keep addresses aligned")
    return offset


class _State:
    """Process-wide: the patches, their reference count and the offset."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.offset = 0  # 0 while the mode is off
        self.handed_out = False  # a shifted address was returned since the mode began
        self.originals: dict[tuple[type, str], Any] = {}
        self.local = threading.local()  # .stack: this thread's nested uses; the innermost one decides


_state = _State()


def active() -> bool:
    """True while simulated high addresses are on (in any thread)."""
    return _state.offset != 0


def current_offset() -> int:
    """The offset added to addresses, or 0 when the mode is off."""
    return _state.offset


def _stack() -> list[bool]:
    stack = getattr(_state.local, "stack", None)
    if stack is None:
        stack = _state.local.stack = []
    return stack


def _suspended() -> bool:
    """True inside a real_addresses() block of this thread that no simulate_high_addresses() re-opened."""
    stack = getattr(_state.local, "stack", None)
    return bool(stack) and not cast("list[bool]", stack)[-1]  # a non-empty stack


def _library_caller(depth: int) -> bool:
    name = sys._getframe(depth + 1).f_globals.get("__name__", "")
    return name.partition(".")[0] in LIBRARY_CALLERS


def _shift(addr: int) -> int:
    if addr == 0:
        return 0  # a null (empty) allocation stays null: tables test for 0 as "unfilled"
    if addr >= REAL_ADDRESS_LIMIT:
        raise OverflowError(
            f"real address {addr:#x} is at or above 2**57: this host already hands out high addresses, "
            "so simulate_high_addresses cannot shift it; run without the simulation"
        )
    _state.handed_out = True
    return addr + _state.offset


def to_real(addr: int) -> int:
    """Undo the shift of one address (identity when the mode is off or ``addr`` is not shifted)."""
    offset = _state.offset
    addr = int(addr)
    return addr - offset if offset and addr >= offset else addr


def to_real_array(addrs: np.ndarray) -> np.ndarray:
    """Undo the shift of a host uint64 table (a new array when anything changed)."""
    offset = _state.offset
    if not offset or addrs.dtype != np.uint64 or not len(addrs):
        return addrs
    off = np.uint64(offset)
    shifted = addrs >= off
    if not shifted.any():
        return addrs
    return np.where(shifted, addrs - off, addrs)


def to_real_tensor(addrs: torch.Tensor) -> torch.Tensor:
    """Undo the shift of a uint64 table on any device, without leaving it (int64 bit arithmetic)."""
    offset = _state.offset
    if not offset or addrs.dtype != torch.uint64 or addrs.numel() == 0:
        return addrs
    bits = addrs.view(torch.int64)
    # Real addresses are below 2**57 and shifted ones at or above 2**63: the sign bit tells them apart.
    # (bits & (2**63 - 1)) is addr - 2**63 for a shifted entry; subtracting offset - 2**63 (>= 0) gives
    # addr - offset with no int64 overflow anywhere.
    real = (bits & (_TOP_BIT - 1)) - (offset - _TOP_BIT)
    return torch.where(bits < 0, real, bits).view(torch.uint64)


@contextmanager
def real_addresses() -> Iterator[None]:
    """In this thread, address APIs return real addresses while the block runs (the mode stays on elsewhere)."""
    stack = _stack()
    stack.append(False)
    try:
        yield
    finally:
        stack.pop()


# ----- the patches -------------------------------------------------------------------------------
def _address_wrapper(original: Callable[[Any], int]) -> Callable[[Any], int]:
    @functools.wraps(original)
    def data_ptr(self: Any) -> int:
        addr = original(self)
        if not _state.offset or _suspended() or _library_caller(1):
            return addr
        return _shift(addr)

    return data_ptr


_CAST_METHODS = ("to", "type", "long", "int", "short", "char", "byte", "float", "double", "half", "bfloat16")
_HOLDS_ADDRESSES = (torch.uint64, torch.bool)  # bool keeps "is it null"; everything else loses bits


def _describe_loss(dtype: torch.dtype) -> str:
    if dtype.is_floating_point or dtype.is_complex:
        return "rounds it (floating point holds 53 bits at most)"
    if dtype == torch.int64:
        return "flips its sign"
    return "truncates it"


def _check_cast(source: torch.Tensor, result: Any) -> None:
    dtype = getattr(result, "dtype", None)
    if not isinstance(result, torch.Tensor) or dtype in _HOLDS_ADDRESSES or source.numel() == 0:
        return
    with real_addresses():
        high = source.detach().reshape(-1).view(torch.int64) < 0
        if not bool(high.any()):
            return
        index = int(torch.nonzero(high)[0, 0])
        value = int(source.detach().reshape(-1)[index : index + 1].view(torch.int64).cpu()[0]) + (1 << 64)
    name = str(dtype).replace("torch.", "")
    error = PointerCastError(
        f"converting a uint64 tensor that holds address {value:#x} (flat entry {index}) to {name} "
        f"{_describe_loss(cast('torch.dtype', dtype))}; keep addresses uint64, or reinterpret the bits explicitly with "
        "`.view(torch.int64)` for a consumer whose schema takes int64 (ptrlint PTR004)",
        dtype=name,
    )
    annotate(error)  # the note is there even where the caller catches it
    raise error


def _cast_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def cast(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if (
            _state.offset
            and getattr(self, "dtype", None) == torch.uint64
            and result is not self
            and not _suspended()
            and not _library_caller(1)
        ):
            _check_cast(self, result)
        return result

    return cast


def _patch_targets() -> list[tuple[type, str, Callable[[Any], Any]]]:
    targets: list[tuple[type, str, Callable[[Any], Any]]] = [
        (torch.Tensor, "data_ptr", _address_wrapper),
        (torch.UntypedStorage, "data_ptr", _address_wrapper),
        (torch.TypedStorage, "data_ptr", _address_wrapper),
    ]
    targets += [(torch.Tensor, name, _cast_wrapper) for name in _CAST_METHODS]
    return targets


def _install() -> None:
    for owner, name, wrap in _patch_targets():
        own = owner.__dict__.get(name, _MISSING)
        _state.originals[(owner, name)] = own
        setattr(owner, name, wrap(getattr(owner, name)))


def _restore() -> None:
    for (owner, name), own in _state.originals.items():
        if own is _MISSING:
            delattr(owner, name)  # it was inherited from the C base class: inherit it again
        else:
            setattr(owner, name, own)
    _state.originals.clear()


_MISSING = object()


def _enable(offset: int) -> None:
    validate_offset(offset)
    with _state.lock:
        if _state.depth and offset != _state.offset:
            raise ValueError(
                f"simulated high addresses are already on with offset {_state.offset:#x}; a nested or concurrent "
                f"use cannot switch to {offset:#x} (addresses already handed out would no longer translate)"
            )
        if _state.depth == 0:
            _install()
            _state.offset = offset
            _state.handed_out = False
        _state.depth += 1


def _disable() -> None:
    with _state.lock:
        if _state.depth == 0:
            raise RuntimeError("simulate_high_addresses: exit without a matching enter")
        _state.depth -= 1
        if _state.depth == 0:
            _state.offset = 0
            _restore()


class simulate_high_addresses:
    """Context manager and decorator: address APIs return ``real + offset`` while it is active.

    >>> with simulate_high_addresses():
    ...     torch.tensor([t.data_ptr()], dtype=torch.int64)   # raises, with a note naming the remedy
    """

    def __init__(self, offset: int = DEFAULT_OFFSET) -> None:
        self.offset = validate_offset(offset)

    def __enter__(self) -> simulate_high_addresses:
        _enable(self.offset)
        _stack().append(True)  # inside a real_addresses() block, this use shifts this thread again
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Literal[False]:
        try:
            if exc is not None:
                annotate(exc)
        finally:
            stack = _stack()
            if stack and stack[-1]:
                stack.pop()
            _disable()
        return False

    def __call__(self, func: F) -> F:
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with simulate_high_addresses(self.offset):
                    return await func(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with simulate_high_addresses(self.offset):
                return func(*args, **kwargs)

        return run  # type: ignore[return-value]

    # conveniences for tests that hold the context object
    def to_real(self, addr: int) -> int:
        return to_real(addr)

    def __repr__(self) -> str:
        return f"simulate_high_addresses(offset={self.offset:#x})"


# ----- notes on failures -------------------------------------------------------------------------
_NOTE_MARK = "ptrlint: simulated high addresses"
_OVERFLOW_PATTERNS = (
    (re.compile(r"Overflow when unpacking long long"), "a signed 64-bit (or narrower) integer dtype"),
    (re.compile(r"cannot be converted to type (\w+?)(?:_t)? without overflow"), None),
    (re.compile(r"too large to convert to C (long long|long|int)"), None),
    (re.compile(r"out of bounds for (\w+)"), None),
    (re.compile(r"has dtype (\w+)"), None),
    (re.compile(r"the view has dtype (\w+)"), None),
)
_C_TYPES = {
    "long long": "int64",
    "long": "a signed numpy integer dtype (numpy converts through C long)",
    "int": "int32 (C int)",
}


def _offending_dtype(exc: BaseException) -> str | None:
    if isinstance(exc, PointerCastError):
        return exc.dtype
    if not isinstance(exc, (OverflowError, ValueError, RuntimeError, TypeError)):
        return None
    text = str(exc)
    for pattern, fixed in _OVERFLOW_PATTERNS:
        match = pattern.search(text)
        if match:
            if fixed is not None:
                return fixed
            found = match.group(1)
            return _C_TYPES.get(found, found)
    return None


def _rules_for(exc: BaseException, dtype: str) -> str:
    if isinstance(exc, PointerCastError):
        return "PTR004 signed-pointer-cast"
    if re.search(r"\b(u?int(8|16|32)|float|half|bfloat16|double|C int)\b", dtype):
        return "PTR003 narrow-pointer-dtype"
    return "PTR001 signed-pointer-dtype, PTR002 implicit-pointer-dtype, PTR005 pointer-setitem"


def describe(exc: BaseException) -> str | None:
    """The note for an exception a simulated address caused, or None when it is not one."""
    if not _state.handed_out:
        return None
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        dtype = _offending_dtype(cause)
        if dtype is not None:
            return (
                f"{_NOTE_MARK} (offset {_state.offset:#x}) are on: data_ptr() returns addresses >= 2**63, as "
                f"on Intel XPU and some ROCm or unified-memory hosts, and {dtype} cannot hold them. Store "
                f"addresses as torch.uint64 / np.uint64 (ptrlint {_rules_for(cause, dtype)}; `ptrlint --fix` "
                "rewrites the dtype)."
            )
        if isinstance(cause, PointerGuardError):
            return (
                f"{_NOTE_MARK} (offset {_state.offset:#x}) are on: ptrlint.runtime translated the shifted "
                "addresses back before checking; the message shows each address as the table holds it and the real one."
            )
        cause = cause.__cause__ or cause.__context__
    return None


def annotate(exc: BaseException) -> bool:
    """Add the note to ``exc`` (once) when a simulated address caused it; True when it did."""
    note = describe(exc)
    if note is None:
        return False
    if any(str(n).startswith(_NOTE_MARK) for n in getattr(exc, "__notes__", ())):
        return True
    exc.add_note(note)
    return True


# ----- process-wide mode from the environment ----------------------------------------------------
def offset_from_environment(value: str | None = None) -> int | None:
    """The offset $PTRLINT_SIMULATE_HIGH_ADDRESSES asks for (1/true/on: 2**63; a number: itself), else None."""
    raw = requested_value(value)
    if raw is None:
        return None
    if raw in ("1", "true", "yes", "on"):
        return DEFAULT_OFFSET
    try:
        return validate_offset(int(raw, 0))
    except ValueError as exc:
        raise ValueError(
            f"{ENV_VAR}={raw!r}: use 1 (offset 2**63) or an offset such as 0x8000000000000000 ({exc})"
        ) from None


_environment_mode = False


def _chain_hook(previous: Callable[..., Any], pick: Callable[[Any], BaseException | None]) -> Callable[..., Any]:
    def hook(*args: Any) -> Any:
        exc = pick(args)
        if exc is not None:
            annotate(exc)
        return previous(*args)

    return hook


def enable_from_environment() -> bool:
    """Turn the mode on for the rest of the process when $PTRLINT_SIMULATE_HIGH_ADDRESSES asks for it."""
    global _environment_mode
    offset = offset_from_environment()
    if offset is None or _environment_mode:
        return _environment_mode
    _enable(offset)
    _environment_mode = True
    # uncaught failures (scripts, worker threads) get the note too
    sys.excepthook = _chain_hook(sys.excepthook, lambda a: a[1])
    threading.excepthook = _chain_hook(threading.excepthook, lambda a: a[0].exc_value)
    return True


enable_from_environment()
