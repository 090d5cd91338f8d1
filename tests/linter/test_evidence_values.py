"""Evidence that follows values (issue 42): an address keeps its meaning through ``**kwargs``
dictionaries, loops over literal pairs, dicts read with computed keys, closures, function
results named like addresses, tuple results of numpy calls, attributes written by other methods,
several lists taken together and OpenSHMEM-style translations reached through any object.

Each case is a small project; a line marked ``# expect: CODE`` must get exactly that finding and
every other line none. The look-alikes beside each positive case are the shapes that must stay
quiet: the same flow carrying sizes, offsets or counts instead of addresses.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CASES: dict[str, dict[str, str]] = {
    "dtype_in_a_kwargs_dict": {
        "app/peers.py": """
            import torch

            def peers(handle, device):
                i64 = dict(dtype=torch.int64, device=device)
                return torch.tensor(handle.buffer_ptrs, **i64)  # expect: PTR001

            def two(handles, device):
                opts = {"dtype": torch.int64, "device": device}
                a = torch.tensor(handles[0].buffer_ptrs, **opts)  # expect: PTR001
                b = torch.tensor([7, 8], **opts)
                return a, b

            def sizes(handle, device):
                i64 = dict(dtype=torch.int64, device=device)
                return torch.tensor(handle.sizes, **i64)

            def unknown(handle, opts):
                return torch.tensor(handle.buffer_ptrs, **opts)
        """,
    },
    "loop_over_literal_pairs": {
        "app/exchange.py": """
            import torch

            class Exchange(torch.nn.Module):
                def __init__(self, layers, ids, rows, device):
                    super().__init__()
                    metadata = []
                    for layer in layers:
                        metadata.append((layer.weight.data_ptr(), layer.scale.data_ptr()))
                    for name, data in (("metadata", metadata), ("id_ptrs", ids.buffer_ptrs)):
                        self.register_buffer(name, torch.tensor(data, dtype=torch.int64, device=device))  # expect: PTR001
                    for label, values in (("starts", [0, 4]), ("lens", [4, 4])):
                        self.register_buffer(label, torch.tensor(values, dtype=torch.int64, device=device))
                    for t in (self.metadata, rows):
                        t.zero_()
        """,
    },
    "dict_read_with_a_computed_key": {
        "app/runner.py": """
            import torch

            ARGS = ("x", "w", "out")

            def args_table(x, w, out, device):
                ptrs = {"x": x.data_ptr(), "w": w.data_ptr(), "out": out.data_ptr()}
                return torch.tensor([ptrs[a] for a in ARGS], dtype=torch.int64, device=device)  # expect: PTR001

            def sizes_table(x, w, out, device):
                sizes = {"x": x.numel(), "w": w.numel(), "out": out.numel()}
                return torch.tensor([sizes[a] for a in ARGS], dtype=torch.int64, device=device)
        """,
    },
    "addresses_returned_by_a_method_of_another_module": {
        "app/comm.py": """
            class Allreduce:
                @staticmethod
                def create_shared_buffer(size, group=None):
                    pointer, handle = _ops.allocate(size)
                    pointers: list[int] = []
                    for h in group.handles(handle):
                        pointers.append(_ops.open_handle(h))
                    return pointers

                @staticmethod
                def shared_sizes(group=None):
                    sizes: list[int] = []
                    for h in group.handles(None):
                        sizes.append(_ops.size_of(h))
                    return sizes

            def peer_table(group):
                \"\"\"Returns every rank's device addresses.\"\"\"
                return _ops.exchange(group)

            def count_table(group):
                \"\"\"Returns the number of pointers each rank holds.\"\"\"
                return _ops.counts(group)

            def arg_table(group):
                \"\"\"Returns the list of pointer args a launch takes, with information about pointers.\"\"\"
                return _ops.args(group)
        """,
        "app/indexer.py": """
            import torch

            def alloc(nbytes, group):
                from app.comm import Allreduce
                peers = Allreduce.create_shared_buffer(nbytes, group=group)
                return torch.tensor(peers, dtype=torch.int64, device="cpu")  # expect: PTR001

            def sizes(group):
                from app.comm import Allreduce
                found = Allreduce.shared_sizes(group=group)
                return torch.tensor(found, dtype=torch.int64, device="cpu")

            def tables(group):
                from app import comm
                a = torch.tensor(comm.peer_table(group), dtype=torch.int64)  # expect: PTR001
                b = torch.tensor(comm.count_table(group), dtype=torch.int64)
                c = torch.tensor(comm.arg_table(group), dtype=torch.int64)
                return a, b, c
        """,
    },
    "list_filled_through_a_closure": {
        "app/layout.py": """
            import numpy as np

            class Layout:
                def __init__(self):
                    self.kv_base_addr: list[int] = []
                    self.block_len: list[int] = []

                def register(self, caches):
                    base_addrs: list[int] = []
                    lens: list[int] = []

                    def add_region(addr: int, length: int) -> None:
                        base_addrs.append(addr)
                        lens.append(length)

                    for cache in caches:
                        add_region(cache.data_ptr(), cache.nbytes)
                    self.kv_base_addr = base_addrs
                    self.block_len = lens

                def prepare(self, ids):
                    base = np.asarray(self.kv_base_addr, dtype=np.int64)  # expect: PTR001
                    length = np.asarray(self.block_len, dtype=np.int64)
                    return (base[None, :] + ids[:, None] * length).tolist()
        """,
    },
    "signed_operands_from_divmod_and_other_methods": {
        "app/dma.py": """
            import numpy as np

            class Worker:
                def setup(self, n, rows):
                    self.starts = np.fromiter(range(n), dtype=np.int64, count=n)
                    self.rows = np.asarray(rows, dtype=np.int64)

                def run(self, desc, source, block):
                    starts = self.starts
                    rows = self.rows[:, 0]
                    blocks, offsets = np.divmod(rows, block)
                    desc.src_np[:] = (
                        source.data_ptr()  # expect: PTR007
                        + blocks * source.stride(0)
                        + offsets * source.element_size()
                    )
                    desc.dst_np[:] = source.data_ptr() + starts * 8  # expect: PTR007
                    desc.sizes_np[:] = blocks * source.stride(0) + offsets
        """,
    },
    "lists_reindexed_per_group": {
        "app/groups.py": """
            import torch

            def tables(params, groups, device):
                grad_ptrs = [p.grad.data_ptr() for p in params]
                numels = [p.numel() for p in params]
                out = []
                for group in groups:
                    out.append(torch.tensor([grad_ptrs[i] for i in group], dtype=torch.int64, device=device))  # expect: PTR001
                    out.append(torch.tensor([numels[i] for i in group], dtype=torch.int64, device=device))
                return out
        """,
    },
    "factory_of_another_module_with_a_positional_numpy_dtype": {
        "app/devutil.py": """
            import numpy as np
            import torch

            def todevice(values, dtype):
                return torch.from_numpy(np.asarray(values, dtype=dtype)).cuda()
        """,
        "app/build.py": """
            import numpy as np
            import torch

            from .devutil import todevice

            def build(ts):
                host_ptrs = [t.data_ptr() for t in ts]
                return todevice(host_ptrs, np.int64)  # expect: PTR001

            def lengths(ts):
                return todevice([t.numel() for t in ts], np.int64)
        """,
    },
    "peer_translation_through_any_object": {
        "app/shmem.py": """
            import torch

            def peers(ms, t, rank, world):
                table = torch.zeros(world, dtype=torch.int64)  # expect: PTR001
                for pe in range(world):
                    table[pe] = ms.shmem_ptr_p2p(t.data_ptr(), rank, pe)  # expect: PTR005
                return table

            def ranks(ms, world):
                table = torch.zeros(world, dtype=torch.int64)
                for pe in range(world):
                    table[pe] = ms.shmem_team_translate_pe(pe)
                return table
        """,
    },
    "dict_comprehensions": {
        "app/named.py": """
            import torch

            def by_name(tensors, names):
                ptrs = {name: t.data_ptr() for name, t in tensors.items()}
                a = torch.tensor([ptrs[n] for n in names], dtype=torch.int64)  # expect: PTR001
                b = torch.tensor(list(ptrs.values()), dtype=torch.int64)  # expect: PTR001
                return a, b

            def by_address(tensors):
                owner = {t.data_ptr(): name for name, t in tensors.items()}
                return torch.tensor(list(owner.keys()), dtype=torch.int64)  # expect: PTR001

            def sizes(tensors, names):
                numels = {name: t.numel() for name, t in tensors.items()}
                a = torch.tensor([numels[n] for n in names], dtype=torch.int64)
                b = torch.tensor(list(numels.values()), dtype=torch.int64)
                return a, b, torch.tensor(list(numels.keys()))
        """,
    },
    "return_annotation_names_an_address_type": {
        "app/pool.py": """
            from typing import NewType

            import torch

            DevicePtr = NewType("DevicePtr", int)

            class Pool:
                def peers(self) -> list[DevicePtr]:
                    return self._ext.peers()

                def sizes(self) -> list[int]:
                    return self._ext.sizes()

            def tables(pool: Pool):
                a = torch.tensor(pool.peers(), dtype=torch.int64)  # expect: PTR001
                b = torch.tensor(pool.sizes(), dtype=torch.int64)
                return a, b
        """,
    },
    "values_of_a_sort_or_unique": {
        "app/order.py": """
            import numpy as np
            import torch

            def ordered(ts):
                ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)
                values, order = torch.sort(ptrs)
                a = torch.tensor(values.tolist(), dtype=torch.int64)  # expect: PTR001
                b = torch.tensor(order.tolist(), dtype=torch.int64)
                return a, b

            def distinct(ts):
                bases = np.array([t.data_ptr() for t in ts], dtype=np.uint64)
                unique, counts = np.unique(bases, return_counts=True)
                table = np.asarray(unique.tolist(), dtype=np.int64)  # expect: PTR001
                return table, np.asarray(counts, dtype=np.int64)
        """,
    },
    "derived_copies_of_an_implicit_int64_table": {
        "app/stacked.py": """
            import torch

            def weights_table(layers, device):
                tables = [torch.tensor([w.data_ptr() for w in layer.weights]) for layer in layers]  # expect: PTR002
                return torch.stack(tables).T.contiguous().to(device)

            def numel_table(layers, device):
                tables = [torch.tensor([w.numel() for w in layer.weights]) for layer in layers]
                return torch.stack(tables).T.contiguous().to(device)
        """,
    },
    "monkey_patched_factory_substitutes_int64": {
        "app/patch.py": """
            import torch

            _empty = torch.empty

            def _patched_empty(*shape, dtype=None, **kwargs):
                if dtype == torch.uint64:
                    dtype = torch.int64  # expect: PTR001
                return _empty(*shape, dtype=dtype, **kwargs)

            def _patched_zeros(*shape, dtype=None, **kwargs):
                if dtype == torch.float64:
                    dtype = torch.float32
                return torch.zeros(*shape, dtype=dtype, **kwargs)

            torch.empty = _patched_empty
            torch.zeros = _patched_zeros
        """,
        "app/tables.py": """
            import torch

            def peer_table(tensors):
                peer_ptrs = torch.empty(len(tensors), dtype=torch.uint64)
                peer_ptrs.numpy()[:] = [t.data_ptr() for t in tensors]
                return peer_ptrs

            def lengths(tensors):
                lens = torch.empty(len(tensors), dtype=torch.uint64)
                lens.numpy()[:] = [t.numel() for t in tensors]
                return lens
        """,
    },
    "several_lists_converted_together": {
        "app/pairs.py": """
            import torch

            def pairs(a, b, n, stride, device):
                srcs, dsts = [], []
                for i in range(n):
                    srcs.append(a.data_ptr() + i * stride)
                    dsts.append(b.data_ptr() + i * stride)
                return torch.tensor(list(zip(srcs, dsts)), dtype=torch.int64, device=device)  # expect: PTR001

            def spans(n, stride, device):
                starts, ends = [], []
                for i in range(n):
                    starts.append(i * stride)
                    ends.append((i + 1) * stride)
                return torch.tensor(list(zip(starts, ends)), dtype=torch.int64, device=device)
        """,
    },
}

_EXPECT = re.compile(r"#\s*expect:\s*(PTR\d{3})")


def _write(root: Path, files: dict[str, str]) -> dict[tuple[str, int], str]:
    expected: dict[tuple[str, int], str] = {}
    for rel, text in files.items():
        text = textwrap.dedent(text).lstrip()
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for number, line in enumerate(text.splitlines(), 1):
            found = _EXPECT.search(line)
            if found:
                expected[(rel, number)] = found.group(1)
    for package in {root / Path(rel).parent for rel in files}:
        init = package / "__init__.py"
        if not init.exists():
            init.write_text("")
    return expected


def _lint(root: Path, *args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--output-format", "json", *args, "app"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", sorted(CASES))
def test_evidence_follows_values(name, tmp_path):
    expected = _write(tmp_path, CASES[name])
    found = {(Path(f["path"]).as_posix(), f["line"]): f["code"] for f in _lint(tmp_path)}
    assert found == expected


def test_kwargs_dtype_fix_overrides_it_in_that_call_only(tmp_path):
    """The dict may serve other calls (data tables, sizes): the fix changes the dtype this call gets,
    and the fixed table holds an address above 2**63 where the original raised."""
    source = textwrap.dedent("""
        import torch
        from ptrlint.runtime import simulate_high_addresses

        def table(tensors, device):
            i64 = dict(dtype=torch.int64, device=device)
            ptrs = torch.tensor([t.data_ptr() for t in tensors], **i64)
            sizes = torch.tensor([t.numel() for t in tensors], **i64)
            return ptrs, sizes

        def run():
            tensors = [torch.zeros(4), torch.zeros(2)]
            with simulate_high_addresses():
                ptrs, sizes = table(tensors, "cpu")
                assert ptrs.view(torch.uint64).tolist() == [t.data_ptr() for t in tensors], ptrs
                assert all(t.data_ptr() >= 2**63 for t in tensors)
            assert sizes.dtype == torch.int64 and sizes.tolist() == [4, 2]
            signed_consumer(ptrs)

        def signed_consumer(t):
            assert t.dtype == torch.int64
    """).lstrip()
    (tmp_path / "m.py").write_text(source)
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--fix", "m.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = (tmp_path / "m.py").read_text()
    assert (
        'ptrs = torch.tensor([t.data_ptr() for t in tensors], **{**i64, "dtype": torch.uint64}).view(torch.int64)'
        in fixed
    ), fixed
    assert "sizes = torch.tensor([t.numel() for t in tensors], **i64)" in fixed
    run = subprocess.run([sys.executable, "-c", "import m; m.run()"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    original = subprocess.run(
        [sys.executable, "-c", source + "\nrun()\n"], capture_output=True, text=True, cwd=tmp_path
    )
    assert "Overflow" in original.stderr  # the bug the fix removes


def test_whole_sum_is_computed_in_uint64(tmp_path):
    """PTR007 on `ptr + blocks * stride + offsets * size`: every signed operand of the sum becomes
    uint64 (a fix that stopped at the first `+` would meet int64 again and give float64)."""
    root = tmp_path
    _write(root, CASES["signed_operands_from_divmod_and_other_methods"])
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--fix", "app"],
        capture_output=True,
        text=True,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = (root / "app" / "dma.py").read_text()
    assert "np.uint64(source.data_ptr())" in fixed
    assert "blocks.astype(np.uint64) * source.stride(0)" in fixed
    assert "offsets.astype(np.uint64) * source.element_size()" in fixed
    assert "starts.astype(np.uint64) * 8" in fixed
    program = textwrap.dedent("""
        import numpy as np
        from app.dma import Worker

        class Desc:
            def __init__(self, n):
                self.src_np = np.zeros(n, dtype=np.int64)
                self.dst_np = np.zeros(n, dtype=np.int64)
                self.sizes_np = np.zeros(n, dtype=np.int64)

        class Source:
            def data_ptr(self):
                return 2**63 + 4096
            def stride(self, dim):
                return 64
            def element_size(self):
                return 2

        w = Worker()
        w.setup(3, [[0], [5], [9]])
        d = Desc(3)
        w.run(d, Source(), 4)
        assert d.src_np.view(np.uint64).tolist() == [2**63 + 4096, 2**63 + 4096 + 64 + 2, 2**63 + 4096 + 128 + 2]
        assert d.dst_np.view(np.uint64).tolist() == [2**63 + 4096 + 8 * i for i in range(3)]
    """)
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
