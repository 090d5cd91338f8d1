"""Example: a custom all-reduce that exchanges peer buffer addresses and hands them to a compiled op.

The table is sent with `dist.all_gather` (collectives reject uint64) and read by a compiled
operator that expects int64, so a plain uint64 rewrite would break it at ordinary addresses:
`ptrlint --fix` creates it unsigned and hands the same int64 bits on (`.view(torch.int64)`).
The gathered tables hold bits written by the collective, never Python ints, and are not findings.
"""

import torch
import torch.distributed as dist


class PeerBuffers:
    def __init__(self, local: torch.Tensor, world_size: int, signal_offset: int) -> None:
        mine = torch.tensor([local.data_ptr()], dtype=torch.int64)
        gathered = [torch.empty(1, dtype=torch.int64) for _ in range(world_size)]
        dist.all_gather(gathered, mine)
        self.peer_ptrs = torch.cat(gathered)
        self.signal_offset = signal_offset

    def all_reduce(self, inp: torch.Tensor, out: torch.Tensor) -> None:
        signals = self.peer_ptrs + self.signal_offset
        torch.ops.custom_ar.all_reduce(inp, out, self.peer_ptrs, signals)
