"""Example: per-request Mamba state copies through a CpuGpuBuffer-style factory."""

from dataclasses import dataclass
from typing import Callable

import torch


@dataclass
class StateCopyBuffers:
    src_ptrs: object
    dst_ptrs: object
    sizes: object
    offset: int = 0

    @classmethod
    def create(cls, max_entries: int, make_buffer: Callable[..., object]) -> "StateCopyBuffers":
        return cls(
            src_ptrs=make_buffer(max_entries, dtype=torch.int64),
            dst_ptrs=make_buffer(max_entries, dtype=torch.int32),
            sizes=make_buffer(max_entries, dtype=torch.int32),
        )


class StateTable:
    def __init__(self, max_reqs: int) -> None:
        self.state_addrs = torch.zeros(max_reqs, dtype=torch.uint64)

    def bind(self, req_idx: int, state: torch.Tensor) -> None:
        # torch converts the Python int through int64: raises for addresses >= 2**63.
        self.state_addrs[req_idx] = state.data_ptr()
