"""Values of the address catalogue (ptrlint/addresses.py): which calls and attributes evaluate to
addresses, for the transfer functions (:mod:`.transfer`)."""

from __future__ import annotations

import ast

from ...addresses import (
    ADDRESS_ATTRIBUTES,
    CTYPES_POINTER_ATTRIBUTES,
    CUPY_MEMORY_CALLS,
    POINTER_OBJECTS,
    QUALIFIED_ADDRESS_FUNCTIONS,
    is_peer_address_function,
    tuple_address_position,
)
from ..semantic.model import SemanticModel
from ..semantic.syntax import attr_name
from .lattice import Kind, Origin, Value

# Libraries whose functions ptrlint knows (or that hand out no addresses in another encoding): their results
# are never a binding's foreign values.
KNOWN_LIBRARIES = frozenset(
    {
        "builtins",
        "torch",
        "numpy",
        "math",
        "os",
        "sys",
        "re",
        "json",
        "time",
        "functools",
        "itertools",
        "operator",
        "collections",
        "typing",
        "dataclasses",
        "logging",
        "pathlib",
        "struct",
        "ctypes",
        "copy",
        "random",
        "enum",
        "abc",
        "contextlib",
        "threading",
        "subprocess",
        "socket",
        "ipaddress",
        "hashlib",
        "pickle",
        "io",
        "string",
        "triton",
        "tempfile",
        "shutil",
        "warnings",
        "inspect",
        "weakref",
        "queue",
        "uuid",
        "datetime",
        "array",
    }
)


class AddressAPIs:
    """The catalogue's calls (``cuMemAlloc``, ``nvshmem_ptr``, ...) and CuPy memory pointers."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def cupy_memory(self, expr: ast.AST, depth: int) -> bool:
        """A CuPy memory pointer: ``arr.data`` (``ndarray.data``), an allocation, or a name bound to one."""
        if depth > 4:
            return False
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            return True
        if isinstance(expr, ast.Call):
            return attr_name(expr.func) in CUPY_MEMORY_CALLS
        key = self.model.key_of(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        return key is not None and any(
            b.how == "expr" and self.cupy_memory(b.expr, depth + 1) for b in self.model.bindings.get(key, [])
        )

    def attribute(self, expr: ast.Attribute) -> Value | None:
        """An attribute of the address catalogue (``a.ctypes.data``, ``h.buffer_ptrs``, CuPy's ``.ptr``), or None."""
        attr, base = expr.attr, expr.value
        if attr == "data" and isinstance(base, ast.Attribute) and base.attr == "ctypes":
            return Value(Kind.SCALAR, Origin.RAW, ((expr, "pointer value: `.ctypes.data`"),))
        if attr in ADDRESS_ATTRIBUTES:
            kind = Kind.SEQ if ADDRESS_ATTRIBUTES[attr] == "seq" else Kind.SCALAR
            return Value(kind, Origin.RAW, ((expr, f"pointer values: `.{attr}`"),))
        if attr == "ptr" and self.cupy_memory(base, 0):
            # CuPy declares it `intptr_t`: the address's bits as a signed int, negative from 2**63 on
            return Value(
                Kind.SCALAR,
                Origin.WRAPPED,
                ((expr, "signed address: `.ptr` of a CuPy memory pointer (an `intptr_t`)"),),
            )
        if attr == "value" and isinstance(base, ast.Attribute) and base.attr in CTYPES_POINTER_ATTRIBUTES:
            return Value(Kind.SCALAR, Origin.RAW, ((expr, f"pointer value: `.{base.attr}.value`"),))
        return None

    def call(self, call: ast.Call, qnames: set[str], last: str | None) -> Value | None:
        """A call of the address catalogue (ptrlint/addresses.py), or None."""
        if is_peer_address_function(last):
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{last}()` (a peer's address)"),))
        if qnames & QUALIFIED_ADDRESS_FUNCTIONS:
            if any(q.startswith("cupy.") for q in qnames):  # CuPy's runtime returns `intptr_t`, as `.ptr` is
                return Value(Kind.SCALAR, Origin.WRAPPED, ((call, f"signed address: `{last}()` (an `intptr_t`)"),))
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: `{last}()`"),))
        if tuple_address_position(last) is not None:
            if any(attr_name(a.func) in ("byref", "pointer") for a in call.args if isinstance(a, ast.Call)):
                return None  # `lib.cudaMalloc(ctypes.byref(p), n)`: the status code; the address went to `p`
            # `(err, ptr)`: a tuple holding an address (its items: see the unpacking in flow.binding_value)
            return Value(Kind.SEQ, Origin.RAW, ((call, f"pointer value: `{last}()` returns an address"),))
        if last in POINTER_OBJECTS:  # `driver.CUdeviceptr(p)`: a device pointer object, whatever it was made from
            return Value(Kind.SCALAR, Origin.RAW, ((call, f"pointer value: a `{last}`"),))
        return None

    def foreign(self, func: ast.expr, qnames: set[str]) -> bool:
        """A call into code outside the project that is not an address API: a method of an object of unknown
        type or a function of a module the project does not hold (a binding). What it hands out is in its
        own encoding; ptrlint cannot tell raw from wrapped. Python's, torch's and numpy's own functions
        are known, not foreign."""
        if not isinstance(func, (ast.Name, ast.Attribute)):
            return False
        if qnames:
            return not any(q.partition(".")[0] in KNOWN_LIBRARIES for q in qnames) and all(
                self.model.view is None or not self.model.view.is_project_symbol(q) for q in qnames
            )
        if isinstance(func, ast.Name):
            return False  # a local callable, a parameter: unknown, not a binding
        receiver = self.model.types.receiver_class(func.value)  # `self.runtime.get_mr_info()`
        if isinstance(receiver, str):  # a class another module names: defined in the project, or a binding's
            return self.model.view is None or not self.model.view.is_class(receiver)
        return receiver is None
