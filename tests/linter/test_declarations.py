"""Cython declarations of compiled modules (ptrlint/analysis/cython.py, found by ptrlint/project/declarations.py):
what each parameter is, and how Cython converts a Python int into it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ptrlint.analysis.cython import parse_declarations
from ptrlint.project.declarations import declaration, declaration_file
from ptrlint.project.layout import forget_listings

# (declaration text, function, [(parameter, C type, how Cython converts a Python int into it)])
CASES = [
    (
        "cpdef matmul(intptr_t handle, intptr_t a, size_t nbytes, int flags)\n",
        "matmul",
        [
            ("handle", "intptr_t", "signed64"),
            ("a", "intptr_t", "signed64"),
            ("nbytes", "size_t", "unsigned64"),
            ("flags", "int", "narrow"),
        ],
    ),
    (  # a return type, a multi-line list, an `except` clause after it
        "cpdef intptr_t create(int type,\n                      uint64_t rows,\n      int64_t ld) except? 0\n",
        "create",
        [("type", "int", "narrow"), ("rows", "uint64_t", "unsigned64"), ("ld", "int64_t", "signed64")],
    ),
    (  # C types of two words, a pointer, an untyped parameter, a default, a comment
        "def copy(unsigned long long dst, long long src, void* raw, stream, Py_ssize_t n=0):  # doc\n",
        "copy",
        [
            ("dst", "unsigned long long", "unsigned64"),
            ("src", "long long", "signed64"),
            ("raw", "pointer", None),
            ("stream", "object", None),
            ("n", "Py_ssize_t", "signed64"),
        ],
    ),
    (  # `const`, brackets inside a parameter (a memoryview), a method's `self`
        "def fill(self, const uintptr_t base, double[:] values, object owner):\n",
        "fill",
        [("base", "uintptr_t", "unsigned64"), ("values", "double[:]", None), ("owner", "object", None)],
    ),
]


@pytest.mark.parametrize(("text", "name", "expected"), CASES)
def test_parameters_and_their_conversion(text: str, name: str, expected: list[tuple[str, str, str | None]]) -> None:
    found = parse_declarations(text, "lib.pxd")[name]
    assert [(p.name, p.ctype, p.integer) for p in found.params] == expected
    assert found.line == 1


def test_only_functions_python_can_call_are_read() -> None:
    text = "cdef int hidden(intptr_t x)\ncdef class Pool:\n    cpdef free(self, size_t ptr)\ncpdef shown(size_t p)\n"
    assert sorted(parse_declarations(text, "lib.pxd")) == ["shown"]  # a method is not a module function


def test_an_unclosed_list_is_not_read() -> None:
    assert parse_declarations("cpdef broken(intptr_t a,\n", "lib.pxd") == {}


def test_a_compiled_module_is_found_by_its_declarations(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "bindings").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "bindings" / "lib.pyx").write_text("cpdef run(intptr_t a):\n    pass\n")
    bases = (tmp_path,)
    forget_listings()  # folders listed by earlier tests of this process (a run forgets them as it starts)
    assert declaration_file("pkg.bindings.lib", bases) == tmp_path / "pkg" / "bindings" / "lib.pyx"
    (tmp_path / "pkg" / "bindings" / "lib.pxd").write_text("cpdef run(size_t a)\n")  # the declarations win
    forget_listings()
    found = declaration("pkg.bindings.lib.run", bases)
    assert found is not None and found.params[0].ctype == "size_t"
    assert declaration("pkg.bindings.lib.missing", bases) is None
    assert declaration("pkg.bindings.other.run", bases) is None


def _lint(root: Path, cache: Path) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--cache-dir", str(cache), "--output-format", "json", "--exit-zero", "."],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_changed_declaration_is_never_answered_from_a_warm_cache(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "main.py").write_text("import clib\n\n\ndef run(t):\n    return clib.execute(0, t.data_ptr())\n")
    declared = root / "clib.pxd"
    declared.write_text("cpdef execute(intptr_t handle, uintptr_t buf)\n")
    cache = tmp_path / "cache"
    assert _lint(root, cache) == []  # a raw address into an unsigned parameter: nothing to say
    declared.write_text("cpdef execute(intptr_t handle, intptr_t buf)\n")
    found = _lint(root, cache)
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("app/main.py", 5, "PTR008")]
    assert "intptr_t buf" in str(found[0]["message"])
    assert _lint(root, cache) == found  # and warm again: the same answer
