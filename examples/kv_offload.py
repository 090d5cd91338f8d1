"""Example: a CPU offload connector that moves KV blocks between GPU and pinned host memory.

Written the way such code usually starts out: every address table is int64 or has no dtype.
Run `ptrlint examples/` to see what breaks on a machine whose addresses exceed 2**63 - 1.
"""

import numpy as np
import torch


class KVOffloadConnector:
    def __init__(self, gpu_caches: list[torch.Tensor], num_host_blocks: int, block_bytes: int) -> None:
        self.block_bytes = block_bytes
        self.host_pool = torch.empty(num_host_blocks * block_bytes, dtype=torch.uint8)
        # One base address per layer, read by the transfer kernel.
        self.layer_ptrs = torch.tensor([c.data_ptr() for c in gpu_caches], dtype=torch.int64)
        base = self.host_pool.data_ptr()
        self.host_block_addrs = np.array(
            [base + i * block_bytes for i in range(num_host_blocks)],
            dtype=np.int64,
        )
        self.pending_src: list[int] = []

    def stage(self, block: torch.Tensor) -> None:
        self.pending_src.append(block.data_ptr())

    def flush(self, device: torch.device) -> torch.Tensor:
        src = torch.tensor(self.pending_src, device=device)
        self.pending_src.clear()
        return src

    def legacy_kernel_args(self) -> torch.Tensor:
        # A custom op whose schema was written for int64 address tensors.
        return self.layer_ptrs.long()
