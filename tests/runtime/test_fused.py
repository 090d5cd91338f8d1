"""The fused-kernel address tables (vLLM's MambaSpecDecodeGPUContext), without vLLM: fill and launch checks."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import pytest
import torch
from ptrlint.runtime import (
    MemoryRegions,
    PointerBoundsError,
    PointerDtypeError,
    PointerOverlapError,
    PointerRoundTripError,
    default_regions,
    fused,
    simulate_high_addresses,
)


def _i64(value: int) -> int:  # vLLM's _reinterpret_u64_as_i64
    return value if value < (1 << 63) else value - (1 << 64)


def layer_pages(
    num_blocks: int = 4, conv: tuple[int, int] = (3, 8), temporal: tuple[int, int] = (4, 8), pad: int = 0
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A Mamba layer as vLLM binds it: one int8 page per block, conv then temporal state views."""
    conv_bytes, temporal_bytes = conv[0] * conv[1] * 4, temporal[0] * temporal[1] * 4
    pages = torch.zeros(num_blocks, conv_bytes + temporal_bytes + pad, dtype=torch.int8)
    states = [
        pages[:, :conv_bytes].view(torch.float32).view(-1, *conv),
        pages[:, conv_bytes : conv_bytes + temporal_bytes].view(torch.float32).view(-1, *temporal),
    ]
    return pages, states


def table_of(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.tensor([_i64(t.data_ptr()) for t in tensors], dtype=torch.int64)


def test_span_and_target_of_a_strided_state_view():
    pages, (conv, temporal) = layer_pages(num_blocks=4)
    page = pages.stride(0)
    assert fused.span(temporal) == 3 * page + 4 * 8 * 4  # three whole pages, then the last block's state
    target = fused.tensor_target(temporal, "layer state 1", layer="layer")
    assert (target.address, target.block_stride, target.block_bytes) == (temporal.data_ptr(), page, 128)
    assert fused.span(torch.zeros(0)) == 0


def test_strict_targets_accept_a_faithful_table_and_name_what_is_wrong():
    pages, states = layer_pages()
    regions = MemoryRegions()
    regions.add(pages, "cache")
    targets = [fused.tensor_target(s, f"layer state {k}", "layer") for k, s in enumerate(states)]
    table = table_of(states)
    fused.check_targets(table, "state_base_addrs", targets, regions)

    moved = table.clone()
    moved[1] ^= 1 << 40
    with pytest.raises(
        PointerRoundTripError,
        match=r"entry 1 of state_base_addrs: address 0x[0-9a-f]+( \(real 0x[0-9a-f]+\))? "
        r"is not the address it was filled from \(layer state 1 at 0x[0-9a-f]+, \d+ bytes\)",
    ):
        fused.check_targets(moved, "state_base_addrs", targets, regions)
    with pytest.raises(PointerBoundsError, match="entry 0 of state_base_addrs: null address"):
        fused.check_targets(torch.zeros(2, dtype=torch.int64), "state_base_addrs", targets, regions)

    short = MemoryRegions()
    short.add_range(pages.data_ptr(), pages.nbytes - 1, "one byte short")  # the last block's temporal state leaves it
    with pytest.raises(
        PointerBoundsError,
        match=r"entry 1 of state_base_addrs: layer state 1 \[0x[0-9a-f]+( \(real 0x[0-9a-f]+\))?, \+\d+\) "
        r"is not inside one registered region; nearest registered region .*one byte short",
    ):
        fused.check_targets(table, "state_base_addrs", targets, short)


def test_targets_compare_real_addresses_under_simulation():
    pages, states = layer_pages()
    regions = MemoryRegions()
    regions.add(pages)
    with simulate_high_addresses():
        targets = [fused.tensor_target(s, f"state {k}") for k, s in enumerate(states)]
        table = table_of(states)  # addresses >= 2**63, held as negative int64 patterns
        assert int(table.min()) < 0
        fused.check_targets(table, "t", targets, regions)  # as written (shifted)
        real = table.clone()
        fused.to_real_tables(_Context(state_base_addrs=real))
        assert int(real.min()) > 0
        fused.check_targets(real, "t", targets, regions)  # as handed to the kernels (real)


def test_states_of_one_layer_must_not_share_bytes_within_a_block():
    _, states = layer_pages(pad=16)
    targets = [fused.tensor_target(s, f"state {k}", "layer") for k, s in enumerate(states)]
    fused.check_layer_overlaps("state_base_addrs", targets)  # interleaved per page, disjoint per block

    pages = torch.zeros(4, 224, dtype=torch.int8)  # a page layout bug: the temporal state starts inside conv
    conv = pages[:, :96].view(torch.float32).view(-1, 3, 8)
    temporal = pages[:, 64:192].view(torch.float32).view(-1, 4, 8)
    bad = [
        fused.tensor_target(conv, "layer.1 state 0", "layer.1"),
        fused.tensor_target(temporal, "layer.1 state 1", "layer.1"),
    ]
    with pytest.raises(
        PointerOverlapError,
        match=r"entries 0 and 1 of state_base_addrs: layer.1 state 0 \(96 bytes "
        r"per block, stride 224\) and layer.1 state 1 \(128 bytes per block, stride 224\) share bytes, \+64",
    ):
        fused.check_layer_overlaps("state_base_addrs", bad)
    # the same bytes in two layers (vLLM overlays cache groups; a block id belongs to one group): allowed
    shared = [fused.tensor_target(conv, "a state 0", "a"), fused.tensor_target(conv, "b state 0", "b")]
    fused.check_layer_overlaps("state_base_addrs", shared)


def test_a_wrapping_window_overlaps_the_next_block():
    pages = torch.zeros(4, 100, dtype=torch.int8)
    first = pages[:, 10:90]  # 80 bytes per block from offset 10
    second = pages.view(-1)[90:].as_strided((3, 40), (100, 1))  # 40 bytes from offset 90: runs into block k+1's first
    a, b = fused.tensor_target(first, "s0", "l"), fused.tensor_target(second, "s1", "l")
    with pytest.raises(PointerOverlapError):
        fused.check_layer_overlaps("t", [a, b])


def _empty_table() -> torch.Tensor:
    return torch.zeros(0, dtype=torch.int64)  # noqa: PTR001 - vLLM's layout: u64 bit patterns in int64, checked as such


@dataclass
class _Context:
    """The shape of vLLM's MambaSpecDecodeGPUContext that the checks read."""

    state_base_addrs: torch.Tensor = field(default_factory=lambda: _empty_table())
    block_table_ptrs: torch.Tensor = field(default_factory=lambda: _empty_table())
    aligned_index_block_table_ptrs: torch.Tensor = field(default_factory=lambda: _empty_table())
    is_initialized: bool = True
    launched: int = 0

    @property
    def num_states(self) -> int:
        return self.state_base_addrs.shape[0]

    @property
    def num_groups(self) -> int:
        return self.block_table_ptrs.shape[0]

    def kernel(self, *tables: torch.Tensor) -> None:
        self.launched += 1

    def run_fused_precopy(self, num_reqs: int) -> None:
        if num_reqs == 0 or not self.is_initialized:
            return
        self.kernel(self.block_table_ptrs, self.state_base_addrs)

    def compute_aligned_state_indices(self) -> None:
        self.kernel(tables=self.aligned_index_block_table_ptrs)

    def fill(self) -> None:  # writes tables, passes none to a call
        self.state_base_addrs[0] = 1


def test_launch_sites_are_the_methods_that_hand_tables_to_a_call():
    assert fused.launch_sites(_Context) == {
        "run_fused_precopy": ("state_base_addrs", "block_table_ptrs"),
        "compute_aligned_state_indices": ("aligned_index_block_table_ptrs",),
    }


def test_a_launch_is_refused_before_the_kernel_runs():
    pages, states = layer_pages()
    table = torch.zeros((2, 4), dtype=torch.int32)
    regions = MemoryRegions()
    regions.add(pages)
    regions.add(table)
    ctx = _Context(
        state_base_addrs=table_of(states),
        block_table_ptrs=table_of([table]),
        aligned_index_block_table_ptrs=table_of([table]),
    )
    fused.record_targets(
        ctx,
        {
            "state_base_addrs": [fused.tensor_target(s, f"s{k}", "l") for k, s in enumerate(states)],
            "block_table_ptrs": fused.block_table_targets([table], "block table"),
            "aligned_index_block_table_ptrs": None,
        },
    )
    fused.check_context(ctx, "strict", overlaps=True, regions=regions)

    good = ctx.state_base_addrs.clone()
    launch = fused.make_launch(_Context.run_fused_precopy, ("state_base_addrs", "block_table_ptrs"), "fast")
    launch(ctx, 1)
    assert ctx.launched == 1
    ctx.state_base_addrs = ctx.state_base_addrs.to(torch.int32)
    with pytest.raises(PointerDtypeError, match="MambaSpecDecodeGPUContext.state_base_addrs has dtype int32"):
        launch(ctx, 1)
    assert ctx.launched == 1
    ctx.is_initialized = False  # vLLM returns before launching: nothing to check yet
    launch(ctx, 1)
    assert ctx.launched == 1

    ctx.is_initialized, ctx.state_base_addrs = True, good.clone()
    allowed: list[str] = []

    @contextlib.contextmanager
    def sync_allowed():  # vLLM's gpu_sync_allowed(): strict reads the tables back to the host
        allowed.append("sync")
        yield

    strict = fused.make_launch(
        _Context.run_fused_precopy, ("state_base_addrs", "block_table_ptrs"), "strict", sync_allowed
    )
    with default_regions():  # what is registered inside is dropped on exit
        default_regions().add(pages)
        default_regions().add(table)
        strict(ctx, 1)
        assert ctx.launched == 2 and allowed == ["sync"]
        ctx.state_base_addrs[1] ^= 1 << 40
        with pytest.raises(PointerRoundTripError, match="entry 1 of MambaSpecDecodeGPUContext.state_base_addrs"):
            strict(ctx, 1)
        assert ctx.launched == 2


TOP = 1 << 64


def _only_with_real_numbers() -> None:
    """These tests write real addresses near 2**64 as numbers: under simulated high addresses every
    number >= the offset reads as a shifted address, so they run only with the mode off."""
    from ptrlint.runtime import simulate

    if simulate.active():
        pytest.skip("numeric real addresses near 2**64: run it without --ptrlint-high-addresses")


def test_a_state_whose_span_runs_past_2_64_is_refused():
    """[2**64 - 8, +8192) wraps to an end of 0x1ff7 in uint64: inside no allocation, whatever is registered."""
    _only_with_real_numbers()
    regions = MemoryRegions()
    regions.add_range(TOP - 4096, 4096, "top page")  # the last page of the address space
    regions.add_range(0x1000, 0x10000, "low memory")  # where the wrapped end lands
    address = TOP - 8
    table = torch.tensor([_i64(address)], dtype=torch.int64)
    target = fused.Target(address, 8192, "state 0")
    with pytest.raises(
        PointerBoundsError, match=r"entry 0 of t: state 0 \[0xfffffffffffffff8, \+8192\) runs past 2\*\*64"
    ):
        fused.check_targets(table, "t", [target], regions)
    fused.check_targets(table, "t", [fused.Target(address, 8, "state 0")], regions)  # the last 8 bytes: inside


@pytest.mark.parametrize(
    "first, nbytes",
    [
        (TOP - 1, 2),
        (TOP - 8, 8192),
        (TOP - 4096, 4097),
        (TOP - 1, 1 << 63),
        (1 << 63, (1 << 63) + 1),
    ],
)
def test_no_range_that_wraps_is_contained(first, nbytes):
    _only_with_real_numbers()
    import numpy as np

    regions = MemoryRegions()
    regions.add_range(0x1000, TOP - 0x1000, "everything but the first page")
    ends = (first + nbytes - 1) % TOP  # as uint64 arithmetic computes an inclusive end
    inside = regions.contains(np.array([first], dtype=np.uint64), np.array([ends], dtype=np.uint64))
    assert not inside[0]
    last = np.array([first], dtype=np.uint64) + np.array([nbytes - 1], dtype=np.uint64)  # numpy wraps the same way
    assert not regions.contains(np.array([first], dtype=np.uint64), last)[0]


@pytest.mark.real_addresses  # compares data_ptr() with regions.contains, which takes real addresses
def test_a_freed_tensor_s_region_is_never_accepted_again():
    """A region lives as long as its storage: the allocator may hand freed memory to anything."""
    import gc

    import numpy as np

    regions = MemoryRegions()
    cache = torch.zeros(1024, dtype=torch.uint8)
    regions.add(cache, "cache")
    first = np.array([cache.data_ptr()], dtype=np.uint64)
    assert regions.contains(first, first)[0]
    view = cache[16:]
    del cache
    gc.collect()
    assert regions.contains(first, first)[0] and len(regions) == 1  # a view keeps the storage alive
    del view
    gc.collect()
    assert not regions.contains(first, first)[0]
    assert len(regions) == 0
    array = np.zeros(64, dtype=np.uint8)
    regions.add(array, "host")
    where = np.array([array.ctypes.data], dtype=np.uint64)
    assert regions.contains(where, where)[0]
    del array
    gc.collect()
    assert not regions.contains(where, where)[0]


def test_contains_is_exactly_inside_one_region_property():
    """Property: a range is contained iff it lies inside the registered region without wrapping."""
    _only_with_real_numbers()
    import numpy as np
    from hypothesis import given, settings
    from hypothesis import strategies as st

    start, size = TOP - (1 << 20), (1 << 20)
    regions = MemoryRegions()
    regions.add_range(start, size, "the top megabyte")

    @settings(max_examples=300, deadline=None)
    @given(st.integers(TOP - (1 << 21), TOP - 1), st.integers(1, 1 << 22))
    def check(first: int, nbytes: int) -> None:
        last = np.array([first], dtype=np.uint64) + np.array([nbytes - 1], dtype=np.uint64)
        expected = first >= start and first + nbytes <= TOP
        assert bool(regions.contains(np.array([first], dtype=np.uint64), last)[0]) is expected

    check()
