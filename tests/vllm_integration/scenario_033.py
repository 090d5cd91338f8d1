"""A small hybrid model's Mamba state on the CPU, built from vLLM 0.33's own config objects.

Imported by the integration tests, and run as ``python -m tests.vllm_integration.scenario_033``
(in a fresh process: install() patches vLLM process-wide) to exercise the guarded paths end to
end. Needs vLLM importable; the copy kernels run under TRITON_INTERPRET=1.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import torch  # noqa: E402
from vllm.model_executor.layers.mamba.mamba_utils import get_conv_copy_spec, get_temporal_copy_spec  # noqa: E402
from vllm.v1 import utils as _v1_utils  # noqa: E402
from vllm.v1.attention.backends.registry import MambaAttentionBackendEnum  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    KVCacheConfig,
    MambaSpec,
    UniformTypeKVCacheSpecs,
)
from vllm.v1.utils import CpuGpuBuffer  # noqa: E402

from .support import StateLayer, emit, expected_after_copy, hybrid_groups, layer, start_guard  # noqa: E402

# No accelerator here: vLLM's CPU platform does not pin host buffers either.
_v1_utils.PIN_MEMORY = False

NUM_BLOCKS = 8
MAX_REQS = 3
BLOCK_SIZE = 16
COPY_FUNCS = {
    MambaAttentionBackendEnum.MAMBA2: (get_conv_copy_spec, get_temporal_copy_spec),
    MambaAttentionBackendEnum.SHORT_CONV: (get_conv_copy_spec,),
}
MAMBA2 = MambaSpec(BLOCK_SIZE, ((3, 8), (4, 8)), (torch.float32, torch.float32))
SHORT_CONV = MambaSpec(
    BLOCK_SIZE,
    ((3, 8),),
    (torch.float32,),
    page_size_padded=MAMBA2.page_size_bytes,
    mamba_type=MambaAttentionBackendEnum.SHORT_CONV,
)


def config(kind: str) -> KVCacheConfig:
    """ "plain": an attention group and a MambaSpec group; "uniform": a UniformTypeKVCacheSpecs group."""
    attention, mamba, _ = hybrid_groups(kind, MAMBA2, SHORT_CONV, BLOCK_SIZE)
    return KVCacheConfig(num_blocks=NUM_BLOCKS, kv_cache_tensors=[], kv_cache_groups=[attention, mamba])


def make_buffer(*size: int, dtype: torch.dtype, numpy: bool = True) -> CpuGpuBuffer:
    return CpuGpuBuffer(*size, dtype=dtype, device=torch.device("cpu"), pin_memory=False, with_numpy=numpy)


def mamba_layers(cfg: KVCacheConfig) -> dict[str, MambaSpec]:
    group = cfg.kv_cache_groups[1]
    spec = group.kv_cache_spec
    return {
        name: (spec.kv_cache_specs[name] if isinstance(spec, UniformTypeKVCacheSpecs) else spec)
        for name in group.layer_names
    }


def raw_caches(cfg: KVCacheConfig, seed: int = 0) -> tuple[dict[str, torch.Tensor], dict[str, StateLayer]]:
    """Random raw [blocks, 1, 1, page] int8 pages per Mamba layer, and layers to bind them to."""
    gen = torch.Generator().manual_seed(seed)
    caches, layers = {}, {}
    for name, spec in mamba_layers(cfg).items():
        caches[name] = torch.randint(
            -128, 127, (NUM_BLOCKS, 1, 1, spec.page_size_bytes), dtype=torch.int8, generator=gen
        )
        layers[name] = StateLayer(spec)
    return caches, layers


@dataclass
class Request:
    block_ids: list


def main(argv: list[str]) -> int:
    """argv: LEVEL KIND [plugin]. Prints one JSON object of observations."""
    level, kind = argv[0], argv[1]
    from ptrlint.runtime import (
        PointerBoundsError,
        PointerDtypeError,
        PointerGuardError,
        default_regions,
        real_addresses,
    )
    from ptrlint.runtime import vllm as guard

    seen = start_guard(level, argv[2:])

    from vllm.model_executor.warmup import mamba_triton_warmup
    from vllm.v1.worker import mamba_utils as mu
    from vllm.v1.worker import utils as worker_utils

    cfg = config(kind)
    caches, layers = raw_caches(cfg)
    runner_caches: list = []
    worker_utils.bind_kv_cache(caches, layers, runner_caches)  # the V1 runner's call
    seen["registered"] = len(default_regions())

    # The CPU platform's kernel choice: without an active Triton backend (no GPU here), vLLM
    # routes batch_memcpy_kernel to its C++/ctypes implementation.
    from vllm.platforms.cpu import CpuPlatform
    from vllm.triton_utils import HAS_TRITON

    CpuPlatform.register_triton_kernel_overrides()
    seen["kernel"] = "triton" if HAS_TRITON else type(mu.batch_memcpy_kernel).__name__

    mamba_triton_warmup._warm_batch_memcpy_kernel(torch.device("cpu"))  # start-up warm-up
    seen["warmup"] = "ok"

    bufs = mu.MambaCopyBuffers.create(MAX_REQS, cfg, COPY_FUNCS, make_buffer)
    seen["buffers"] = [type(bufs).__module__, str(bufs.src_ptrs.cpu.dtype), len(bufs.src_ptrs.cpu)]
    blocks = [5, 1, 4, 2, 3, 0, 7, 6]
    req = Request(block_ids=[[0], blocks])
    expected = expected_after_copy(layers, COPY_FUNCS, blocks, 0, 3, 1)
    mu.collect_mamba_copy_meta(bufs, cfg, COPY_FUNCS, bufs.mamba_group_ids, 0, 3, 1, req, layers)
    seen["entries"] = bufs.offset
    mu.do_mamba_copy_block(bufs)
    seen["copy_exact"] = all(
        torch.equal(a, b) for name in layers for a, b in zip(layers[name].kv_cache, expected[name])
    )

    # the platform's kernel choice is honoured: an override registered the way CpuPlatform does
    from vllm.triton_utils.dispatcher import register_kernels
    from vllm.utils import cpu_triton_utils

    calls = []

    def override(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE=None):  # noqa: N803 - the kernel's parameter name
        calls.append(int(src_ptrs.shape[0]))
        return cpu_triton_utils._batch_memcpy_impl(src_ptrs, dst_ptrs, sizes, BLOCK_SIZE)

    register_kernels({"vllm.v1.worker.mamba_utils.batch_memcpy_kernel": override})
    before = [s.clone() for s in layers[layer(1)].kv_cache]
    bufs.offset = 0  # as preprocess_mamba does before each step
    mu.collect_mamba_copy_meta(bufs, cfg, COPY_FUNCS, bufs.mamba_group_ids, 3, 4, 0, req, layers)
    mu.do_mamba_copy_block(bufs)
    conv = layers[layer(1)].kv_cache[0]
    seen["override_calls"] = calls
    seen["override_exact"] = torch.equal(conv[blocks[4]], before[0][blocks[3]])

    # an unregistered address, and a signed table, are refused before a byte moves
    stray = torch.zeros(64, dtype=torch.uint8)
    target = layers[layer(1)].kv_cache[1]
    table = lambda addr: torch.tensor([addr], dtype=torch.uint64)  # noqa: E731
    try:
        mu.batch_memcpy(table(stray.data_ptr()), table(target[0].data_ptr()), torch.tensor([64], dtype=torch.int32))
        seen["unregistered"] = "copied"
    except PointerBoundsError as exc:
        seen["unregistered"] = str(exc)
    try:
        signed = torch.tensor([target[0].data_ptr()], dtype=torch.int64)  # noqa: PTR001 - the guard must refuse it
        mu.batch_memcpy(signed, signed, torch.tensor([4], dtype=torch.int32))
        seen["signed"] = "copied"
    except (PointerDtypeError, ValueError) as exc:  # under simulation the int64 table cannot even be built
        seen["signed"] = f"{type(exc).__name__}: {exc}"

    # the fused path: the one writer of its int64 address tables, validated
    ctx = mu.MambaSpecDecodeGPUContext.create(MAX_REQS, cfg, COPY_FUNCS, torch.device("cpu"), make_buffer)
    block_table = torch.zeros((MAX_REQS, NUM_BLOCKS), dtype=torch.int32)
    ctx.initialize_from_forward_context(cfg, layers, COPY_FUNCS, [block_table])
    seen["fused_initialized"] = bool(ctx.is_initialized)
    with real_addresses():
        seen["fused_real"] = int(ctx.block_table_ptrs[0]) == block_table.data_ptr()
    seen["fused_tables"] = {name: getattr(ctx, name).tolist() for name in ("state_base_addrs", "block_table_ptrs")}
    ctx.state_base_addrs[0] = ctx.state_base_addrs[0] ^ (
        1 << 40
    )  # corrupted: outside every region, whatever the layout
    try:
        guard.check_fused_tables(ctx, level)
        seen["fused_truncated"] = "accepted"
    except PointerGuardError as exc:
        seen["fused_truncated"] = str(exc)
    ctx.state_base_addrs = ctx.state_base_addrs.to(torch.int32)
    try:
        guard.check_fused_tables(ctx, level)
        seen["fused_int32"] = "accepted"
    except PointerDtypeError as exc:
        seen["fused_int32"] = str(exc)
    emit(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
