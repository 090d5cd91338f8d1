"""vLLM 0.34's own Mamba start-up on the CPU, with its fused kernels run by the Triton interpreter.

Run as ``python -m tests.vllm_integration.scenario_034 LEVEL KIND [plugin] [simulate]`` in a fresh
process (install() patches vLLM process-wide); prints one ``SCENARIO {json}`` line of observations.

What runs is vLLM's: the CPU runner's ``init_kv_cache`` (one backing allocation, per-layer views,
``bind_kv_cache_to_layers``), ``MambaSpecDecodeGPUContext.create`` and
``initialize_from_forward_context`` (the one writer of the int64 address tables), and the fused
``run_fused_precopy`` / ``run_fused_postprocess_align`` kernels. A CPU host has no active Triton
driver, so vLLM would swap its kernels for placeholders; with ``CUDA_VISIBLE_DEVICES`` empty (how
Ray starts workers) it keeps them, and ``TRITON_INTERPRET=1`` runs them on host memory.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a scenario process: set before vLLM decides on Triton (not when imported by a test)
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")  # keep vLLM's @triton.jit kernels (see the docstring)

import sys  # noqa: E402

import torch  # noqa: E402
from vllm.config import DeviceConfig, VllmConfig  # noqa: E402
from vllm.model_executor.layers.mamba.mamba_utils import get_conv_copy_spec, get_temporal_copy_spec  # noqa: E402
from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    KVCacheConfig,
    KVCacheTensor,
    MambaSpec,
    UniformTypeKVCacheSpecs,
)

from .support import StateLayer, emit, expected_after_copy, hybrid_groups, start_guard  # noqa: E402

NUM_BLOCKS = 8
MAX_REQS = 3
BLOCK_SIZE = 16
COPY_FUNCS = {
    MambaAttentionBackendEnum.MAMBA2: (get_conv_copy_spec, get_temporal_copy_spec),
    MambaAttentionBackendEnum.SHORT_CONV: (get_conv_copy_spec,),
}
MAMBA2 = MambaSpec(BLOCK_SIZE, ((3, 8), (4, 8)), (torch.float32, torch.float32), mamba_cache_mode="align")
SHORT_CONV = MambaSpec(
    BLOCK_SIZE,
    ((3, 8),),
    (torch.float32,),
    page_size_padded=MAMBA2.page_size_bytes,
    mamba_type=MambaAttentionBackendEnum.SHORT_CONV,
    mamba_cache_mode="align",
)
BLOCKS = [5, 1, 4, 2, 3, 0, 7, 6]  # request 0's block table row


def config(kind: str) -> KVCacheConfig:
    """An attention group and a Mamba group ("plain": one MambaSpec; "uniform": per-layer specs) in one allocation."""
    attention, mamba, specs = hybrid_groups(kind, MAMBA2, SHORT_CONV, BLOCK_SIZE)
    page = MAMBA2.page_size_bytes
    tensor = KVCacheTensor(
        size=page * NUM_BLOCKS * len(specs), layers=list(specs), layer_stride=page * NUM_BLOCKS, block_stride=page
    )
    return KVCacheConfig(num_blocks=NUM_BLOCKS, kv_cache_tensors=[tensor], kv_cache_groups=[attention, mamba])


def start_up(cfg: KVCacheConfig) -> dict[str, StateLayer]:
    """The CPU runner's KV-cache start-up: allocate, view per layer, bind (the guard registers in strict mode)."""
    from vllm.v1.worker.cpu.attn_utils import init_kv_cache

    spec = cfg.kv_cache_groups[1].kv_cache_spec
    forward_context = {
        name: StateLayer(spec.kv_cache_specs[name] if isinstance(spec, UniformTypeKVCacheSpecs) else spec)
        for name in cfg.kv_cache_groups[1].layer_names
    }
    vllm_config = VllmConfig(device_config=DeviceConfig(device="cpu"))
    vllm_config.cache_config.kv_cache_layout = "LBHNC"  # what the engine core resolves before workers allocate
    init_kv_cache(forward_context, cfg, torch.device("cpu"), [BLOCK_SIZE, BLOCK_SIZE], vllm_config)
    gen = torch.Generator().manual_seed(0)
    for lyr in forward_context.values():
        for state in lyr.kv_cache:
            state.copy_(torch.randn(state.shape, generator=gen))
    return forward_context


def snapshot(layers: dict[str, StateLayer]) -> list[torch.Tensor]:
    return [s.clone() for lyr in layers.values() for s in lyr.kv_cache]


def unchanged(layers: dict[str, StateLayer], before: list[torch.Tensor]) -> bool:
    return all(torch.equal(a, b) for a, b in zip(snapshot(layers), before))


def precopy(ctx, src_col: int, dest_col: int, bias: int) -> None:
    """Request 0 moves from block column src_col to dest_col, ``bias`` accepted tokens past it."""
    ints = lambda *v: torch.tensor([*v, 0, 0][:MAX_REQS], dtype=torch.int32)  # noqa: E731
    ctx.run_fused_precopy(1, ints(dest_col), ints(src_col), ints(bias), None)


def attempt(seen: dict, key: str, run, layers: dict[str, StateLayer]) -> None:
    """Record whether ``run`` was refused (and by what) and whether any state byte moved."""
    from ptrlint.runtime import PointerGuardError

    before = snapshot(layers)
    try:
        run()
        seen[key] = "accepted"
    except PointerGuardError as exc:
        seen[key] = f"{type(exc).__name__}: {exc}"
    seen[key + "_untouched"] = unchanged(layers, before)


def main(argv: list[str]) -> int:
    level, kind = argv[0], argv[1]
    from ptrlint.runtime import default_regions, real_addresses
    from ptrlint.runtime import vllm as guard

    seen = start_guard(level, argv[2:])

    from vllm.triton_utils import HAS_TRITON
    from vllm.v1.worker import mamba_utils as mu

    seen["triton_kernels"] = bool(HAS_TRITON)
    cfg = config(kind)
    layers = start_up(cfg)
    seen["registered"] = len(default_regions())
    ctx = mu.MambaSpecDecodeGPUContext.create(MAX_REQS, cfg, COPY_FUNCS, layers, torch.device("cpu"))
    block_table = torch.zeros((MAX_REQS, NUM_BLOCKS), dtype=torch.int32)
    block_table[0] = torch.tensor(BLOCKS, dtype=torch.int32)
    aligned_table = block_table.clone()
    ctx.initialize_from_forward_context(cfg, layers, COPY_FUNCS, [block_table], [aligned_table])
    seen["initialized"] = bool(ctx.is_initialized)
    seen["table_dtypes"] = [str(getattr(ctx, name).dtype) for name in ("state_base_addrs", "block_table_ptrs")]
    with real_addresses():
        seen["tables_real"] = int(ctx.block_table_ptrs[0]) == block_table.data_ptr()

    # vLLM's fused pre-copy, through the guard: exactly vLLM's copy semantics
    expected = expected_after_copy(layers, COPY_FUNCS, BLOCKS, 0, 3, 1)
    precopy(ctx, 0, 3, 1)
    seen["precopy_exact"] = all(
        torch.equal(a, b) for name in layers for a, b in zip(layers[name].kv_cache, expected[name])
    )
    # the post-step align kernel runs through its guarded launch too (nothing to copy: no block boundary)
    before = snapshot(layers)
    ints = lambda *v: torch.tensor([*v, 0, 0][:MAX_REQS], dtype=torch.int32)  # noqa: E731
    ctx.run_fused_postprocess_align(1, ints(1), ints(3), ints(3 * BLOCK_SIZE + 1), ints(0))
    seen["postprocess_ran"] = unchanged(layers, before)

    # refused before a byte moves: a corrupted entry (strict), a narrow table (every level)
    good = ctx.state_base_addrs.clone()
    ctx.state_base_addrs[1] = ctx.state_base_addrs[1] ^ (1 << 40)
    if level == "strict":  # fast does not read entries: launching this would be a wild write
        attempt(seen, "corrupted_precopy", lambda: precopy(ctx, 0, 3, 1), layers)
        attempt(
            seen,
            "corrupted_postprocess",
            lambda: ctx.run_fused_postprocess_align(1, ints(2), ints(3), ints(4 * BLOCK_SIZE), ints(0)),
            layers,
        )
    attempt(seen, "corrupted_check", lambda: guard.check_fused_tables(ctx, level), layers)
    ctx.state_base_addrs = good.to(torch.int32)  # a narrow (truncating) table
    attempt(seen, "narrow_precopy", lambda: precopy(ctx, 0, 3, 1), layers)
    ctx.state_base_addrs = good
    ctx.aligned_index_block_table_ptrs = ctx.aligned_index_block_table_ptrs.to(torch.int32)
    attempt(seen, "narrow_aligned", lambda: ctx.compute_aligned_state_indices(ints(17), 1), layers)

    # unbound: a context filled from state tensors no bind_kv_cache_to_layers call ever saw
    stray = {name: StateLayer(lyr.spec, tuple(s.clone() for s in lyr.kv_cache)) for name, lyr in layers.items()}
    other = mu.MambaSpecDecodeGPUContext.create(MAX_REQS, cfg, COPY_FUNCS, stray, torch.device("cpu"))
    attempt(
        seen,
        "unbound_fill",
        lambda: other.initialize_from_forward_context(cfg, stray, COPY_FUNCS, [block_table]),
        stray,
    )
    emit(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
