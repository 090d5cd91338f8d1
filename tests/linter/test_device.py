"""Kernel bodies are blanked before parsing: same findings, same positions, never a wrong tree."""

from __future__ import annotations

import ast

import pytest

from ptrlint.analysis.semantic.device import blank_device_bodies, parse_host
from ptrlint.config import Config
from ptrlint.engine import analyse, analyse_module, select_codes

ALL = select_codes(["ALL"], [], [])
MODULE = """import torch
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
"""


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
    whole = analyse_module(MODULE, "m.py", Config(), ALL, tree=ast.parse(MODULE)).findings
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
    assert (
        analyse(source, "m.py", Config(), ALL)
        == analyse_module(source, "m.py", Config(), ALL, tree=ast.parse(source)).findings
    )


def test_a_syntax_error_outside_kernels_is_still_reported():
    source = "import triton\n@triton.jit\ndef k(x):\n    return x\nsrc_ptrs = torch.zeros(\n"
    from ptrlint.engine import ParseError

    with pytest.raises(ParseError):
        analyse(source, "m.py", Config(), ALL)


def test_function_defs_are_found_through_statement_lists_alone():
    """``_checks_out`` looks for blanked bodies among every ``def``; it walks statements only."""
    import ast

    from ptrlint.analysis.semantic.device import _function_defs

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


@pytest.mark.parametrize(
    "source",
    [
        "@property\ndef f(self):\n    return 1\n",
        "import torch\n\n@torch.jit.script\ndef f(x):\n    return x + 1\n",  # `torch.jit.script` is host code
        "x = a @ b\n",
    ],
)
def test_text_without_a_device_decorator_name_is_not_split(source):
    assert blank_device_bodies(source) is None


def test_each_device_decorator_spelling_is_still_blanked():
    from ptrlint.analysis.semantic.device import DEVICE_DECORATORS

    for name in sorted(DEVICE_DECORATORS):
        source = f"@{name}\ndef k(x):\n    y = x + 1\n    return y\n"
        blanked = blank_device_bodies(source)
        assert blanked is not None and blanked[1] == [(3, 4)], name


EDGE_KERNELS = [
    MODULE,
    "@triton.jit\ndef k(x):\n    a = 1\n# a note at column 0\n    b = 2\nc = 3\n",
    "@triton.jit\ndef k(x):\n    a = 1\n\xa0\n    b = 2\n\xa0x = 1\n  \xa0 y = 2\n",
    "@triton.jit\ndef k(x):\n    a = 1\n\x0c\n    b = 2\n\x0cz = 3\n",
    "@cute.kernel\ndef k():\n    return 1",
    "@cute.kernel\ndef k():\n    return 1\n\n   \n\n# trailing\nx = 1\n",
    "class A:\n    @cute.jit\n    def f(self):\n        x = 1\n\n    def g(self):\n        pass\n",
    "class A:\n    @cute.jit\n    def f(self):\n        x = 1\n  # shallow comment\n        y = 2\n    z = 3\n",
    '@triton.autotune(configs=[c("(")], key=["n"])\n@triton.jit\ndef k(x):\n    return x\n',
    "@triton.autotune(configs=[c(1, [2])],\n                 key=['n'])\n@triton.jit\ndef k(x):\n    return x\n",
    "@triton.jit\ndef k(\n    a,  # (\n    b,\n):\n    return a\n",
    "@triton.jit\ndef k(x): return x\ny = 1\n",
    "@triton.jit\ndef k():\n    s = '''\nx\n'''\n    return s\n",
    "@triton.jit\ndef k():\n@triton.jit\ndef j():\n    return 1\n",
    "@triton.jit\ndef k():\n\tx = 1\n\treturn x\n",  # a tab: line by line either way
    "@triton.jit\r\ndef k():\r\n    return 1\r\n",
    "@ triton.jit\ndef k(x):\n    return x\n@numba.cuda.jit\ndef j(x):\n    return x\n",
    "def host():\n    '''\n    @triton.jit\n    def k(x):\n        return x\n    '''\n\n@triton.jit\ndef k(x):\n    return x\n",
    "@triton.jit\ndef k(x):\n    return x \\\n        + 1\n",
    "@triton.jit\n\n# between\ndef k(x):\n    return x\n",
    "y = a @triton.jit\n@triton.jit\ndef k(x):\n    return x\n",
    "\x0c@triton.jit\ndef k():\n    return 1\n@triton.jit\ndef j():\n    return 2\n\n\n",
    "@triton.jit\ndef k():\n    return 1\n\n\n\nx = 1",
    "  @triton.jit  # indented at top level\n  def k():\n      return 1\n",
]


def _kernel_texts() -> list[str]:
    """The edge kernels, and torch's files that name a device decorator (installed by the README's
    test command; read, never imported)."""
    import importlib.util
    from pathlib import Path

    from ptrlint.analysis.semantic.device import DEVICE_DECORATORS

    texts = list(EDGE_KERNELS)
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        for path in sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if "@" in text and any(name in text for name in DEVICE_DECORATORS):
                texts.append(text)
    return texts


def test_blanking_by_regex_equals_blanking_line_by_line():
    """The fast path (decorators and body ends found by regex over a text without tabs or carriage
    returns) blanks exactly what the line loop blanks."""
    texts = _kernel_texts()
    fast_path_blanked = 0
    for text in texts:
        fast, by_lines = blank_device_bodies(text), blank_device_bodies(text, by_lines=True)
        assert fast == by_lines, text[:300]
        fast_path_blanked += fast is not None and "\t" not in text and "\r" not in text
    assert fast_path_blanked >= 10
