"""Example: per-request Mamba state copies through a CpuGpuBuffer-style factory.

Shaped like vLLM's `mamba_utils.py` before it moved its pointer tables to uint64: the tables are
filled through their numpy views and read only by a Triton batched-copy launch, so every reader
works on uint64 and `ptrlint --fix` changes the dtype tokens alone.
"""

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass
class StateCopyBuffers:
    src_ptrs: Any
    dst_ptrs: Any
    sizes: Any
    offset: int = 0

    @classmethod
    def create(cls, max_entries: int, make_buffer: Callable[..., Any]) -> "StateCopyBuffers":
        return cls(
            src_ptrs=make_buffer(max_entries, dtype=torch.int64),
            dst_ptrs=make_buffer(max_entries, dtype=torch.int32),
            sizes=make_buffer(max_entries, dtype=torch.int32),
        )

    def add(self, src: torch.Tensor, dst: torch.Tensor, nbytes: int) -> None:
        i = self.offset
        self.src_ptrs.np[i] = src.data_ptr()
        self.dst_ptrs.np[i] = dst.data_ptr()
        self.sizes.np[i] = nbytes
        self.offset += 1

    def launch(self, batch_copy_kernel: Any) -> None:
        n = self.offset
        batch_copy_kernel[(n,)](
            self.src_ptrs.copy_to_gpu(n), self.dst_ptrs.copy_to_gpu(n), self.sizes.copy_to_gpu(n), BLOCK_SIZE=1024
        )
        self.offset = 0


class StateTable:
    def __init__(self, max_reqs: int) -> None:
        self.state_addrs = torch.zeros(max_reqs, dtype=torch.uint64)

    def bind(self, req_idx: int, state: torch.Tensor) -> None:
        # torch converts the Python int through int64: raises for addresses >= 2**63.
        self.state_addrs[req_idx] = state.data_ptr()
