"""The device batched-copy kernel (vLLM-style: one program per entry, uint64 addresses).

Imported lazily on first device use. Set TRITON_INTERPRET=1 *before* this module is imported
to run it on CPU tensors (slowly, about 1 MB/s at BLOCK 1024).
"""

from __future__ import annotations

from typing import Any

import triton  # type: ignore[import-untyped]
import triton.language as tl  # type: ignore[import-untyped]


@triton.jit  # type: ignore[untyped-decorator]
def batch_memcpy_kernel(src_ptrs: tl.tensor, dst_ptrs: tl.tensor, sizes: tl.tensor, BLOCK_SIZE: tl.constexpr) -> None:
    pid = tl.program_id(0)
    src = tl.load(src_ptrs + pid)  # uint64: unsigned, so no address is misread as negative
    dst = tl.load(dst_ptrs + pid)
    nbytes = tl.load(sizes + pid).to(tl.int64)
    # vLLM's semantics: a destination that overlaps the left part of its own source is a valid
    # entry (a forward copy reads each block before it is overwritten, if every lane loads
    # before any lane stores: hence the barrier). Strict mode rejects the right-overlap case.
    left_overlap = dst < src and dst + nbytes > src
    offsets = tl.arange(0, BLOCK_SIZE)
    for start in range(0, nbytes, BLOCK_SIZE):
        mask = (start + offsets) < nbytes
        src_bytes = (src + start + offsets).to(tl.pointer_type(tl.uint8))
        dst_bytes = (dst + start + offsets).to(tl.pointer_type(tl.uint8))
        data = tl.load(src_bytes, mask=mask)
        if left_overlap:
            tl.debug_barrier()
        tl.store(dst_bytes, data, mask=mask)


def launch(src_ptrs: Any, dst_ptrs: Any, sizes: Any, block_size: int) -> None:
    n = int(src_ptrs.shape[0])
    if n:
        batch_memcpy_kernel[(n,)](src_ptrs, dst_ptrs, sizes, BLOCK_SIZE=block_size)
