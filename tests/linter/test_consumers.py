"""Fix safety by consumers: each consumer class chooses uint64, the bit-preserving fix, or no safe fix.

Table-driven: a module, the finding's line, and the fix kind its consumers must choose. The last
tests run fixed code: a program that hands its table to an int64-only binding, to torch
arithmetic and to Python readers keeps working at real addresses and under the high-address
simulation once ``ptrlint --fix`` has run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..conftest import REPO

UINT64, BITS, NONE = "uint64", "bit-preserving", "none"

CASES = {
    "python_readers": (
        """
        import torch
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            picked = table[torch.tensor([0])]
            return picked.tolist(), table == 0, table[:2].clone()
        def g(ts):
            ids, same, head = f(ts)
            print(ids, same.any(), head.tolist())
        """,
        UINT64,
    ),
    "deep_copy_followed": (  # `copy.deepcopy` clones the tensor: the copy's own uses decide
        """
        import copy
        import torch
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            backup = copy.deepcopy(table)
            print(backup.tolist(), len(backup))
        """,
        UINT64,
    ),
    "deep_copy_to_extension": (
        """
        import copy
        import torch
        import my_ext
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            my_ext.launch(copy.deepcopy(table))
        """,
        BITS,
    ),
    "shallow_copy_of_a_tensor": (  # rebuilt from its pickled form: torch 2.13 cannot for uint64
        """
        import copy
        import torch
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            print(copy.copy(table).tolist())
        """,
        BITS,
    ),
    "shallow_copy_of_an_array": (  # numpy rebuilds a uint64 array whole
        """
        import copy
        import numpy as np
        def f(ts):
            table = np.array([t.data_ptr() for t in ts], dtype=np.int64)
            print(copy.copy(table).tolist())
        """,
        UINT64,
    ),
    "compiled_extension": (
        """
        import torch
        import my_ext
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            my_ext.launch(table)
        """,
        BITS,
    ),
    "torch_ops": (
        """
        import torch
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            torch.ops.my_ext.copy_blocks(table.to("cuda"))
        """,
        BITS,
    ),
    "jit_loaded_module": (
        """
        import torch
        from somejit import load_module
        def f(ts):
            mod = load_module("copy")
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            mod.run(table)
        """,
        BITS,
    ),
    "local_callable_parameter": (  # a callable whose code ptrlint does not see: unknown means int64
        """
        import torch
        def f(ts, kernel):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            kernel(table)
        """,
        BITS,
    ),
    "triton_launch": (
        """
        import torch
        def f(ts, copy_kernel):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            copy_kernel[(1,)](table, len(ts))
        """,
        UINT64,
    ),
    "torch_arithmetic_to_binding": (
        """
        import torch
        import my_ext
        def heads(ts):
            bases = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return bases + 128
        def run(ts):
            my_ext.reduce(heads(ts))
        """,
        BITS,
    ),
    "torch_arithmetic_read_back": (
        """
        import torch
        def heads(ts):
            bases = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return (bases + 128).tolist()
        """,
        NONE,
    ),
    "numpy_signed_offsets": (
        """
        import numpy as np
        import my_ext
        def blocks(regions, ids: np.ndarray):
            bases = np.array([r.data_ptr() for r in regions], dtype=np.int64)
            my_ext.descriptors(bases[:, None] + ids[None, :] * 256)
        """,
        BITS,
    ),
    "numpy_python_int_offset": (
        """
        import numpy as np
        def blocks(regions):
            bases = np.array([r.data_ptr() for r in regions], dtype=np.int64)
            return (bases + 64).tolist()
        """,
        UINT64,
    ),
    "dtype_check": (
        """
        import torch
        def launch(table):
            if table.dtype != torch.int64:
                raise TypeError("int64 pointers")
        def f(ts):
            launch(torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64))
        """,
        BITS,
    ),
    "element_type": (
        """
        import cutlass
        import torch
        from cutlass.torch import from_dlpack
        def f(ts):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return from_dlpack(table, cutlass.Int64)
        """,
        BITS,
    ),
    "collective_send": (
        """
        import torch
        import torch.distributed as dist
        def f(local, world):
            mine = torch.tensor([local.data_ptr()], dtype=torch.int64)
            outs = [torch.empty(1, dtype=torch.int64) for _ in range(world)]
            dist.all_gather(outs, mine)
            return torch.cat(outs).tolist()
        """,
        {4: BITS, 5: NONE},
    ),
    "ordering": (
        """
        import torch
        def f(ts, addrs):
            starts = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return torch.searchsorted(starts, addrs)
        """,
        NONE,
    ),
    "reduction": (
        """
        import torch
        def f(ts):
            ends = torch.tensor([t.data_ptr() + t.nbytes for t in ts], dtype=torch.int64)
            return int(ends.max())
        """,
        NONE,
    ),
    "implicit_dtype_binding": (
        """
        import torch
        import my_ext
        def f(ts):
            my_ext.launch(torch.tensor([t.data_ptr() for t in ts]))
        """,
        BITS,
    ),
    "tuple_unpacked_result": (  # items of a returned tuple are followed to what each is bound to
        """
        import torch
        import my_ext
        def tables(ts):
            src = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            dst = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return src, dst
        def run(ts):
            a, b = tables(ts)
            my_ext.copy(a)
            print(b.tolist())
        """,
        {4: BITS, 5: UINT64},
    ),
    "tuple_item_read": (
        """
        import torch
        def tables(ts):
            src = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            sizes = torch.tensor([t.nbytes for t in ts], dtype=torch.int64)
            return src, sizes
        def run(ts, kernel):
            pair = tables(ts)
            kernel[(1,)](pair[0])
            print((pair[1] + 1).tolist())
        """,
        UINT64,
    ),
    "items_of_an_enumerated_list": (  # `for i, t in enumerate(tables)` binds each item
        """
        import torch
        def tables(ts):
            a = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return [a]
        def run(ts, kernel):
            for i, t in enumerate(tables(ts)):
                kernel[(i,)](t)
        """,
        UINT64,
    ),
    "negative_index_may_be_the_table": (
        """
        import torch
        import my_ext
        def tables(ts):
            src = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            dst = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            return src, dst
        def run(ts):
            my_ext.launch(tables(ts)[-1])
        """,
        {4: BITS, 5: BITS},
    ),
    "property_read_as_an_attribute": (
        """
        import torch
        import my_ext
        class Pool:
            @property
            def table_ptrs(self):
                return torch.tensor([t.data_ptr() for t in self.ts], dtype=torch.int64)
        def run(pool):
            my_ext.launch(pool.table_ptrs)
        """,
        BITS,
    ),
    "returned_to_nobody": (  # a public function's result: its callers are not seen
        """
        import torch
        def table(ts):
            return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
        """,
        BITS,
    ),
    "attribute_nobody_reads": (
        """
        import torch
        class Holder:
            def __init__(self, ts):
                self.table_ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
        """,
        BITS,
    ),
    "attribute_read_by_a_kernel_launch": (  # every reader of the attribute seen and uint64-ready
        """
        import torch
        class Holder:
            def __init__(self, ts):
                self.table_ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            def launch(self, kernel):
                kernel[(1,)](self.table_ptrs)
        """,
        UINT64,
    ),
    "attribute_read_through_another_object": (  # `holder.table_ptrs` of an untyped object is a reader too
        """
        import torch
        class Holder:
            def __init__(self, ts):
                self.table_ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            def launch(self, kernel):
                kernel[(1,)](self.table_ptrs)
        def heads(holder, kernel):
            kernel[(1,)](holder.table_ptrs + 128)
        """,
        BITS,
    ),
    "dataclass_field_read_by_triton_and_views": (  # vLLM's MambaCopyBuffers before PR #44665
        """
        from dataclasses import dataclass
        import torch
        @dataclass
        class CopyBuffers:
            src_ptrs: torch.Tensor
            dst_ptrs: torch.Tensor
            @classmethod
            def create(cls, n):
                return cls(src_ptrs=torch.zeros(n, dtype=torch.int64), dst_ptrs=torch.zeros(n, dtype=torch.uint64))
        def stage(bufs, pairs):
            view = bufs.src_ptrs.numpy()
            for i, (src, dst) in enumerate(pairs):
                view[i] = src.data_ptr()
        def launch(bufs, kernel, n):
            kernel[(n,)](bufs.src_ptrs, bufs.dst_ptrs)
        """,
        UINT64,
    ),
    "mamba_copy_buffers_before_pr_44665": (  # the seed: make_buffer int64, read by views and a Triton launch only
        """
        from dataclasses import dataclass
        import torch
        @dataclass
        class MambaCopyBuffers:
            src_ptrs: object
            dst_ptrs: object
            sizes: object
            offset: int = 0
            @classmethod
            def create(cls, max_num_reqs, copy_funcs, make_buffer):
                entries = max_num_reqs * len(copy_funcs)
                return cls(src_ptrs=make_buffer(entries, dtype=torch.int64),
                           dst_ptrs=make_buffer(entries, dtype=torch.int64),
                           sizes=make_buffer(entries, dtype=torch.int32))
        def collect_copies(bufs, pairs):
            for src, dst in pairs:
                bufs.src_ptrs.np[bufs.offset] = src.data_ptr()
                bufs.dst_ptrs.np[bufs.offset] = dst.data_ptr()
                bufs.sizes.np[bufs.offset] = src.nbytes
                bufs.offset += 1
        def do_copies(bufs, batch_memcpy_kernel):
            n = bufs.offset
            batch_memcpy_kernel[(n,)](bufs.src_ptrs.copy_to_gpu(n), bufs.dst_ptrs.copy_to_gpu(n),
                                      bufs.sizes.copy_to_gpu(n), BLOCK_SIZE=1024)
        """,
        {12: UINT64, 13: UINT64},
    ),
    "dataclass_field_read_by_torch_arithmetic": (
        """
        from dataclasses import dataclass
        import torch
        @dataclass
        class Peers:
            addresses: torch.Tensor
        def make(ts):
            return Peers(torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64))
        def heads(peers, kernel):
            kernel[(1,)](peers.addresses + 64)
        """,
        BITS,
    ),
    "method_of_untyped_object": (
        """
        import torch
        def f(ts, runner):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            runner.launch(table)
        """,
        BITS,
    ),
    "module_from_a_project_loader": (  # flashinfer's `_get_bgmv_moe_module()`: a JIT build of the project
        """
        import torch
        def _get_module():
            from .jit import load
            return load("bgmv")
        def shrink(ts):
            w_ptr = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            mod = _get_module()
            mod.bgmv_shrink(w_ptr)
        """,
        BITS,
    ),
    "compiled_kernel_through_a_local_name": (
        """
        import torch
        import tilelang
        def f(ts, prim_func):
            table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            kernel = tilelang.compile(prim_func)
            kernel(table)
        """,
        BITS,
    ),
    "inherited_method": (  # `self.run(table)` reaches the base class's `run`, which does arithmetic
        """
        import torch
        class Base:
            def run(self, table):
                return table + 8
        class Child(Base):
            def go(self, ts):
                table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
                return self.run(table).tolist()
        """,
        NONE,
    ),
    "method_called_by_name": (  # `copier.pending()` of an untyped receiver is a call of the method
        """
        import torch
        class Copier:
            def pending(self, ts):
                return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
        def heads(copier, ts, kernel):
            kernel[(1,)](copier.pending(ts) + 8)
        """,
        BITS,
    ),
    "name_only_values_of_unknown_sign": (  # a binding may hand back int64_t: negative for high addresses
        """
        import torch
        def f(engine, kernel):
            raddr = engine.get_remote_addr()
            raddr_tensor = torch.tensor([raddr], dtype=torch.int64)
            kernel[(1,)](raddr_tensor)
        """,
        NONE,
    ),
    "negative_fill": (
        """
        import torch
        def f(ts, kernel):
            table_ptrs = torch.full((len(ts),), -1, dtype=torch.int64)
            for i, t in enumerate(ts):
                table_ptrs.numpy()[i] = t.data_ptr()
            kernel[(1,)](table_ptrs)
        """,
        NONE,
    ),
    "dict_item_read_by_get": (  # `d[key] = table` then `d.get(key)`: the item read back is the table,
        # and its only reader wants Python ints (right from uint64): no view needed
        """
        import torch
        class C:
            def __init__(self):
                self.tables = {}
            def add(self, key, ts):
                table = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
                self.tables[key] = table
            def run(self, key):
                return self.tables.get(key).tolist()
        """,
        UINT64,
    ),
    "factory_without_view": (
        """
        import torch
        import my_ext
        class C:
            def __init__(self, ts):
                self.table_ptrs = self._make_buffer(len(ts), dtype=torch.int64)
                self.table_ptrs.np[:] = [t.data_ptr() for t in ts]
            def run(self):
                my_ext.launch(self.table_ptrs.gpu)
        """,
        NONE,
    ),
}


def _lint(tmp_path: Path, source: str, *args: str) -> list[dict]:
    path = tmp_path / "m.py"
    path.write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--output-format", "json", *args, str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _kind(finding: dict) -> str:
    fix = finding["fix"]
    if fix is None or not fix["safe"]:
        return NONE
    return BITS if fix["title"].startswith("Create the table unsigned") else UINT64


@pytest.mark.parametrize("name", sorted(CASES))
def test_consumers_choose_the_fix(name, tmp_path):
    source, expected = CASES[name]
    source = textwrap.dedent(source).lstrip()
    findings = [f for f in _lint(tmp_path, source) if f["code"] in ("PTR001", "PTR002")]
    want = expected if isinstance(expected, dict) else {None: expected}
    assert len(findings) == len(want), findings
    for finding in findings:
        kind = want.get(finding["line"], want.get(None))
        assert _kind(finding) == kind, (finding["line"], finding["fix"])
        if kind != UINT64:  # the chosen fix names the use that chose it (or why it is unsafe) in its title
            assert "line" in finding["fix"]["title"], finding
        if kind == BITS:  # and the consumer is the last related location
            assert finding["related"][-1]["message"].startswith("consumer:"), finding


def test_configured_consumers_override_the_default(tmp_path):
    source = "import torch\nimport my_ext\n\ndef f(ts):\n    t = torch.tensor([x.data_ptr() for x in ts], dtype=torch.int64)\n    my_ext.launch(t)\n"
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nuint64-consumers = ["my_ext.*"]\n')
    path = tmp_path / "m.py"
    path.write_text(source)
    out = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--output-format", "json", "m.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert _kind(json.loads(out)[0]) == UINT64
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nint64-consumers = ["mypkg.readers.*"]\n')
    source = source.replace("import my_ext", "from mypkg import readers").replace("my_ext.launch", "readers.dump")
    path.write_text(source)
    out = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--output-format", "json", "m.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    finding = json.loads(out)[0]
    assert _kind(finding) == BITS and "configured as an int64 consumer" in finding["fix"]["title"]


def test_configured_consumers_are_validated(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nint64-consumers = "mypkg.*"\n')
    (tmp_path / "m.py").write_text("x = 1\n")
    proc = subprocess.run([sys.executable, "-m", "ptrlint", "m.py"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "int64-consumers" in proc.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nuint64-consumers = ["my pkg"]\n')
    proc = subprocess.run([sys.executable, "-m", "ptrlint", "m.py"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "uint64-consumers" in proc.stderr


@pytest.mark.parametrize(
    "source, flagged",
    [
        # written only by compiled code and read only by it: the bits fit int64 exactly
        (
            "import torch\nimport ext\n\nclass P:\n    def __init__(self, n):\n        self.peer_ptrs = torch.empty(n, dtype=torch.int64)\n"
            "        ext.fill(self.peer_ptrs)\n\n    def run(self):\n        ext.reduce(self.peer_ptrs)\n",
            False,
        ),
        # a placeholder that fixes a kernel's signature
        (
            "import torch\nimport ext\n\ndef compiled(n):\n    dummy_desc_ptrs = torch.empty(n, dtype=torch.int64)\n"
            "    return ext.compile(dummy_desc_ptrs)\n",
            False,
        ),
        # the same table read back as Python ints: negative above 2**63
        (
            "import torch\nimport ext\n\ndef peers(n):\n    peer_ptrs = torch.empty(n, dtype=torch.int64)\n"
            "    ext.fill(peer_ptrs)\n    return peer_ptrs.tolist()\n",
            True,
        ),
        # filled by compiled code, readers out of sight (an attribute nothing here reads)
        (
            "import torch\nimport ext\n\nclass P:\n    def __init__(self, n):\n        self.peer_ptrs = torch.empty(n, dtype=torch.int64)\n"
            "        ext.fill(self.peer_ptrs)\n",
            True,
        ),
        # Python ints enter: always a finding
        (
            "import torch\nimport ext\n\ndef f(ts):\n    ext.run(torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64))\n",
            True,
        ),
    ],
)
def test_only_python_ints_overflow(source, flagged, tmp_path):
    assert bool([f for f in _lint(tmp_path, source) if f["code"] == "PTR001"]) is flagged


@pytest.mark.parametrize(
    "source, safe",
    [
        ("import torch\nt = torch.zeros(4, dtype=torch.int64)\nt[0] = x.data_ptr()\n", True),
        ("import torch\nt = torch.zeros(4, dtype=torch.uint64)\nt.fill_(x.data_ptr())\n", True),
        ("import torch\nt = torch.zeros(4, dtype=torch.int32)\nt[0] = x.data_ptr()\n", False),  # would truncate
        ("import torch\ndef f(t: torch.Tensor, x):\n    t[0] = x.data_ptr()\n", False),  # dtype unknown
        # a value known to be an address only by its getter's name is not enough for one scalar store (it may
        # be a binding's int64_t, already wrapped): no finding (issue 62)
        ("import torch\nt = torch.zeros(4, dtype=torch.int64)\nt[0] = engine.get_remote_addr()\n", None),
    ],
)
def test_store_fix_is_safe_only_for_64_bit_tensors(source, safe, tmp_path):
    stores = [f for f in _lint(tmp_path, source) if f["code"] == "PTR005"]
    if safe is None:
        assert stores == []
        return
    assert len(stores) == 1 and stores[0]["fix"] is not None and stores[0]["fix"]["safe"] is safe


def test_result_consumers_across_modules(tmp_path):
    pkg = tmp_path / "pool"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tables.py").write_text(
        "import torch\n\n\ndef page_table(pages):\n    return torch.tensor([p.data_ptr() for p in pages], dtype=torch.int64)\n\n\n"
        "def slot_table(slots):\n    return torch.tensor([s.data_ptr() for s in slots], dtype=torch.int64)\n"
    )
    (pkg / "launch.py").write_text(
        "import my_ext\n\nfrom .tables import page_table, slot_table\n\n\ndef gather(pages):\n    return my_ext.gather(page_table(pages))\n\n\n"
        "def slots(ss):\n    return slot_table(ss).tolist()\n"
    )
    for target in (str(pkg), str(pkg / "tables.py")):  # the whole package, or one file (pre-commit)
        out = subprocess.run(
            [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--output-format", "json", target],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        ).stdout
        kinds = {f["line"]: _kind(f) for f in json.loads(out)}
        assert kinds == {5: BITS, 9: UINT64}, (target, kinds)
    out = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--output-format", "json", str(pkg)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    title = next(f["fix"]["title"] for f in json.loads(out) if f["line"] == 5)
    assert "launch.py:7" in title, title


# ----- fixed code runs --------------------------------------------------------------------------------
EXTENSION = """
import torch
MASK = (1 << 64) - 1
def gather(table):
    if table.dtype != torch.int64:
        raise TypeError(f"pointer table must be int64, got {table.dtype}")
    return [v & MASK for v in table.tolist()]
"""
PROGRAM = """
import torch
import intext

class Pool:
    def __init__(self, pages):
        self.page_ptrs = torch.tensor([p.data_ptr() for p in pages], dtype=torch.int64)
        self.slot_ptrs = torch.zeros(len(pages), dtype=torch.int64)
        self.readers = torch.tensor([p.data_ptr() for p in pages], dtype=torch.int64)
        for i, page in enumerate(pages):
            self.slot_ptrs[i] = page.data_ptr()

    def heads(self):
        return self.page_ptrs + 64

def scenario():
    pages = [torch.zeros(256, dtype=torch.uint8) for _ in range(3)]
    pool = Pool(pages)
    seen = intext.gather(pool.page_ptrs) + intext.gather(pool.heads()) + intext.gather(pool.slot_ptrs)
    seen += [int(v) for v in pool.readers[torch.tensor([2, 0])].tolist()]
    want = [p.data_ptr() for p in pages] + [p.data_ptr() + 64 for p in pages] + [p.data_ptr() for p in pages]
    want += [pages[2].data_ptr(), pages[0].data_ptr()]
    assert seen == want, (seen, want)
"""
RUN = """
import importlib, sys
from ptrlint.runtime import simulate_high_addresses
sys.path[:0] = [sys.argv[1], sys.argv[2]]
program = importlib.import_module("program")
program.scenario()
with simulate_high_addresses():
    program.scenario()
print("OK")
"""


def _run_program(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PTRLINT_SIMULATE_HIGH_ADDRESSES"}
    return subprocess.run(
        [sys.executable, "-c", RUN, str(folder / "app"), str(folder / "ext")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )


def test_fixed_program_keeps_working_and_survives_high_addresses(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "intext.py").write_text(EXTENSION)  # outside the linted project: a compiled binding
    app = tmp_path / "app"
    app.mkdir()
    (app / "program.py").write_text(PROGRAM)
    before = _run_program(tmp_path)
    assert before.returncode != 0 and "Overflow" in before.stderr  # the bug is real under the simulation
    fix = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--fix", "program.py"],
        capture_output=True,
        text=True,
        cwd=app,
    )
    assert "0 remaining" in fix.stdout, fix.stdout + fix.stderr
    fixed = (app / "program.py").read_text()
    assert "dtype=torch.uint64).view(torch.int64)" in fixed  # int64-bound: bit-preserving
    assert "torch.tensor(page.data_ptr(), dtype=torch.uint64)" in fixed  # the store
    after = _run_program(tmp_path)
    assert after.returncode == 0 and after.stdout.strip() == "OK", after.stderr
    again = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--fix", "program.py"],
        capture_output=True,
        text=True,
        cwd=app,
    )
    assert (app / "program.py").read_text() == fixed and again.returncode == 0, again.stdout  # idempotent, clean


def test_cast_fix_names_the_consumer_of_the_result(tmp_path):
    source = (
        "import torch\n\ndef f(ts):\n    t = torch.tensor([x.data_ptr() for x in ts], dtype=torch.uint64)\n"
        "    torch.ops.ext.run(t.long())\n"
    )
    casts = [f for f in _lint(tmp_path, source) if f["code"] == "PTR004"]
    assert len(casts) == 1 and not casts[0]["fix"]["safe"]
    assert "torch.ops.ext.run()" in casts[0]["fix"]["title"] and casts[0]["related"][-1]["message"].startswith(
        "consumer:"
    )


COPIES = """
import copy

import numpy as np
import torch

MASK = (1 << 64) - 1


def scenario():
    pages = [torch.zeros(64, dtype=torch.uint8) for _ in range(3)]
    want = [p.data_ptr() for p in pages]
    table = torch.tensor([p.data_ptr() for p in pages], dtype=torch.int64)
    assert copy.deepcopy(table).tolist() == want
    shallow = torch.tensor([p.data_ptr() for p in pages], dtype=torch.int64)
    assert [v & MASK for v in copy.copy(shallow).tolist()] == want
    array = np.array([p.data_ptr() for p in pages], dtype=np.int64)
    assert copy.copy(array).tolist() == want
"""


def test_copies_keep_working_after_the_fix_at_high_addresses(tmp_path):
    """The copy module's consumer class, run: `copy.deepcopy` of a uint64 tensor and `copy.copy` of a
    uint64 array work (uint64 fixes), `copy.copy` of a uint64 tensor does not (a bit-preserving fix)."""
    pytest.importorskip("torch")
    import copy as copy_module

    import torch

    with pytest.raises(AttributeError):  # why `copy.copy` of a torch table needs int64 (torch 2.13)
        copy_module.copy(torch.tensor([1], dtype=torch.uint64))
    app = tmp_path / "app"
    app.mkdir()
    (app / "program.py").write_text(COPIES)
    (tmp_path / "ext").mkdir()
    assert _run_program(tmp_path).returncode != 0  # int64 tables overflow at simulated high addresses
    fix = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--fix", "program.py"],
        capture_output=True,
        text=True,
        cwd=app,
    )
    fixed = (app / "program.py").read_text()
    assert "0 remaining" in fix.stdout, fix.stdout + fix.stderr
    assert fixed.count("dtype=torch.uint64)") == 2 and "dtype=np.uint64)" in fixed
    assert "dtype=torch.uint64).view(torch.int64)" in fixed  # the shallow-copied tensor keeps int64 bits
    after = _run_program(tmp_path)
    assert after.returncode == 0 and after.stdout.strip() == "OK", after.stderr
