"""The C types of a compiled module's parameters, read from its Cython declarations (``lib.pxd``, ``lib.pyx``).

A Cython extension module ``pkg/bindings/lib.*.so`` is often shipped with its declarations beside it
(``lib.pxd``, or the source ``lib.pyx``): ``cpdef matmul(intptr_t handle, intptr_t a, size_t n)``. Cython
converts each Python argument to its parameter's C type before the function body runs: a Python int
above the type's range raises ``OverflowError`` (an address >= 2**63 into ``intptr_t``), and a negative
one raises for an unsigned type (a wrapped address into ``size_t``). These are the only compiled
signatures ptrlint can read; pybind11, nanobind and C++ torch ops keep theirs in compiled code.

Only functions callable from Python are read (``def`` and ``cpdef`` at module level); ``cdef`` ones are
C-only. Parsing is line-based over the declaration's parentheses: Cython's own grammar is not needed for
a parameter list of ``[const] type [*] name [= default]`` items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# C integer types as Cython converts a Python int into them (LP64: `long` is 64 bits, `int` 32).
SIGNED64_CTYPES = frozenset(
    {"intptr_t", "Py_ssize_t", "ssize_t", "ptrdiff_t", "int64_t", "long long", "long", "long int", "signed long long"}
)
UNSIGNED64_CTYPES = frozenset(
    {"size_t", "uintptr_t", "uint64_t", "unsigned long long", "unsigned long", "unsigned long int", "Py_uhash_t"}
)
NARROW_CTYPES = frozenset(
    {
        "int",
        "int32_t",
        "int16_t",
        "int8_t",
        "short",
        "char",
        "signed char",
        "unsigned int",
        "unsigned",
        "uint32_t",
        "uint16_t",
        "uint8_t",
        "unsigned short",
        "unsigned char",
        "float",
        "double",
    }
)
_START = re.compile(r"^(?:cpdef|def)\s+(?:[A-Za-z_][\w ]*?\s+\**)?([A-Za-z_]\w*)\s*\(")
# `[const] type name`, `type* name`, `double[:] name` (a memoryview), each with an optional default
_PARAMETER = re.compile(r"^\s*(?:const\s+)?([A-Za-z_][\w \[\]:,]*?)(?:\s*(\*+)\s*|\s+)([A-Za-z_]\w*)\s*(?:=.*)?$")
_UNTYPED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:=.*)?$")
MAX_DECLARATION_LINES = 40  # a parameter list longer than this is not read


@dataclass(frozen=True)
class Parameter:
    name: str
    ctype: str  # "intptr_t", "size_t", "object" (untyped), ...

    @property
    def integer(self) -> str | None:
        """How Cython converts a Python int into it: "signed64", "unsigned64", "narrow", or None (no conversion
        to a C integer: an object, a pointer, a typed memoryview)."""
        if self.ctype in SIGNED64_CTYPES:
            return "signed64"
        if self.ctype in UNSIGNED64_CTYPES:
            return "unsigned64"
        return "narrow" if self.ctype in NARROW_CTYPES else None


@dataclass(frozen=True)
class Declaration:
    """A compiled function's parameters, as its Cython declaration names them."""

    path: str
    line: int
    name: str
    params: tuple[Parameter, ...]

    def param(self, position: int | None, keyword: str | None) -> Parameter | None:
        if keyword is not None:
            return next((p for p in self.params if p.name == keyword), None)
        return self.params[position] if position is not None and position < len(self.params) else None

    def to_json(self) -> list[object]:
        return [self.path, self.line, self.name, [[p.name, p.ctype] for p in self.params]]


def parse_declarations(text: str, path: str) -> dict[str, Declaration]:
    """The module-level ``def``/``cpdef`` functions of a Cython file, by name (the first declaration wins)."""
    found: dict[str, Declaration] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _START.match(line)
        if match is None or match.group(1) in found:
            continue
        body = line[match.end() :]
        end = index
        while _depth(body) > 0 and end + 1 < len(lines) and end - index < MAX_DECLARATION_LINES:
            end += 1
            body += " " + lines[end].strip()
        params = _parameters(body)
        if params is not None:
            found[match.group(1)] = Declaration(path, index + 1, match.group(1), params)
    return found


def _depth(text: str) -> int:
    """How many parentheses are still open after ``text`` (which follows the opening one)."""
    depth = 1
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return 0
    return depth


def _parameters(body: str) -> tuple[Parameter, ...] | None:
    """The parameters of a list that starts after ``(``; None when it does not close or an item is not read."""
    items: list[str] = []
    depth, current = 0, list[str]()
    for char in body:
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                items.append("".join(current))
                break
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    else:
        return None
    params: list[Parameter] = []
    for item in items:
        item = item.split("#", 1)[0].strip()
        if not item or item in ("self", "*", "/") or item.startswith("*"):
            continue
        untyped = _UNTYPED.match(item)
        match = _PARAMETER.match(item) if untyped is None else None
        if match is None:  # `stream`, `stream=None`: a Python object, no conversion
            params.append(Parameter(untyped.group(1) if untyped else item.split("=")[0].strip(), "object"))
            continue
        ctype, stars, name = " ".join(match.group(1).split()), match.group(2), match.group(3)
        params.append(Parameter(name, "pointer" if stars else ctype))
    return tuple(params)
