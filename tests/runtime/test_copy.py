"""Copy correctness: the CPU memmove path and the Triton kernel under TRITON_INTERPRET=1."""

from __future__ import annotations

import pytest
import torch
from ptrlint.runtime import MemoryRegions, batch_memcpy

SIZES = [0, 1, 3, 17, 1000, 4096, 65537]
_keep_alive: list = []


def _random_table(n: int, sizes: list[int], seed: int):
    gen = torch.Generator().manual_seed(seed)
    slot = max(sizes + [1])
    src = torch.randint(0, 256, (n * slot,), dtype=torch.uint8, generator=gen)
    dst = torch.zeros(n * slot, dtype=torch.uint8)
    perm_s = torch.randperm(n, generator=gen).tolist()
    perm_d = torch.randperm(n, generator=gen).tolist()
    entry_sizes = [sizes[i % len(sizes)] for i in range(n)]
    src_ptrs = torch.tensor([src.data_ptr() + perm_s[i] * slot for i in range(n)], dtype=torch.uint64)
    dst_ptrs = torch.tensor([dst.data_ptr() + perm_d[i] * slot for i in range(n)], dtype=torch.uint64)
    expected = torch.zeros_like(dst)
    for i in range(n):
        k = entry_sizes[i]
        expected[perm_d[i] * slot : perm_d[i] * slot + k] = src[perm_s[i] * slot : perm_s[i] * slot + k]
    regions = MemoryRegions()
    regions.add(src)
    regions.add(dst)
    _keep_alive.append(src)  # the table holds raw addresses: the source must outlive the copy
    return src_ptrs, dst_ptrs, torch.tensor(entry_sizes, dtype=torch.int32), dst, expected, regions


@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 300])
@pytest.mark.parametrize("check", ["off", "fast", "strict"])
def test_cpu_path_copies_exactly(n, check):
    src_ptrs, dst_ptrs, sizes, dst, expected, regions = _random_table(n, SIZES, seed=n)
    batch_memcpy(src_ptrs, dst_ptrs, sizes, check=check, regions=regions)
    assert torch.equal(dst, expected)


def test_numpy_tables_work_too():
    src_ptrs, dst_ptrs, sizes, dst, expected, regions = _random_table(9, SIZES, seed=3)
    batch_memcpy(src_ptrs.numpy(), dst_ptrs.numpy(), sizes.numpy(), check="strict", regions=regions)
    assert torch.equal(dst, expected)


@pytest.mark.parametrize("n, sizes, block", [(1, [1], 64), (3, [0, 5, 130], 64), (4, [1000, 17, 0, 4096], 4096)])
def test_triton_kernel_copies_exactly_under_the_interpreter(n, sizes, block):
    pytest.importorskip("triton")
    src_ptrs, dst_ptrs, entry_sizes, dst, expected, regions = _random_table(n, sizes, seed=n + 11)
    batch_memcpy(src_ptrs, dst_ptrs, entry_sizes, check="strict", regions=regions, backend="triton", block_size=block)
    assert torch.equal(dst, expected)


@pytest.mark.real_addresses  # launches the raw kernel on its own table: nothing translates a simulated address
def test_triton_kernel_reads_addresses_above_2_63_as_unsigned():
    """The kernel's address load must not sign-extend: a uint64 value >= 2**63 round-trips."""
    pytest.importorskip("triton")
    import numpy as np
    from ptrlint.runtime import _triton_kernel

    # Copy the 8 bytes *of a table* (not through it): a pointer table entry holding 2**63 + 16.
    holder = torch.tensor([2**63 + 16], dtype=torch.uint64)
    out = torch.zeros(1, dtype=torch.uint64)
    table = torch.tensor([holder.data_ptr()], dtype=torch.uint64), torch.tensor([out.data_ptr()], dtype=torch.uint64)
    _triton_kernel.launch(table[0], table[1], torch.tensor([8], dtype=torch.int32), 64)
    assert out.numpy()[0] == np.uint64(2**63 + 16)


def test_cpu_backend_refuses_device_tables_and_unknown_backend():
    u = torch.zeros(1, dtype=torch.uint64)
    with pytest.raises(ValueError, match="unknown backend"):
        batch_memcpy(u, u, torch.zeros(1, dtype=torch.int32), check="off", backend="cuda-graph")


@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("check", ["fast", "strict"])
def test_left_overlap_with_its_own_source_copies_like_memmove(backend, check):
    """vLLM's kernel semantics: a destination below its own, overlapping source is a valid entry."""
    if backend == "triton":
        pytest.importorskip("triton")
    buf = torch.arange(6000, dtype=torch.int32).to(torch.uint8)
    expected = buf.clone()
    expected[100 : 100 + 3000] = buf[400 : 400 + 3000].clone()
    regions = MemoryRegions()
    regions.add(buf)
    table = lambda off: torch.tensor([buf.data_ptr() + off], dtype=torch.uint64)  # noqa: E731
    batch_memcpy(
        table(400), table(100), torch.tensor([3000], dtype=torch.int32), check=check, regions=regions, backend=backend
    )
    assert torch.equal(buf, expected)


def test_strict_rejects_a_destination_inside_its_own_source():
    from ptrlint.runtime import PointerOverlapError

    buf = torch.zeros(8192, dtype=torch.uint8)
    regions = MemoryRegions()
    regions.add(buf)
    table = lambda off: torch.tensor([buf.data_ptr() + off], dtype=torch.uint64)  # noqa: E731
    with pytest.raises(PointerOverlapError, match="starts inside its own source"):
        batch_memcpy(table(100), table(400), torch.tensor([3000], dtype=torch.int32), check="strict", regions=regions)
