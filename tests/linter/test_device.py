"""Kernel bodies are blanked before parsing: same findings, same positions, never a wrong tree."""

from __future__ import annotations

import ast

import pytest

from ptrlint.analysis.device import blank_device_bodies, parse_host
from ptrlint.config import Config
from ptrlint.engine import analyse, analyse_tree, select_codes

ALL = select_codes(["ALL"], [], [])
MODULE = '''import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4)],
                 key=["n"])
@triton.jit
def copy_kernel(src_ptrs, dst_ptrs, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.load(src_ptrs + pid).to(tl.pointer_type(tl.uint8))
    # a comment inside the kernel
    offs = tl.arange(0, BLOCK)

    tl.store(tl.load(dst_ptrs + pid).to(tl.pointer_type(tl.uint8)) + offs, tl.load(src + offs))


class Launcher:
    @cute.jit
    def __call__(self, table_ptr):
        x = table_ptr + 1
        return x

    def tables(self, blocks):
        return torch.tensor([b.data_ptr() for b in blocks], dtype=torch.int64)
'''


def test_bodies_are_blanked_and_lines_kept():
    blanked = blank_device_bodies(MODULE)
    assert blanked is not None
    text, bodies = blanked
    assert len(bodies) == 2
    assert text.count("\n") == MODULE.count("\n")
    assert "tl.store" not in text and "x = table_ptr" not in text
    assert text.splitlines()[-1] == MODULE.splitlines()[-1]
    tree = parse_host(MODULE, ast.parse)
    kernel = tree.body[3]
    assert isinstance(kernel, ast.FunctionDef) and ast.unparse(kernel.body) == "..."


def test_findings_are_the_same_as_with_the_whole_tree():
    whole = analyse_tree(ast.parse(MODULE), MODULE, "m.py", Config(), ALL)
    host = analyse(MODULE, "m.py", Config(), ALL)
    assert [(f.line, f.column, f.code) for f in host] == [(f.line, f.column, f.code) for f in whole] != []


@pytest.mark.parametrize(
    "source",
    [
        # a docstring whose lines start at column 0 ends the indentation scan early: the file is parsed whole
        'import triton\n@triton.jit\ndef k(x):\n    s = """\ncol zero\n"""\n    return s\n',
        # a body on the header line, strings in the header, a decorator that is not a kernel's
        "import triton\n@triton.jit\ndef k(x): return x\n",
        'import triton\n@triton.jit\ndef k(x: "tl.tensor") -> None:\n    pass\n',
        "import functools\n@functools.cache\ndef k(x):\n    return x\n",
    ],
)
def test_doubtful_blanking_falls_back_to_the_whole_text(source):
    tree = parse_host(source, ast.parse)
    assert ast.dump(tree) == ast.dump(ast.parse(source)) or all(
        ast.unparse(n.body) == "..." for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
    )
    assert analyse(source, "m.py", Config(), ALL) == analyse_tree(ast.parse(source), source, "m.py", Config(), ALL)


def test_a_syntax_error_outside_kernels_is_still_reported():
    source = "import triton\n@triton.jit\ndef k(x):\n    return x\nsrc_ptrs = torch.zeros(\n"
    from ptrlint.engine import ParseError

    with pytest.raises(ParseError):
        analyse(source, "m.py", Config(), ALL)


def test_function_defs_are_found_through_statement_lists_alone():
    """``_checks_out`` looks for blanked bodies among every ``def``; it walks statements only."""
    import ast

    from ptrlint.analysis.device import _function_defs

    source = (
        "def a():\n    def b():\n        pass\nclass C:\n    async def d(self):\n        pass\n"
        "if x:\n    def e(): ...\nelse:\n    def f(): ...\n"
        "try:\n    def g(): ...\nexcept E:\n    def h(): ...\nelse:\n    def i(): ...\nfinally:\n    def j(): ...\n"
        "with m:\n    def k(): ...\nfor q in r:\n    def l(): ...\nwhile s:\n    def n(): ...\n"
        "match v:\n    case 1:\n        def o(): ...\n"
        "p = lambda: 0\n"
    )
    tree = ast.parse(source)
    expected = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert {n.name for n in _function_defs(tree)} == expected == set("abdefghijklno")


def test_a_kernel_shown_in_a_docstring_or_comment_is_not_blanked():
    """A decorator line inside a docstring or a comment is prose: blanking "its body" would fail the
    check against the tree, and the file would be parsed twice (torch's inductor ir.py was)."""
    shown = (
        "import triton\n\n\ndef can_fuse():\n"
        '    """For kernels like\n\n    @triton.jit\n    def add(x_ptr, n):\n        pid = 1\n        x = pid\n\n'
        '    it answers True.\n    """\n    return True\n'
        "# @triton.jit\n# def k(x):\n#     return x\n"
    )
    assert blank_device_bodies(shown) is None
    real = shown + "\n\n@triton.jit\ndef kernel(x_ptr):\n    pid = 0\n    return pid\n"
    blanked = blank_device_bodies(real)
    assert blanked is not None
    text, bodies = blanked
    assert bodies == [(len(real.splitlines()) - 1, len(real.splitlines()))]
    assert text.splitlines()[:-2] == real.splitlines()[:-2]
    assert parse_host(real, ast.parse) is not None


@pytest.mark.parametrize("source", [
    "@property\ndef f(self):\n    return 1\n",
    "import torch\n\n@torch.jit.script\ndef f(x):\n    return x + 1\n",  # `torch.jit.script` is host code
    "x = a @ b\n",
])
def test_text_without_a_device_decorator_name_is_not_split(source):
    assert blank_device_bodies(source) is None


def test_each_device_decorator_spelling_is_still_blanked():
    from ptrlint.analysis.device import DEVICE_DECORATORS

    for name in sorted(DEVICE_DECORATORS):
        source = f"@{name}\ndef k(x):\n    y = x + 1\n    return y\n"
        blanked = blank_device_bodies(source)
        assert blanked is not None and blanked[1] == [(3, 4)], name
