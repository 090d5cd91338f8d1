"""vLLM-compatible Mamba state-copy buffers with uint64 pointer tables and a guarded copy.

Same names, signatures and sizing as vLLM's ``vllm/v1/worker/mamba_utils.py`` (the
``MambaCopyBuffers`` prefix-cache path) and ``vllm/v1/kv_cache_interface.py``; works with
vLLM's own config objects through duck typing, and with the minimal dataclasses here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._torch import torch
from .buffers import CpuGpuBuffer
from .copy import batch_memcpy
from .errors import PointerBoundsError, PointerGuardError
from .guard import MAX_ENTRY_BYTES, assert_pointer_buffer, guard_level, store_pointer

_T = TypeVar("_T")


@dataclass(frozen=True)
class MambaSpec:
    """vLLM's MambaSpec fields; everything but block_size, shapes and dtypes is optional."""

    block_size: int
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...]
    page_size_padded: int | None = None
    mamba_type: str = "mamba2"
    mamba_cache_mode: str = "none"
    num_speculative_blocks: int = 0


@dataclass
class KVCacheGroupSpec:
    layer_names: list[str]
    kv_cache_spec: Any


@dataclass
class KVCacheConfig:
    num_blocks: int
    kv_cache_tensors: list[Any] = field(default_factory=list)
    kv_cache_groups: list[KVCacheGroupSpec] = field(default_factory=list)


@dataclass
class MambaCopySpec:
    start_addr: int
    num_elements: int


def get_conv_copy_spec(
    state: torch.Tensor, block_ids: Sequence[int], cur_block_idx: int, num_accepted_tokens: int
) -> MambaCopySpec:
    """Conv state: ``state[block_ids[cur], num_accepted_tokens - 1:]`` (the window shifted by the bias)."""
    src_state = state[block_ids[cur_block_idx], num_accepted_tokens - 1 :]
    return MambaCopySpec(start_addr=src_state.data_ptr(), num_elements=src_state.numel())


def get_temporal_copy_spec(
    state: torch.Tensor, block_ids: Sequence[int], cur_block_idx: int, num_accepted_tokens: int
) -> MambaCopySpec:
    """Temporal (SSM) state: the block ``num_accepted_tokens - 1`` columns after ``cur``."""
    src_state = state[block_ids[cur_block_idx + num_accepted_tokens - 1]]
    return MambaCopySpec(start_addr=src_state.data_ptr(), num_elements=src_state.numel())


MambaStateCopyFunc = Callable[[torch.Tensor, Sequence[int], int, int], MambaCopySpec]


def _has_class(obj: Any, name: str) -> bool:
    return any(klass.__name__ == name for klass in type(obj).__mro__)


def _is_mamba_spec(spec: Any) -> bool:
    """Ours, or vLLM's MambaSpec (and subclasses), without importing vLLM."""
    return isinstance(spec, MambaSpec) or _has_class(spec, "MambaSpec")


def _is_uniform(spec: Any) -> bool:
    """vLLM's UniformTypeKVCacheSpecs: one group of layers, one spec per layer name."""
    return _has_class(spec, "UniformTypeKVCacheSpecs") and isinstance(getattr(spec, "kv_cache_specs", None), Mapping)


def spec_for_layer(group: Any, layer_name: str) -> Any:
    """The layer's own spec: the group's, or its entry in a UniformTypeKVCacheSpecs."""
    spec = group.kv_cache_spec
    if _is_uniform(spec):
        spec = spec.kv_cache_specs[layer_name]
    if not _is_mamba_spec(spec):
        raise ValueError(f"layer {layer_name!r} has a {type(spec).__name__}, not a MambaSpec")
    return spec


def _group_head(spec: Any) -> Any:
    if _is_uniform(spec):
        return next(iter(spec.kv_cache_specs.values()), None)
    return spec


def get_mamba_groups(kv_cache_config: Any) -> dict[Any, list[int]]:
    """Each distinct Mamba spec and the sorted ids of the groups that use it (vLLM 0.33's shape).

    Plain Mamba groups and UniformTypeKVCacheSpecs groups of Mamba layers both count; a group
    whose layers use different specs is listed under each of them.
    """
    groups: dict[Any, set[int]] = {}
    for i, group in enumerate(kv_cache_config.kv_cache_groups):
        if not _is_mamba_spec(_group_head(group.kv_cache_spec)):
            continue
        for layer_name in group.layer_names:
            groups.setdefault(spec_for_layer(group, layer_name), set()).add(i)
    if not groups:
        raise ValueError("no Mamba layers in kv_cache_config.kv_cache_groups")
    return {spec: sorted(ids) for spec, ids in groups.items()}


def get_mamba_group_ids(mamba_groups: Mapping[Any, Sequence[int]]) -> list[int]:
    """Sorted group ids, without duplicates, of a ``get_mamba_groups`` result."""
    return sorted({gid for ids in mamba_groups.values() for gid in ids})


def _shared_spec(mamba_groups: Mapping[Any, Sequence[int]]) -> Any:
    """The first spec; every spec must agree on what the scheduler relies on."""
    specs = list(mamba_groups)
    first = specs[0]
    for spec in specs[1:]:
        for attr in ("block_size", "num_speculative_blocks", "mamba_cache_mode"):
            if getattr(spec, attr, None) != getattr(first, attr, None):
                raise ValueError(
                    f"Mamba groups disagree on {attr}: {getattr(first, attr, None)!r} vs {getattr(spec, attr, None)!r}"
                )
    return first


def _key_matches(key: Any, mamba_type: Any) -> bool:
    """An enum key (vLLM 0.33's MambaAttentionBackendEnum) and a string type name match by name."""

    def names(x: Any) -> set[str]:
        found = {str(x).lower()}
        for attr in ("name", "value"):
            value = getattr(x, attr, None)
            if isinstance(value, str):
                found.add(value.lower())
        return found

    return bool(names(key) & names(mamba_type))


def funcs_for_spec(copy_funcs: Any, spec: Any) -> tuple[Any, ...]:
    """The state copy functions of one layer spec.

    ``copy_funcs``: a sequence (the older layout: the same functions for every layer) or a
    mapping keyed by Mamba type (vLLM 0.33: ``MambaAttentionBackendEnum`` keys; plain strings
    such as ``"mamba2"`` also match an enum member of that name).
    """
    if not isinstance(copy_funcs, Mapping):
        return tuple(copy_funcs)
    mamba_type = getattr(spec, "mamba_type", "mamba2")
    if mamba_type in copy_funcs:
        return tuple(copy_funcs[mamba_type])
    for key, funcs in copy_funcs.items():
        if _key_matches(key, mamba_type):
            return tuple(funcs)
    raise KeyError(f"missing state copy funcs for {mamba_type!r} (have {', '.join(map(repr, copy_funcs))})")


def validate_mamba_state_copy_funcs(mamba_groups: Mapping[Any, Sequence[int]], copy_funcs: Any) -> None:
    """Each spec has a non-empty prefix of copy functions, no longer than its list of states."""
    for spec in mamba_groups:
        funcs = funcs_for_spec(copy_funcs, spec)
        if not 0 < len(funcs) <= len(spec.shapes):
            raise ValueError(
                f"{getattr(spec, 'mamba_type', 'mamba')} declares {len(spec.shapes)} states but provides "
                f"{len(funcs)} state copy funcs; expected a non-empty copyable prefix"
            )


def entries_per_request(kv_cache_config: Any, copy_funcs: Any) -> int:
    """Copy entries one request needs: over the Mamba groups' layers, that layer's copy functions."""
    total = 0
    for gid in get_mamba_group_ids(get_mamba_groups(kv_cache_config)):
        group = kv_cache_config.kv_cache_groups[gid]
        total += sum(len(funcs_for_spec(copy_funcs, spec_for_layer(group, name))) for name in group.layer_names)
    return total


@dataclasses.dataclass
class MambaCopyBuffers:
    src_ptrs: Any
    dst_ptrs: Any
    sizes: Any
    mamba_group_ids: list[int]
    mamba_spec: Any
    offset: int = 0

    @classmethod
    def create(
        cls, max_num_reqs: int, kv_cache_config: Any, copy_funcs: Any, make_buffer: Callable[..., Any]
    ) -> MambaCopyBuffers:
        """Entries = max_num_reqs x (per Mamba layer, its copy functions); uint64 pointers, int32 sizes."""
        return _create(cls, max_num_reqs, kv_cache_config, copy_funcs, make_buffer)


def _create(
    cls: Callable[..., _T], max_num_reqs: int, kv_cache_config: Any, copy_funcs: Any, make_buffer: Callable[..., Any]
) -> _T:
    mamba_groups = get_mamba_groups(kv_cache_config)
    mamba_spec = _shared_spec(mamba_groups)
    n = max_num_reqs * entries_per_request(kv_cache_config, copy_funcs)
    src_ptrs = make_buffer(n, dtype=torch.uint64)
    dst_ptrs = make_buffer(n, dtype=torch.uint64)
    assert_pointer_buffer(src_ptrs, "src_ptrs")
    assert_pointer_buffer(dst_ptrs, "dst_ptrs")
    return cls(
        src_ptrs=src_ptrs,
        dst_ptrs=dst_ptrs,
        sizes=make_buffer(n, dtype=torch.int32),
        mamba_group_ids=get_mamba_group_ids(mamba_groups),
        mamba_spec=mamba_spec,
    )


def _layer_states(layer: Any) -> list[torch.Tensor]:
    kv_cache = layer.kv_cache
    if kv_cache and isinstance(kv_cache[0], (list, tuple)):  # older vLLM: one list per virtual engine
        kv_cache = kv_cache[0]
    return list(kv_cache)


def collect_mamba_copy_meta(
    copy_bufs: Any,
    kv_cache_config: Any,
    mamba_state_copy_funcs: Any,
    mamba_group_ids: list[int],
    src_block_idx: int,
    dest_block_idx: int,
    accept_token_bias: int,
    req_state: Any,
    forward_context: Mapping[str, Any],
) -> None:
    """Append this request's state copies at ``copy_bufs.offset`` (vLLM semantics).

    conv: ``state[block_ids[src], bias:]``; temporal: ``state[block_ids[src + bias]]``;
    destination ``state[block_ids[dest]]``. Addresses go through the numpy views and are read
    back; sizes are checked against the int32 buffer; running past capacity raises.
    """
    if src_block_idx == dest_block_idx and accept_token_bias == 0:
        return
    src_np, dst_np, sizes_np = copy_bufs.src_ptrs.np, copy_bufs.dst_ptrs.np, copy_bufs.sizes.np
    capacity = len(src_np)
    offset = copy_bufs.offset
    for group_id in mamba_group_ids:
        block_ids = req_state.block_ids[group_id]
        dest_block_id = block_ids[dest_block_idx]
        group = kv_cache_config.kv_cache_groups[group_id]
        for layer_name in group.layer_names:
            funcs = funcs_for_spec(mamba_state_copy_funcs, spec_for_layer(group, layer_name))
            for state, copy_func in zip(_layer_states(forward_context[layer_name]), funcs):
                if offset >= capacity:
                    raise PointerGuardError(
                        f"entry {offset}: the copy buffers hold {capacity} entries; create them with the same "
                        "max_num_reqs, kv_cache_config and copy functions as the scheduler uses"
                    )
                spec = copy_func(state, block_ids, src_block_idx, accept_token_bias + 1)
                nbytes = int(spec.num_elements) * state.element_size()
                if not 0 <= nbytes < MAX_ENTRY_BYTES:
                    raise PointerBoundsError(
                        f"entry {offset}: copy of {nbytes} bytes does not fit the int32 size buffer"
                    )
                store_pointer(src_np, offset, spec.start_addr)
                store_pointer(dst_np, offset, state[dest_block_id].data_ptr())
                sizes_np[offset] = nbytes
                offset += 1
    copy_bufs.offset = offset


def do_mamba_copy_block(copy_bufs: Any, *, check: str | None = None, regions: Any = None) -> None:
    """Upload the first ``offset`` entries and run the guarded batched copy."""
    n = copy_bufs.offset
    if n == 0:
        return
    host = (copy_bufs.src_ptrs.np[:n], copy_bufs.dst_ptrs.np[:n], copy_bufs.sizes.np[:n])
    level = guard_level(check)
    batch_memcpy(
        copy_bufs.src_ptrs.copy_to_gpu(n),
        copy_bufs.dst_ptrs.copy_to_gpu(n),
        copy_bufs.sizes.copy_to_gpu(n),
        check=level,
        regions=regions,
        host_views=host if level == "strict" else None,
    )


def make_buffer_factory(device: Any, pin_memory: bool | None = None) -> Callable[..., CpuGpuBuffer]:
    """A model-runner style ``make_buffer(*size, dtype)`` for tests and standalone use."""

    def make_buffer(*size: int, dtype: torch.dtype, numpy: bool = True) -> CpuGpuBuffer:
        return CpuGpuBuffer(*size, dtype=dtype, device=device, pin_memory=pin_memory, with_numpy=numpy)

    return make_buffer
