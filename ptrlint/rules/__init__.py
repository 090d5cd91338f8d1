"""The explicit rule registry. Codes are stable; the registry test checks the invariants."""

from __future__ import annotations

from .base import Rule
from .ctypes_signed_pointer import CtypesSignedPointer
from .implicit_pointer_dtype import ImplicitPointerDtype
from .narrow_pointer_dtype import NarrowPointerDtype
from .pointer_setitem import PointerSetitem
from .signed_pointer_arithmetic import SignedPointerArithmetic
from .signed_pointer_cast import SignedPointerCast
from .signed_pointer_dtype import SignedPointerDtype
from .signed_pointer_sink import SignedPointerSink
from .wrapped_pointer_unsigned import WrappedPointerUnsigned

ALL_RULES: tuple[type[Rule], ...] = (
    SignedPointerDtype,
    ImplicitPointerDtype,
    NarrowPointerDtype,
    SignedPointerCast,
    PointerSetitem,
    CtypesSignedPointer,
    SignedPointerArithmetic,
    SignedPointerSink,
    WrappedPointerUnsigned,
)
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule"]
