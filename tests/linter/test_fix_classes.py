"""Each class of fix, proven by running code (issue 41): small projects whose tables meet the
consumers real code has, linted, fixed with the safe fixes, and run at real addresses and under
``simulate_high_addresses()`` before and after.

A case states the fix each finding must get and what must hold when it runs: the original works
at real addresses (the bug hides there), the fixed program works at real addresses (a safe fix
never adds a failure) and, where the fix is meant to remove the bug, under the simulation too.
The consumers are the ones that decide fixes: an int64-only binding outside the project
(``ext/intext.py``, a stand-in for a C++ or TVM-FFI extension), a Triton-style launch that reads
raw bits, torch arithmetic, numpy stores and Python readers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..conftest import REPO

UINT64, BITS, UNSAFE, NONE = "uint64", "bit-preserving", "unsafe", "no fix"

# A compiled binding outside the project: it takes int64 pointer tables only (like a C++ op that
# checks `dtype == torch.int64`), and hands back the raw 64-bit values it read.
EXTENSION = '''
import torch
MASK = (1 << 64) - 1

def _bits(table):
    if table.dtype != torch.int64:
        raise TypeError(f"pointer table must be int64, got {table.dtype}")
    return [v & MASK for v in table.reshape(-1).tolist()]

def gather(table):
    return _bits(table)

def load(name):
    import sys
    return sys.modules[__name__]

def compile_kernel(fn):
    return gather

def remote_addr(tensor):
    """An address the way a binding that returns int64_t hands it back: wrapped to negative."""
    import ctypes
    return ctypes.c_int64(tensor.data_ptr()).value
'''

# The package's own Triton-style launcher: `kernel[grid](table)` reads each slot's raw 64 bits,
# whatever the table's dtype.
LAUNCHER = """
import torch

class _Launch:
    seen = []
    def __getitem__(self, grid):
        def launch(*tables):
            for table in tables:
                _Launch.seen.append(table.reshape(-1).view(torch.uint64).tolist() if table.element_size() == 8
                                    else None)
        return launch

copy_kernel = _Launch()
"""

RUN = """
import importlib, sys, traceback
from ptrlint.runtime import simulate_high_addresses
sys.path[:0] = [sys.argv[1], sys.argv[2]]
main = importlib.import_module("app.main")
for label, simulate in (("real", False), ("simulated", True)):
    try:
        if simulate:
            with simulate_high_addresses():
                main.scenario()
        else:
            main.scenario()
        print(label, "ok")
    except Exception as exc:
        print(label, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
"""


@dataclass
class Case:
    files: dict[str, str]  # paths under the project root (the package is `app`)
    fixes: dict[tuple[str, int], str]  # (path, line) -> the fix kind the finding must get
    fixed_under_simulation: bool = True  # the safe fixes remove the bug
    broken_before: bool = True  # the original fails at high addresses
    unsafe_breaks: bool = False  # applying the unsafe fixes too would break the program
    codes: dict[tuple[str, int], str] = field(default_factory=dict)  # (path, line) -> code, where not PTR001
    texts: dict[tuple[str, int], str] = field(default_factory=dict)  # (path, line) -> the fixed line, stripped
    external: dict[str, str] = field(default_factory=dict)  # modules outside the project (importable, not linted)


CASES: dict[str, Case] = {
    "dataclass_field_read_in_other_modules": Case(
        files={
            "app/buffers.py": """
                from dataclasses import dataclass

                import torch


                @dataclass
                class CopyTables:
                    src_ptrs: torch.Tensor
                    dst_ptrs: torch.Tensor

                    @classmethod
                    def create(cls, srcs, dsts):
                        return cls(torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64),
                                   torch.tensor([d.data_ptr() for d in dsts], dtype=torch.int64))
            """,
            "app/main.py": """
                import intext
                import torch

                from .buffers import CopyTables
                from .launch import copy_kernel


                def scenario():
                    srcs, dsts = [torch.zeros(8) for _ in range(2)], [torch.zeros(8) for _ in range(2)]
                    tables = CopyTables.create(srcs, dsts)
                    assert intext.gather(tables.src_ptrs) == [s.data_ptr() for s in srcs]
                    copy_kernel[(2,)](tables.dst_ptrs)
                    assert copy_kernel.seen[-1] == [d.data_ptr() for d in dsts]
            """,
        },
        fixes={("app/buffers.py", 13): BITS, ("app/buffers.py", 14): UINT64},
    ),
    "module_from_a_project_loader": Case(
        files={
            "app/ops.py": """
                import torch


                def _get_module():
                    import intext
                    return intext.load("bgmv")


                def shrink(weights):
                    w_ptr = torch.tensor([w.data_ptr() for w in weights], dtype=torch.int64)
                    mod = _get_module()
                    return mod.gather(w_ptr)
            """,
            "app/main.py": """
                import torch

                from .ops import shrink


                def scenario():
                    weights = [torch.zeros(4) for _ in range(3)]
                    assert shrink(weights) == [w.data_ptr() for w in weights]
            """,
        },
        fixes={("app/ops.py", 10): BITS},
    ),
    "compiled_kernel_callable": Case(
        files={
            "app/main.py": """
                import intext
                import torch


                def run(blocks, prim_func):
                    table = torch.tensor([b.data_ptr() for b in blocks], dtype=torch.int64)
                    kernel = intext.compile_kernel(prim_func)
                    return kernel(table)


                def scenario():
                    blocks = [torch.zeros(4) for _ in range(3)]
                    assert run(blocks, None) == [b.data_ptr() for b in blocks]
            """,
        },
        fixes={("app/main.py", 6): BITS},
    ),
    "tuple_unpacked_result": Case(
        files={
            "app/plan.py": """
                import torch


                def tables(pairs):
                    src = torch.tensor([s.data_ptr() for s, _ in pairs], dtype=torch.int64)
                    dst = torch.tensor([d.data_ptr() for _, d in pairs], dtype=torch.int64)
                    return src, dst
            """,
            "app/main.py": """
                import intext
                import torch

                from .plan import tables


                def scenario():
                    pairs = [(torch.zeros(4), torch.zeros(4)) for _ in range(2)]
                    src, dst = tables(pairs)
                    assert intext.gather(src) == [s.data_ptr() for s, _ in pairs]
                    assert [int(v) for v in dst.tolist()] == [d.data_ptr() for _, d in pairs]
            """,
        },
        fixes={("app/plan.py", 5): BITS, ("app/plan.py", 6): UINT64},
    ),
    "method_result_added_to_in_another_module": Case(
        files={
            "app/copier.py": """
                import torch


                class Copier:
                    def __init__(self, blocks):
                        self.blocks = blocks

                    def pending(self):
                        return torch.tensor([b.data_ptr() for b in self.blocks], dtype=torch.int64)
            """,
            "app/main.py": """
                import intext
                import torch

                from .copier import Copier


                def heads(copier):
                    return intext.gather(copier.pending() + 8)


                def scenario():
                    blocks = [torch.zeros(4) for _ in range(2)]
                    assert heads(Copier(blocks)) == [b.data_ptr() + 8 for b in blocks]
            """,
        },
        fixes={("app/copier.py", 9): BITS},
    ),
    "name_only_table_fed_negative_ints": Case(
        files={
            "app/main.py": """
                import intext
                import torch

                from .launch import copy_kernel


                def scenario():
                    buf = torch.zeros(4)
                    raddr = intext.remote_addr(buf)
                    raddr_tensor = torch.tensor([raddr], dtype=torch.int64)
                    copy_kernel[(1,)](raddr_tensor)
                    assert copy_kernel.seen[-1] == [buf.data_ptr()]
            """,
        },
        fixes={("app/main.py", 10): UNSAFE},
        fixed_under_simulation=False,
        broken_before=False,  # never broken: the binding hands back int64 bits
        unsafe_breaks=True,  # creating it unsigned raises on the negative Python int
    ),
    "numpy_address_arithmetic": Case(
        files={
            "app/main.py": """
                import intext
                import numpy as np
                import torch


                def fill(desc, cache, block_ids):
                    ids = np.asarray(block_ids, dtype=np.int64)
                    desc[:] = cache.data_ptr() + ids * cache.stride(0) * cache.element_size()


                def scenario():
                    cache = torch.zeros(4, 16)
                    desc = np.zeros(2, dtype=np.int64)
                    fill(desc, cache, [3, 1])
                    row = cache.stride(0) * cache.element_size()
                    assert intext.gather(torch.from_numpy(desc)) == [cache.data_ptr() + i * row for i in (3, 1)]
            """,
        },
        # the arithmetic raises (PTR007); the int64 table it fills only receives the result's bits (numpy
        # stores a uint64 array into an int64 one bit for bit) and the binding reads them: not a finding
        fixes={("app/main.py", 8): "ptr007"},
        codes={("app/main.py", 8): "PTR007"},
    ),
    "deferred_import_through_a_reexport": Case(
        files={
            "app/ops/__init__.py": """
                from .fill import fill_w_ptr

                __all__ = ["fill_w_ptr"]
            """,
            "app/ops/fill.py": """
                import torch


                def fill_w_ptr(w_ptr, weights, slot):
                    w_ptr[slot] = torch.tensor(weights.data_ptr(), dtype=torch.uint64)
            """,
            "app/ops/loader.py": """
                def get_module():
                    import intext
                    return intext.load("bgmv")
            """,
            "app/main.py": """
                import torch


                def shrink(weights):
                    from .ops import fill_w_ptr
                    from .ops.loader import get_module

                    w_ptr = torch.zeros(len(weights), dtype=torch.int64)
                    for slot, w in enumerate(weights):
                        fill_w_ptr(w_ptr, w, slot)
                    return get_module().gather(w_ptr)


                def scenario():
                    weights = [torch.zeros(4) for _ in range(3)]
                    assert shrink(weights) == [w.data_ptr() for w in weights]
            """,
        },
        # a function of the project (reached through a deferred import of a re-export) writes into it, but
        # only a tensor's bits: no Python int enters, and the binding reads the same int64 bits. The harm
        # model finds no failure (it ran at high addresses before as well): no finding.
        fixes={},
        broken_before=False,
    ),
    "deferred_import_stores_python_ints": Case(
        files={
            "app/ops/__init__.py": """
                from .fill import fill_w_ptr

                __all__ = ["fill_w_ptr"]
            """,
            "app/ops/fill.py": """
                def fill_w_ptr(w_ptr, weights, slot):
                    w_ptr.numpy()[slot] = weights.data_ptr()
            """,
            "app/ops/loader.py": """
                def get_module():
                    import intext
                    return intext.load("bgmv")
            """,
            "app/main.py": """
                import torch


                def shrink(weights):
                    from .ops import fill_w_ptr
                    from .ops.loader import get_module

                    w_ptr = torch.zeros(len(weights), dtype=torch.int64)
                    for slot, w in enumerate(weights):
                        fill_w_ptr(w_ptr, w, slot)
                    return get_module().gather(w_ptr)


                def scenario():
                    weights = [torch.zeros(4) for _ in range(3)]
                    assert shrink(weights) == [w.data_ptr() for w in weights]
            """,
        },
        # the same, but the re-exported function stores Python ints through an int64 numpy view: a finding
        # (found only by following the deferred import), and no safe fix: a `.view(torch.int64)` creation
        # hands the store the same int64 view, and the store is in another module
        fixes={("app/main.py", 8): UNSAFE},
        fixed_under_simulation=False,
    ),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    for folder in {p.parent for p in (root / n for n in files)}:
        init = folder / "__init__.py"
        if folder != root and not init.exists():
            init.write_text("")


def project(tmp_path: Path, case: Case) -> Path:
    root = tmp_path / "project"
    _write(root, {**case.files, "app/launch.py": LAUNCHER})
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "intext.py").write_text(EXTENSION)
    for name, text in case.external.items():
        (tmp_path / "ext" / name).write_text(textwrap.dedent(text).lstrip())
    return root


def run(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PTRLINT_SIMULATE_HIGH_ADDRESSES"}
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(root), str(root.parent / "ext")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines())


def ptrlint(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", *args, "."], capture_output=True, text=True, cwd=root
    )


def kind(finding: dict) -> str:
    fix = finding["fix"]
    if fix is None:
        return NONE
    if finding["code"] == "PTR007":
        return "ptr007" if fix["safe"] else UNSAFE
    if not fix["safe"]:
        return UNSAFE
    return BITS if fix["title"].startswith("Create the table unsigned") else UINT64


@pytest.mark.parametrize("name", sorted(CASES))
def test_fix_class_runs(name, tmp_path):
    pytest.importorskip("torch")
    case = CASES[name]
    root = project(tmp_path, case)
    findings = json.loads(ptrlint(root, "--output-format", "json", "--exit-zero").stdout)
    got = {(f["path"], f["line"]): kind(f) for f in findings}
    assert got == case.fixes, findings
    for (path, line), code in case.codes.items():
        assert any(f["path"] == path and f["line"] == line and f["code"] == code for f in findings)
    before = run(root)
    assert before["real"] == "ok", before
    if case.broken_before:
        assert before["simulated"] != "ok", before  # the bug is real at high addresses
    ptrlint(root, "--fix", "--exit-zero")
    after = run(root)
    assert after["real"] == "ok", after  # a safe fix never adds a failure
    if case.fixed_under_simulation:
        assert after["simulated"] == "ok", after
    fixed = {p: p.read_text() for p in sorted(root.rglob("*.py"))}
    ptrlint(root, "--fix", "--exit-zero")
    assert {p: p.read_text() for p in sorted(root.rglob("*.py"))} == fixed  # idempotent
    if case.unsafe_breaks:
        ptrlint(root, "--fix", "--unsafe-fixes", "--exit-zero")
        assert run(root)["simulated"] != "ok"  # why the fix is unsafe: it would raise
