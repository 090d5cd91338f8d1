"""Values of the address catalogue (ptrlint/addresses.py): which calls and attributes evaluate to
addresses, for the transfer functions (:mod:`.transfer`)."""

from __future__ import annotations

import ast

from ...addresses import (
    CUPY_MEMORY_CALLS,
    POINTER_OBJECTS,
    QUALIFIED_ADDRESS_FUNCTIONS,
    is_peer_address_function,
    tuple_address_position,
)
from .lattice import Kind, Origin, Value
from ..semantic.model import SemanticModel
from ..semantic.syntax import attr_name


class AddressAPIs:
    """The catalogue's calls (``cuMemAlloc``, ``nvshmem_ptr``, ...) and CuPy memory pointers."""

    def __init__(self, model: SemanticModel) -> None:
        self.c = model

    def cupy_memory(self, expr: ast.AST, depth: int) -> bool:
        """A CuPy memory pointer: ``arr.data`` (``ndarray.data``), an allocation, or a name bound to one."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            return True
        if isinstance(expr, ast.Call):
            return attr_name(expr.func) in CUPY_MEMORY_CALLS
        key = self.c.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        return key is not None and any(b.how == "expr" and self.cupy_memory(b.expr, depth + 1)
                                       for b in self.c.bindings.get(key, []))

    def call(self, call: ast.Call, qnames: set[str], last: str | None) -> Value | None:
        """A call of the address catalogue (ptrlint/addresses.py), or None."""
        if is_peer_address_function(last):
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{last}()` (a peer's address)"),))
        if qnames & QUALIFIED_ADDRESS_FUNCTIONS:
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{last}()`"),))
        if tuple_address_position(last) is not None:
            if any(attr_name(a.func) in ("byref", "pointer") for a in call.args if isinstance(a, ast.Call)):
                return None  # `lib.cudaMalloc(ctypes.byref(p), n)`: the status code; the address went to `p`
            # `(err, ptr)`: a tuple holding an address (its items: see the unpacking in flow.binding_value)
            return Value(Kind.SEQ, Origin.RAW, ((call, f"pointer value: `{last}()` returns an address"),))
        if last in POINTER_OBJECTS:  # `driver.CUdeviceptr(p)`: a device pointer object, whatever it was made from
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: a `{last}`"),))
        return None
