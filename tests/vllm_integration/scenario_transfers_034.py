"""vLLM 0.34's prompt-embeddings tables and batched-copy descriptor pools, built by vLLM's own code on the CPU.

Run as ``python -m tests.vllm_integration.scenario_transfers_034 LEVEL [plugin] [simulate]`` in a fresh
process (install() patches vLLM process-wide); prints one ``SCENARIO {json}`` line of observations.

- Prompt embeddings: vLLM's ``PromptEmbedsState`` takes two requests' embeddings (``add_request``), stages its
  pointer tables and runs ``_apply_prompt_embeds_kernel`` (Triton interpreter) through ``apply``.
- The encoder-cache connector: vLLM's ``DescriptorBufferPool`` hands out a buffer triple, ``add_copies`` stores
  a batch of copies, and ``ECCPUWorker._submit_transfer`` launches them through the worker's
  ``swap_blocks_batch``.
- KV offload: vLLM's ``_new_descriptor_buffers`` makes the pooled triple, a GPU->CPU
  ``SingleDirectionOffloadingHandler`` fills it (``_fill_direct_ops``, as ``transfer_async`` does) and launches
  it through the function ``_select_swap_blocks_fn`` picked (``vllm._custom_ops.swap_blocks_batch``).

The CPU wheel has no compiled ``_C_cache_ops.swap_blocks_batch``: ``stand_in_op`` registers one that does what
the CUDA op does on the host (a memmove per descriptor, reading each pointer entry's 64 bits), so a copy whose
tables hold wrong or simulated addresses would really read or write the wrong memory.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a scenario process: set before vLLM decides on Triton
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import ctypes  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from .scenario_tables_034 import attempt  # noqa: E402
from .support import emit, start_guard  # noqa: E402

HIDDEN = 8
_LIBRARIES: list[object] = []  # keeps the stand-in op registered


def stand_in_op() -> None:
    """A host ``_C_cache_ops::swap_blocks_batch``: one memmove per descriptor, as the CUDA op's batched copy."""
    if hasattr(torch.ops._C_cache_ops, "swap_blocks_batch"):
        return
    lib = torch.library.Library("_C_cache_ops", "FRAGMENT")
    lib.define("swap_blocks_batch(Tensor src, Tensor dst, Tensor sizes, bool any_order=False) -> ()")

    def copy(src: torch.Tensor, dst: torch.Tensor, sizes: torch.Tensor, *_order: bool) -> None:
        # the access-order hint (a scheduling hint for the DMA engine) changes nothing on the host
        for s, d, n in zip(src.numpy().view(np.uint64), dst.numpy().view(np.uint64), sizes.numpy()):
            ctypes.memmove(int(d), int(s), int(n))

    lib.impl("swap_blocks_batch", copy, "CPU")
    _LIBRARIES.append(lib)


def prompt_embeds(seen: dict, level: str) -> None:
    from vllm.v1.worker.gpu import buffer_utils
    from vllm.v1.worker.gpu.model_states import prompt_embeds as pe

    # vLLM's CPU platform reports UVA, but a CPU build of torch has no pinned memory for its UvaBuffer: take
    # vLLM's own fallback for platforms without UVA (pageable host buffers, explicit copies to the device view)
    buffer_utils.is_uva_available = lambda: False

    state = attempt(seen, "pe_init", lambda: pe.PromptEmbedsState(4, HIDDEN, torch.float32, torch.device("cpu")))
    if state is None:
        return
    seen["pe_dtypes"] = [str(state.embeds_ptrs.cpu.dtype), str(state.mask_ptrs.cpu.dtype)]
    embeds = [torch.arange(5 * HIDDEN, dtype=torch.float32).view(5, HIDDEN) + 1, torch.full((3, HIDDEN), -2.0)]
    requests = [
        types.SimpleNamespace(
            req_id="a", prompt_embeds=embeds[0], prompt_is_token_ids=[False, True, False, False, False]
        ),
        types.SimpleNamespace(req_id="b", prompt_embeds=embeds[1], prompt_is_token_ids=None),
    ]
    for index, request in ((2, requests[0]), (0, requests[1])):
        attempt(seen, f"pe_add_{request.req_id}", lambda i=index, r=request: state.add_request(i, r))
    state.apply_staged_writes()
    batch = types.SimpleNamespace(
        num_reqs=2,
        num_scheduled_tokens=np.array([5, 3], dtype=np.int32),
        idx_mapping=torch.tensor([2, 0], dtype=torch.int32),
        query_start_loc=torch.tensor([0, 5, 8], dtype=torch.int32),
    )
    computed = torch.zeros(4, dtype=torch.int32)
    out = torch.zeros(8, HIDDEN)
    attempt(seen, "pe_apply", lambda: state.apply(batch, computed, out))
    want = torch.cat([embeds[0], embeds[1]])
    want[1] = 0  # row 1 of request a is a token id: the kernel leaves it
    seen["pe_copied"] = bool(torch.equal(out, want))
    if level != "strict":
        return
    good = state.embeds_ptrs.np.copy()
    state.embeds_ptrs.np[2] ^= np.uint64(1 << 40)  # an entry overwritten after add_request
    state.apply_staged_writes()
    refused = torch.zeros(8, HIDDEN)
    attempt(seen, "pe_corrupted", lambda: state.apply(batch, computed, refused))
    seen["pe_refused_untouched"] = bool(refused.eq(0).all())
    state.embeds_ptrs.np[:] = good
    state.gpu_tensors.pop("b")  # freed while the batch still reads it (remove_request without a reschedule)
    del embeds[1], requests[1], request  # the last references to request b's embeddings
    state.apply_staged_writes()
    attempt(seen, "pe_freed", lambda: state.apply(batch, computed, torch.zeros(8, HIDDEN)))


def ec_connector(seen: dict, level: str) -> None:
    from ptrlint.runtime import register
    from vllm.distributed.ec_transfer.ec_connector.cpu import worker as ecw
    from vllm.distributed.ec_transfer.ec_connector.cpu.worker import descriptor_buffers as db

    seen["ec_swap_guarded"] = hasattr(ecw.swap_blocks_batch, "_ptrlint_original")
    bufs = attempt(seen, "ec_acquire", lambda: db.DescriptorBufferPool().acquire(3))
    if bufs is None:
        return
    seen["ec_dtype"] = str(bufs.src_ptrs.dtype)
    src = torch.arange(64, dtype=torch.uint8)
    dst = torch.zeros(64, dtype=torch.uint8)
    for tensor in (src, dst):
        register(tensor, "encoder cache test buffer")
    base_s, base_d = np.uint64(src.data_ptr()), np.uint64(dst.data_ptr())
    offsets = np.array([0, 16, 40], dtype=np.uint64)
    sizes = np.array([16, 8, 24], dtype=np.int64)
    attempt(seen, "ec_add", lambda: bufs.add_copies(0, base_s + offsets, base_d + offsets, sizes))
    to_host = ecw.ECCPUTransferDirection.DEVICE_TO_HOST
    attempt(seen, "ec_launch", lambda: ecw.ECCPUWorker._submit_transfer(None, bufs, 3, to_host))
    want = torch.zeros(64, dtype=torch.uint8)
    for o, n in zip(offsets.tolist(), sizes.tolist()):
        want[o : o + n] = src[o : o + n]
    seen["ec_copied"] = bool(torch.equal(dst, want))
    # A Python list of addresses into the int64 table: numpy refuses an address >= 2**63 there
    addresses = [int(src.data_ptr()), int(src.data_ptr()) + 16]
    attempt(seen, "ec_add_ints", lambda: bufs.add_copies(0, addresses, addresses, np.array([1, 1])))
    if level != "strict":
        return
    stray = torch.zeros(64, dtype=torch.uint8)  # never registered
    bufs.add_copies(0, base_s + offsets, np.uint64(stray.data_ptr()) + offsets, sizes)
    attempt(seen, "ec_unregistered", lambda: ecw.ECCPUWorker._submit_transfer(None, bufs, 3, to_host))
    seen["ec_refused_untouched"] = bool(stray.eq(0).all())
    wrap = np.array([(1 << 64) - 8, 0, 0], dtype=np.uint64)
    bufs.add_copies(0, wrap, base_d + offsets, np.array([8192, 1, 1]))
    attempt(seen, "ec_wraps", lambda: ecw.ECCPUWorker._submit_transfer(None, bufs, 3, to_host))
    raw = db.DescriptorBuffers(*(torch.zeros(3, dtype=torch.uint64) for _ in range(2)), bufs.sizes, None, None, None)
    attempt(seen, "ec_raw_dtype", lambda: ecw.ECCPUWorker._submit_transfer(None, raw, 3, to_host))


def kv_offload(seen: dict, level: str) -> None:
    """vLLM's GPU->CPU offloading handler fills its pooled descriptor tables (``_fill_direct_ops``, as
    ``transfer_async`` does for each group) and launches them through the function it selected."""
    from ptrlint.runtime import register
    from vllm.v1.kv_offload.base import CanonicalKVCacheRef, DevicePointers
    from vllm.v1.kv_offload.cpu import gpu_worker as gw

    triple = attempt(seen, "kv_buffers", lambda: gw._new_descriptor_buffers(2))
    gpu_cache = torch.arange(32, dtype=torch.int8).view(2, 16)  # two 16-byte KV pages
    cpu_cache = torch.zeros(2, 16, dtype=torch.int8)
    handler = gw.SingleDirectionOffloadingHandler(
        cpu_tensors=[cpu_cache],
        blocks_per_chunk=1,
        layer_refs_per_group=[[CanonicalKVCacheRef(tensor_idx=0, page_size_bytes=16)]],
        gpu_to_cpu=True,
        host_memory_is_pinned=False,
    )
    seen["kv_swap_guarded"] = hasattr(handler._swap_blocks_batch, "_ptrlint_original")
    if triple is None:
        return
    register(gpu_cache, "test KV cache")  # what bind_kv_cache_to_layers registers in a worker
    src_t, dst_t, sizes_t = triple
    seen["kv_dtype"] = str(src_t.dtype)
    base = gpu_cache.data_ptr()
    pointers = DevicePointers(
        ptrs=np.array([base, base + 16], dtype=np.uint64),
        sizes=np.array([16, 16], dtype=np.uint64),
        group_block_counts=(2,),
        group_data_ref_counts=(1,),
        block_indices=(0,),
    )

    def fill() -> object:
        return handler._fill_direct_ops(
            0,
            device_ptrs=pointers,
            dev_ptr_offset=0,
            cpu_block_ids=np.array([1, 0]),  # GPU page 0 -> CPU block 1, page 1 -> block 0
            group_size=2,
            cpu_skip_count=0,
            all_src=src_t.numpy(),
            all_dst=dst_t.numpy(),
            all_sizes=sizes_t.numpy(),
            op_idx=0,
        )

    attempt(seen, "kv_fill", fill)
    swap = handler._swap_blocks_batch
    attempt(seen, "kv_launch", lambda: swap(src_t, dst_t, sizes_t, is_src_access_order_any=False))
    seen["kv_copied"] = bool(torch.equal(cpu_cache[1], gpu_cache[0]) and torch.equal(cpu_cache[0], gpu_cache[1]))
    if level == "strict":
        fill()
        sizes_t.numpy()[1] = 4096  # a descriptor that reads past the KV cache
        attempt(seen, "kv_overrun", lambda: swap(src_t, dst_t, sizes_t, is_src_access_order_any=False))


def main(argv: list[str]) -> int:
    level = argv[0]
    seen = start_guard(level, argv[1:])
    stand_in_op()
    prompt_embeds(seen, level)
    ec_connector(seen, level)
    kv_offload(seen, level)
    emit(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
