"""MambaCopyBuffers and the copy path, with vLLM's semantics, on the CPU."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import pytest
import torch
from ptrlint.runtime import (
    KVCacheConfig,
    KVCacheGroupSpec,
    MambaCopyBuffers,
    MambaSpec,
    MemoryRegions,
    PointerGuardError,
    collect_mamba_copy_meta,
    do_mamba_copy_block,
    get_conv_copy_spec,
    get_mamba_group_ids,
    get_mamba_groups,
    get_temporal_copy_spec,
    make_buffer_factory,
    validate_mamba_state_copy_funcs,
)

COPY_FUNCS = (get_conv_copy_spec, get_temporal_copy_spec)


class AttentionSpec:  # a non-Mamba group, as in hybrid models
    block_size = 16


def _config(mamba_layers=("m0", "m1"), other_layers=("a0",)) -> KVCacheConfig:
    spec = MambaSpec(block_size=16, shapes=((3, 8), (4, 8)), dtypes=(torch.float32, torch.float32))
    return KVCacheConfig(
        num_blocks=6,
        kv_cache_groups=[
            KVCacheGroupSpec(list(other_layers), AttentionSpec()),
            KVCacheGroupSpec(list(mamba_layers), spec),
        ],
    )


@dataclass
class Layer:
    kv_cache: list


@dataclass
class ReqState:
    block_ids: list = field(default_factory=list)


def _forward_context(layers, num_blocks=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {
        name: Layer([torch.randn(num_blocks, 3, 8, generator=gen), torch.randn(num_blocks, 4, 8, generator=gen)])
        for name in layers
    }


def test_create_sizes_and_dtypes():
    config = _config()
    bufs = MambaCopyBuffers.create(5, config, COPY_FUNCS, make_buffer_factory("cpu"))
    assert len(bufs.src_ptrs) == 5 * 2 * 2  # requests x Mamba layers x copy functions
    assert bufs.src_ptrs.cpu.dtype == torch.uint64 and bufs.dst_ptrs.gpu.dtype == torch.uint64
    assert bufs.sizes.cpu.dtype == torch.int32
    assert bufs.mamba_group_ids == [1] and bufs.mamba_spec.block_size == 16 and bufs.offset == 0


def test_copy_funcs_by_mamba_type_mapping():
    config = _config()
    bufs = MambaCopyBuffers.create(2, config, {"mamba2": COPY_FUNCS[:1]}, make_buffer_factory("cpu"))
    assert len(bufs.src_ptrs) == 2 * 2 * 1


def test_get_mamba_groups_needs_mamba_and_agreement():
    with pytest.raises(ValueError, match="no Mamba"):
        get_mamba_groups(KVCacheConfig(1, [], [KVCacheGroupSpec(["a"], AttentionSpec())]))
    a = MambaSpec(16, ((1,),), (torch.float32,))
    b = MambaSpec(32, ((1,),), (torch.float32,))
    config = KVCacheConfig(1, [], [KVCacheGroupSpec(["x"], a), KVCacheGroupSpec(["y"], b)])
    assert get_mamba_groups(config) == {a: [0], b: [1]}  # vLLM 0.33's shape: spec -> group ids
    with pytest.raises(ValueError, match="block_size"):
        MambaCopyBuffers.create(1, config, COPY_FUNCS, make_buffer_factory("cpu"))


@dataclass(frozen=True)
class UniformTypeKVCacheSpecs:  # vLLM 0.33's per-layer specs for one group (matched by class name)
    block_size: int
    kv_cache_specs: dict


class Backend(enum.Enum):  # vLLM 0.33 keys copy functions by MambaAttentionBackendEnum members
    MAMBA2 = "vllm.v1.attention.backends.mamba2_attn.Mamba2AttentionBackend"
    SHORT_CONV = "vllm.v1.attention.backends.short_conv_attn.ShortConvAttentionBackend"


def test_uniform_groups_and_enum_keyed_copy_funcs_size_like_vllm():
    two = MambaSpec(16, ((3, 8), (4, 8)), (torch.float32, torch.float32), mamba_type=Backend.MAMBA2)
    one = MambaSpec(16, ((3, 8),), (torch.float32,), mamba_type=Backend.SHORT_CONV)
    uniform = UniformTypeKVCacheSpecs(16, {"m0": two, "c0": one, "m1": two})
    config = KVCacheConfig(
        6, [], [KVCacheGroupSpec(["a0"], AttentionSpec()), KVCacheGroupSpec(["m0", "c0", "m1"], uniform)]
    )
    funcs = {Backend.MAMBA2: COPY_FUNCS, Backend.SHORT_CONV: COPY_FUNCS[:1]}
    groups = get_mamba_groups(config)
    assert groups == {two: [1], one: [1]} and get_mamba_group_ids(groups) == [1]
    validate_mamba_state_copy_funcs(groups, funcs)
    bufs = MambaCopyBuffers.create(4, config, funcs, make_buffer_factory("cpu"))
    assert len(bufs.src_ptrs) == 4 * (2 + 1 + 2)  # per layer, its own copy functions (vLLM's sizing)
    assert bufs.mamba_group_ids == [1]
    # string type names still match enum keys by name (the older standalone spelling)
    plain = MambaSpec(16, ((3, 8), (4, 8)), (torch.float32, torch.float32), mamba_type="mamba2")
    one_group = KVCacheConfig(6, [], [KVCacheGroupSpec(["m0"], plain)])
    assert len(MambaCopyBuffers.create(1, one_group, funcs, make_buffer_factory("cpu")).src_ptrs) == 2
    with pytest.raises(ValueError, match="copyable prefix"):
        validate_mamba_state_copy_funcs(groups, {Backend.MAMBA2: COPY_FUNCS * 2, Backend.SHORT_CONV: COPY_FUNCS[:1]})
    with pytest.raises(KeyError, match="missing state copy funcs"):
        MambaCopyBuffers.create(1, config, {Backend.MAMBA2: COPY_FUNCS}, make_buffer_factory("cpu"))


def test_collect_and_copy_with_uniform_groups():
    two = MambaSpec(16, ((3, 8), (4, 8)), (torch.float32, torch.float32), mamba_type=Backend.MAMBA2)
    one = MambaSpec(16, ((3, 8),), (torch.float32,), mamba_type=Backend.SHORT_CONV)
    config = KVCacheConfig(6, [], [KVCacheGroupSpec(["m0", "c0"], UniformTypeKVCacheSpecs(16, {"m0": two, "c0": one}))])
    funcs = {Backend.MAMBA2: COPY_FUNCS, Backend.SHORT_CONV: COPY_FUNCS[:1]}
    ctx = _forward_context(["m0", "c0"])
    reference = {name: [s.clone() for s in layer.kv_cache] for name, layer in ctx.items()}
    bufs = MambaCopyBuffers.create(2, config, funcs, make_buffer_factory("cpu"))
    req = ReqState(block_ids=[[5, 1, 4, 2, 3, 0]])
    collect_mamba_copy_meta(bufs, config, funcs, [0], 0, 3, 0, req, ctx)
    assert bufs.offset == 3  # m0: conv + temporal, c0: conv only
    do_mamba_copy_block(bufs, check="strict", regions=_regions(ctx))
    assert torch.equal(ctx["m0"].kv_cache[1][2], reference["m0"][1][5])
    assert torch.equal(ctx["c0"].kv_cache[0][2], reference["c0"][0][5])
    assert torch.equal(ctx["c0"].kv_cache[1], reference["c0"][1])  # no copy function: untouched


def _regions(ctx) -> MemoryRegions:
    regions = MemoryRegions()
    for layer in ctx.values():
        for state in layer.kv_cache:
            regions.add(state)
    return regions


@pytest.mark.parametrize("check", ["fast", "strict"])
@pytest.mark.parametrize("bias", [0, 1, 2])
def test_collect_and_copy_follow_vllm_semantics(check, bias):
    config = _config()
    ctx = _forward_context(["m0", "m1"])
    reference = {name: [s.clone() for s in layer.kv_cache] for name, layer in ctx.items()}
    bufs = MambaCopyBuffers.create(3, config, COPY_FUNCS, make_buffer_factory("cpu"))
    req = ReqState(block_ids=[[], [5, 1, 4, 2, 3, 0]])
    src_idx, dest_idx = 0, 3
    collect_mamba_copy_meta(bufs, config, COPY_FUNCS, [1], src_idx, dest_idx, bias, req, ctx)
    assert bufs.offset == 4
    do_mamba_copy_block(bufs, check=check, regions=_regions(ctx))
    blocks = req.block_ids[1]
    for name, layer in ctx.items():
        conv, temporal = layer.kv_cache
        ref_conv, ref_temporal = reference[name]
        n = 3 - bias  # conv: state[block[src], bias:] -> start of state[block[dest]]
        assert torch.equal(conv[blocks[dest_idx]][:n], ref_conv[blocks[src_idx]][bias:])
        assert torch.equal(temporal[blocks[dest_idx]], ref_temporal[blocks[src_idx + bias]])
        for b in range(6):
            if b != blocks[dest_idx]:
                assert torch.equal(conv[b], ref_conv[b]) and torch.equal(temporal[b], ref_temporal[b])


def test_same_block_without_bias_is_skipped():
    config = _config()
    bufs = MambaCopyBuffers.create(1, config, COPY_FUNCS, make_buffer_factory("cpu"))
    collect_mamba_copy_meta(
        bufs, config, COPY_FUNCS, [1], 2, 2, 0, ReqState([[], [0, 1, 2]]), _forward_context(["m0", "m1"])
    )
    assert bufs.offset == 0
    do_mamba_copy_block(bufs)  # nothing to do


def test_overrunning_capacity_raises_instead_of_indexerror():
    config = _config()
    bufs = MambaCopyBuffers.create(1, config, COPY_FUNCS, make_buffer_factory("cpu"))
    ctx = _forward_context(["m0", "m1"])
    req = ReqState([[], [0, 1, 2, 3, 4, 5]])
    collect_mamba_copy_meta(bufs, config, COPY_FUNCS, [1], 0, 1, 0, req, ctx)
    with pytest.raises(PointerGuardError, match="entry 4"):
        collect_mamba_copy_meta(bufs, config, COPY_FUNCS, [1], 0, 2, 0, req, ctx)


def test_strict_copy_rejects_unregistered_state_and_moves_nothing():
    from ptrlint.runtime import PointerBoundsError

    config = _config()
    ctx = _forward_context(["m0", "m1"])
    before = {name: [s.clone() for s in layer.kv_cache] for name, layer in ctx.items()}
    bufs = MambaCopyBuffers.create(1, config, COPY_FUNCS, make_buffer_factory("cpu"))
    collect_mamba_copy_meta(bufs, config, COPY_FUNCS, [1], 0, 1, 0, ReqState([[], [0, 1, 2]]), ctx)
    regions = MemoryRegions()
    regions.add(ctx["m0"].kv_cache[0])  # only one of the four state tensors
    with pytest.raises(PointerBoundsError):
        do_mamba_copy_block(bufs, check="strict", regions=regions)
    for name, layer in ctx.items():
        assert all(torch.equal(a, b) for a, b in zip(layer.kv_cache, before[name]))


def test_works_with_vllm_style_config_objects_by_duck_typing():
    """Objects that are not ours but look like vLLM's (class named MambaSpec, kv_cache per engine)."""

    @dataclass(frozen=True)
    class KVCacheSpec:
        block_size: int

    @dataclass(frozen=True)
    class MambaSpec(KVCacheSpec):  # noqa: F811 - the name is what vLLM's class is called
        shapes: tuple = ()
        dtypes: tuple = ()
        num_speculative_blocks: int = 0
        mamba_cache_mode: str = "align"
        mamba_type: str = "mamba2"

    @dataclass
    class Group:
        layer_names: list
        kv_cache_spec: object

    @dataclass
    class Config:
        num_blocks: int
        kv_cache_tensors: list
        kv_cache_groups: list

    config = Config(4, [], [Group(["m0"], MambaSpec(block_size=8))])
    bufs = MambaCopyBuffers.create(2, config, COPY_FUNCS, make_buffer_factory("cpu"))
    assert len(bufs.src_ptrs) == 2 * 1 * 2
    ctx = {"m0": Layer([[torch.randn(4, 3, 8), torch.randn(4, 4, 8)]])}  # older vLLM: list per virtual engine
    collect_mamba_copy_meta(bufs, config, COPY_FUNCS, [0], 0, 1, 0, ReqState([[0, 1, 2, 3]]), ctx)
    do_mamba_copy_block(bufs, check="fast")
    conv, temporal = ctx["m0"].kv_cache[0]
    assert torch.equal(conv[1], conv[0]) and torch.equal(temporal[1], temporal[0])
