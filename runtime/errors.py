"""Exceptions of the runtime guard. Every message names what is wrong and how to fix it."""

from __future__ import annotations


class PointerGuardError(RuntimeError):
    """Base class: a pointer table failed a guard check; nothing was copied."""


class PointerDtypeError(PointerGuardError, TypeError):
    """A pointer buffer is not uint64 (signed, narrow or floating)."""


class PointerRoundTripError(PointerGuardError):
    """A stored address did not read back exactly."""


class PointerBoundsError(PointerGuardError):
    """An entry is null, has a bad size, wraps around, or leaves every registered region."""


class PointerOverlapError(PointerGuardError):
    """Two destination ranges overlap, or a destination overlaps another entry's source."""


class PointerCastError(PointerGuardError, OverflowError):
    """Under simulated high addresses: a uint64 address table was converted to a dtype that cannot hold it."""

    def __init__(self, message: str, dtype: str) -> None:
        super().__init__(message)
        self.dtype = dtype
