"""The batched-copy descriptor checks (``runtime/descriptors.py``) and the regions they read, without vLLM.

vLLM's own pools are exercised in ``tests/vllm_integration/test_transfers_034.py``; here the checks alone, at the
boundaries: a range that ends exactly at 2**64 is one a region can hold, one byte more wraps and is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ptrlint.runtime import PointerBoundsError, PointerDtypeError, PointerRoundTripError
from ptrlint.runtime.descriptors import check_copies, check_dtypes, checked_swap, platform_dtype
from ptrlint.runtime.regions import MemoryRegions

TOP = 1 << 64


def _table(values: list[int], dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.from_numpy(np.array(values, dtype=np.uint64)).view(dtype)


def test_without_vllm_the_platform_takes_int64():
    assert platform_dtype() == torch.int64


@pytest.mark.parametrize(
    ("src_dtype", "dst_dtype", "refused"),
    [(torch.int64, torch.int64, None), (torch.uint64, torch.int64, "src_ptrs"), (torch.int64, torch.int32, "dst_ptrs")],
)
def test_the_pointer_tables_must_have_the_platforms_dtype(src_dtype, dst_dtype, refused):
    src, dst, sizes = (
        torch.zeros(2, dtype=src_dtype),
        torch.zeros(2, dtype=dst_dtype),
        torch.zeros(2, dtype=torch.int64),
    )
    if refused is None:
        check_dtypes(src, dst, sizes, "pool")
        return
    with pytest.raises(PointerDtypeError, match=rf"^pool {refused} has dtype \w+, but swap_blocks_batch reads int64"):
        check_dtypes(src, dst, sizes, "pool")


def test_the_three_tables_must_be_one_dimensional_of_one_length():
    with pytest.raises(PointerBoundsError, match="1-D of one length"):
        check_dtypes(torch.zeros(2, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), torch.zeros(2), "pool")


@pytest.mark.parametrize(
    ("start", "nbytes", "accepted"),
    [
        (TOP - 4096, 4096, True),  # ends exactly at 2**64
        (TOP - 4096, 4095, True),
        (TOP - 4096, 4097, False),  # one byte past 2**64: the inclusive end wraps to 0
        (TOP - 8, 8192, False),  # the example: ends at 0x1ff7 once wrapped
        (TOP - 1, 2, False),
    ],
)
def test_a_copy_that_runs_past_2_64_is_refused(start, nbytes, accepted):
    regions = MemoryRegions()
    regions.add_range(TOP - 4096, 4096, "top page")
    regions.add_range(0x1000, 0x10000, "low memory")  # where a wrapped end would land
    src, dst = _table([start]), _table([start])
    sizes = torch.tensor([nbytes])
    if accepted:
        check_copies(src, dst, sizes, "pool", regions)
        return
    with pytest.raises(
        PointerBoundsError, match=r"^entry 0 of pool src_ptrs: \[0x[0-9a-f]+, \+\d+\) (runs past 2\*\*64|is not)"
    ):
        check_copies(src, dst, sizes, "pool", regions)


def test_every_entry_and_both_ends_are_checked_and_the_error_names_them():
    regions = MemoryRegions()
    a, b = torch.zeros(64, dtype=torch.uint8), torch.zeros(64, dtype=torch.uint8)
    regions.add(a, "a")
    regions.add(b, "b")
    base_a, base_b = a.data_ptr(), b.data_ptr()
    check_copies(_table([base_a, base_a + 32]), _table([base_b, base_b + 32]), torch.tensor([32, 32]), "pool", regions)
    with pytest.raises(PointerBoundsError, match=r"^entry 1 of pool dst_ptrs: \[0x[0-9a-f]+, \+33\) is not inside one"):
        check_copies(_table([base_a, base_a]), _table([base_b, base_b + 32]), torch.tensor([32, 33]), "pool", regions)
    with pytest.raises(PointerBoundsError, match=r"^entry 0 of pool src_ptrs: null address"):
        check_copies(_table([0]), _table([base_b]), torch.tensor([8]), "pool", regions)
    with pytest.raises(PointerBoundsError, match=r"^entry 0 of pool sizes: -1 bytes is negative"):
        check_copies(_table([base_a]), _table([base_b]), torch.tensor([-1]), "pool", regions)


def test_a_freed_buffer_is_never_accepted_again():
    regions = MemoryRegions()
    a = torch.zeros(64, dtype=torch.uint8)
    keep = torch.zeros(64, dtype=torch.uint8)
    regions.add(a, "a")
    regions.add(keep, "keep")
    address = a.data_ptr()
    check_copies(_table([address]), _table([keep.data_ptr()]), torch.tensor([64]), "pool", regions)
    del a
    with pytest.raises(PointerBoundsError, match="is not inside one registered region"):
        check_copies(_table([address]), _table([keep.data_ptr()]), torch.tensor([64]), "pool", regions)


def test_ensure_keeps_one_region_per_allocation_however_often_it_is_registered():
    regions = MemoryRegions()
    a = torch.zeros(64, dtype=torch.uint8)
    first = regions.ensure(a, "a")
    for _ in range(100):  # a strict wrapper registering what a table is filled from at every fill
        assert regions.ensure(a[8:], "a view") is first  # a view: the same allocation
    assert len(regions) == 1
    regions.add(a, "a again")  # add() keeps its meaning: one region per call, removed one per call
    assert len(regions) == 2


def test_checked_swap_checks_at_strict_only_and_hands_the_tables_on():
    calls = []
    swap = checked_swap(lambda s, d, n, **kw: calls.append((s, d, n, kw)), "pool", "fast")
    bad = _table([0])  # null: fast does not read entries
    swap(bad, bad, torch.tensor([8]), is_src_access_order_any=True)
    assert len(calls) == 1 and calls[0][3] == {"is_src_access_order_any": True}
    strict = checked_swap(lambda *a, **k: calls.append(a), "pool", "strict")
    with pytest.raises(PointerBoundsError, match="null address"):
        strict(bad, bad, torch.tensor([8]))
    assert len(calls) == 1  # refused before the copy


def test_a_round_trip_failure_names_the_remedy_for_the_tables_dtype():
    from ptrlint.runtime.fused import Target, check_targets

    regions = MemoryRegions()
    t = torch.zeros(16)
    regions.add(t, "t")
    target = [Target(address=t.data_ptr(), nbytes=64, label="state")]
    for dtype, remedy in ((torch.uint64, "Store each address as it is"), (torch.int64, "_reinterpret_u64_as_i64")):
        table = _table([t.data_ptr() + 8], dtype)
        with pytest.raises(PointerRoundTripError, match=remedy):
            check_targets(table, "table", target, regions)
