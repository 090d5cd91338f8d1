"""Dtype assertions, round-trip stores, regions, and strict checks that reject before copying."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ptrlint.runtime import (
    CpuGpuBuffer,
    MemoryRegions,
    PointerBoundsError,
    PointerDtypeError,
    PointerGuardError,
    PointerOverlapError,
    PointerRoundTripError,
    assert_pointer_buffer,
    batch_memcpy,
    default_regions,
    register,
    store_pointer,
    unregister,
    verify_upload,
)

EDGE_ADDRESSES = [0, 2**63 - 1, 2**63, 2**63 + 5, 2**64 - 1]
BAD_DTYPES = [torch.int64, torch.int32, torch.float64, torch.float32, torch.int16, torch.uint32]


@pytest.mark.parametrize("addr", EDGE_ADDRESSES)
def test_round_trip_through_every_store_path(addr):
    buf = CpuGpuBuffer(4, dtype=torch.uint64, device="cpu")
    store_pointer(buf, 1, addr)  # CpuGpuBuffer -> .np
    store_pointer(buf.np, 2, addr)  # numpy view
    store_pointer(buf.cpu, 3, addr)  # host tensor -> .numpy()
    assert buf.cpu[1:].tolist() == [addr, addr, addr]
    buf.copy_to_gpu()  # host -> "device" (a distinct tensor on CPU)
    assert buf.gpu.data_ptr() != buf.cpu.data_ptr()
    assert buf.gpu[1:].tolist() == [addr, addr, addr]
    verify_upload(buf, 4)
    built = torch.tensor([addr], dtype=torch.uint64)  # list construction, the other working path
    assert built.tolist() == [addr]


@pytest.mark.parametrize("dtype", BAD_DTYPES)
def test_signed_narrow_and_float_buffers_are_rejected_everywhere(dtype):
    t = torch.zeros(4, dtype=dtype)
    with pytest.raises(PointerDtypeError, match="uint64"):
        assert_pointer_buffer(t)
    with pytest.raises(PointerDtypeError):
        assert_pointer_buffer(t.numpy())
    with pytest.raises(PointerGuardError):  # never a bare OverflowError
        store_pointer(t.numpy(), 0, 2**63 + 5)
    good = torch.zeros(4, dtype=torch.uint64)
    sizes = torch.zeros(4, dtype=torch.int32)
    with pytest.raises(PointerDtypeError):
        batch_memcpy(t, good, sizes, check="fast")
    with pytest.raises(PointerDtypeError):
        batch_memcpy(good, t, sizes, check="strict")


def test_pointer_dtype_error_is_a_type_error_and_names_the_fix():
    with pytest.raises(TypeError) as info:
        assert_pointer_buffer(torch.zeros(2, dtype=torch.int64))
    assert "int64" in str(info.value) and "uint64" in str(info.value)


def test_cpugpubuffer_is_checked_on_both_sides():
    assert_pointer_buffer(CpuGpuBuffer(3, dtype=torch.uint64, device="cpu"))
    with pytest.raises(PointerDtypeError, match="cpu"):
        assert_pointer_buffer(CpuGpuBuffer(3, dtype=torch.int64, device="cpu"))


def test_store_pointer_rejects_non_addresses():
    view = np.zeros(2, dtype=np.uint64)
    with pytest.raises(PointerRoundTripError):
        store_pointer(view, 0, -1)
    with pytest.raises(PointerRoundTripError):
        store_pointer(view, 0, 2**64)


def test_verify_upload_detects_a_stale_device_copy():
    buf = CpuGpuBuffer(2, dtype=torch.uint64, device="cpu")
    store_pointer(buf, 0, 2**63 + 8)
    with pytest.raises(PointerRoundTripError, match="entry 0"):
        verify_upload(buf, 2)


def test_bfloat16_buffer_needs_with_numpy_false():
    with pytest.raises(ValueError, match="with_numpy=False"):
        CpuGpuBuffer(2, dtype=torch.bfloat16, device="cpu")
    buf = CpuGpuBuffer(2, dtype=torch.bfloat16, device="cpu", with_numpy=False)
    assert not hasattr(buf, "np")


def test_pin_memory_only_with_an_accelerator():
    buf = CpuGpuBuffer(2, dtype=torch.uint64, device="cpu")
    assert buf.cpu.is_pinned() is False


def test_memory_regions_context_manager_and_default_registry():
    regions = MemoryRegions()
    a = torch.zeros(16, dtype=torch.uint8)
    with regions:
        regions.add(a)
        regions.add_range(0x1000, 64, "mmio")
        assert len(regions) == 2
    assert len(regions) == 0
    r = regions.add(a)
    regions.remove(r)
    assert len(regions) == 0
    regions.add(a)
    regions.remove(a)
    with pytest.raises(KeyError):
        regions.remove(a)
    before = len(default_regions())
    register(a)
    assert len(default_regions()) == before + 1
    unregister(a)
    assert len(default_regions()) == before
    with pytest.raises(PointerBoundsError):
        regions.add_range(0, 10)


def _table(pairs, sizes):
    src = torch.tensor([p[0] for p in pairs], dtype=torch.uint64)
    dst = torch.tensor([p[1] for p in pairs], dtype=torch.uint64)
    return src, dst, torch.tensor(sizes, dtype=torch.int32)


@pytest.fixture
def pools():
    src = torch.arange(256, dtype=torch.int32).to(torch.uint8).clone()
    dst = torch.full((256,), 0xAB, dtype=torch.uint8)
    regions = MemoryRegions()
    regions.add(src)
    regions.add(dst)
    return src, dst, regions


def _assert_rejected(pools, pairs, sizes, error, match):
    src, dst, regions = pools
    before = dst.clone()
    table = _table(pairs, sizes)
    with pytest.raises(error, match=match) as info:
        batch_memcpy(*table, check="strict", regions=regions)
    assert torch.equal(dst, before), "a rejected table moved bytes"
    return str(info.value)


def test_valid_strict_table_copies(pools):
    src, dst, regions = pools
    s, d = src.data_ptr(), dst.data_ptr()
    batch_memcpy(*_table([(s, d + 100), (s + 10, d)], [16, 8]), check="strict", regions=regions)
    assert torch.equal(dst[100:116], src[:16]) and torch.equal(dst[:8], src[10:18])


def test_out_of_region_names_entry_address_size_nearest_region_and_remedy(pools):
    src, dst, _ = pools
    s, d = src.data_ptr(), dst.data_ptr()
    msg = _assert_rejected(pools, [(s, d), (s + 250, d + 16)], [4, 16], PointerBoundsError, "entry 1")
    assert f"{s + 250:#x}" in msg and "16 bytes" in msg and "nearest registered region" in msg and "Register" in msg


def test_off_by_one_end_is_rejected_and_exact_end_accepted(pools):
    src, dst, regions = pools
    s, d = src.data_ptr(), dst.data_ptr()
    batch_memcpy(*_table([(s + 255, d + 255)], [1]), check="strict", regions=regions)
    _assert_rejected(pools, [(s + 255, d)], [2], PointerBoundsError, "entry 0")


def test_null_and_high_addresses(pools):
    src, dst, _ = pools
    d = dst.data_ptr()
    _assert_rejected(pools, [(0, d)], [8], PointerBoundsError, "null source")
    _assert_rejected(pools, [(2**63, d)], [8], PointerBoundsError, "entry 0")
    _assert_rejected(pools, [(2**64 - 4, d)], [8], PointerBoundsError, "wraps")


def test_sizes_outside_int32_range(pools):
    src, dst, regions = pools
    s, d = src.data_ptr(), dst.data_ptr()
    table = (
        torch.tensor([s], dtype=torch.uint64),
        torch.tensor([d], dtype=torch.uint64),
        torch.tensor([-5], dtype=torch.int64),
    )
    before = dst.clone()
    with pytest.raises(PointerBoundsError, match="size -5"):
        batch_memcpy(*table, check="strict", regions=regions)
    big = torch.tensor([2**31], dtype=torch.int64)
    with pytest.raises(PointerBoundsError, match="2\\*\\*31"):
        batch_memcpy(table[0], table[1], big, check="strict", regions=regions)
    assert torch.equal(dst, before)


def test_zero_size_entries_are_no_ops(pools):
    src, dst, regions = pools
    before = dst.clone()
    batch_memcpy(*_table([(0, 0), (src.data_ptr(), dst.data_ptr() + 1)], [0, 0]), check="strict", regions=regions)
    assert torch.equal(dst, before)


def test_overlapping_destinations(pools):
    src, dst, _ = pools
    s, d = src.data_ptr(), dst.data_ptr()
    _assert_rejected(pools, [(s, d), (s + 64, d + 15)], [16, 16], PointerOverlapError, "entries 0 and 1")


def test_destination_overlapping_another_source(pools):
    src, dst, regions = pools
    d = dst.data_ptr()
    regions_ = regions
    before = dst.clone()
    with pytest.raises(PointerOverlapError, match="source of entry 0"):
        batch_memcpy(*_table([(d, d + 64), (d + 100, d + 8)], [16, 8]), check="strict", regions=regions_)
    assert torch.equal(dst, before)


def test_fast_mode_checks_shapes_and_devices():
    u = torch.zeros(3, dtype=torch.uint64)
    with pytest.raises(PointerGuardError, match="one length"):
        batch_memcpy(u, u, torch.zeros(2, dtype=torch.int32), check="fast")
    with pytest.raises(PointerGuardError, match="1-D"):
        batch_memcpy(u.view(3, 1), u.view(3, 1), torch.zeros(3, 1, dtype=torch.int32), check="fast")
    with pytest.raises(PointerDtypeError, match="sizes"):
        batch_memcpy(u, u, torch.zeros(3, dtype=torch.float32), check="fast")


def test_guard_level_from_environment(monkeypatch, pools):
    src, dst, _ = pools
    table = _table([(0, dst.data_ptr())], [8])
    monkeypatch.setenv("PTRLINT_GUARD", "strict")
    with pytest.raises(PointerBoundsError):
        batch_memcpy(*table)
    monkeypatch.setenv("PTRLINT_GUARD", "paranoid")
    with pytest.raises(ValueError, match="guard level"):
        batch_memcpy(*table)


# ----- address tables read by fused kernels (vLLM's int64 bit-pattern tables) ----------------------
def _reinterpret(value: int) -> int:
    return value if value < (1 << 63) else value - (1 << 64)


def test_address_table_checks_read_int64_bit_patterns_as_unsigned():
    import torch
    from ptrlint.runtime import PointerBoundsError, PointerDtypeError, simulate_high_addresses
    from ptrlint.runtime.guard import check_address_table

    state = torch.zeros(64)
    regions = MemoryRegions()
    regions.add(state)
    with simulate_high_addresses():  # addresses >= 2**63: int64 holds them as negative bit patterns
        table = torch.tensor([_reinterpret(state.data_ptr()), _reinterpret(state[8:].data_ptr())], dtype=torch.int64)
        assert int(table.min()) < 0
        check_address_table(table, "state_base_addrs", level="strict", length=2, regions=regions)
        # an entry past the registered region (as a wrong or truncated store leaves it), whatever the
        # address layout: low heap addresses (a non-PIE interpreter) must not make it land inside
        corrupted = table.clone()
        corrupted[1] = torch.tensor(state.data_ptr() + state.nbytes + 4096, dtype=torch.uint64)
        assert int(corrupted[1]) < 0  # still a high address, held as a negative int64 bit pattern
        with pytest.raises(PointerBoundsError, match=r"entry 1 of state_base_addrs: address 0x"):
            check_address_table(corrupted, "state_base_addrs", level="strict", regions=regions)
        check_address_table(corrupted, "state_base_addrs", level="fast", length=2)  # O(1): not its job
    with pytest.raises(PointerBoundsError, match="entry 0 of t: null address"):
        check_address_table(torch.zeros(1, dtype=torch.int64), "t", level="strict", regions=regions)
    with pytest.raises(PointerDtypeError, match="dtype int32"):
        check_address_table(torch.zeros(1, dtype=torch.int32), "t", level="fast")
    with pytest.raises(PointerGuardError, match="3 entries"):
        check_address_table(torch.zeros(2, dtype=torch.int64), "t", level="fast", length=3)
