"""What the guard adds to each launch of vLLM's fused Mamba kernels (MambaSpecDecodeGPUContext tables).

For S states (S/2 Mamba layers of a conv and a temporal state, vLLM's page layout, one allocation)
and one Mamba group, one run compares, round-robin, the cost of one launch call:
- unguarded: the launch method with a no-op kernel (what a call costs without the guard);
- fast and strict: the same method wrapped by ``fused.make_launch`` (what ``install()`` does);
- anchor: one ctypes.memmove of the bytes one request's pre-copy moves (S state blocks), the
  smallest copy a launch does.
The tables live on the host (no GPU here): strict's device-to-host read-back is not included.
Writes benchmarks/results/fused_checks.{json,md}.

    python benchmarks/fused_checks.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from ptrlint.runtime import default_regions, fused

RESULTS = Path(__file__).resolve().parent / "results"
STATES = (4, 64, 256)
CONV, TEMPORAL = (3, 1024), (64, 128)  # float32 state shapes per block
BLOCKS = 16


def _i64(value: int) -> int:
    return value if value < (1 << 63) else value - (1 << 64)


@dataclass
class Context:
    state_base_addrs: torch.Tensor
    block_table_ptrs: torch.Tensor
    aligned_index_block_table_ptrs: torch.Tensor
    num_states: int
    num_groups: int = 1
    is_initialized: bool = True

    def run_fused_precopy(self) -> None:
        _kernel(self.block_table_ptrs, self.state_base_addrs)


def _kernel(*tables: torch.Tensor) -> None:
    return None


def build(states: int) -> tuple[Context, torch.Tensor]:
    conv_bytes, temporal_bytes = CONV[0] * CONV[1] * 4, TEMPORAL[0] * TEMPORAL[1] * 4
    pages = torch.zeros(states // 2, BLOCKS, conv_bytes + temporal_bytes, dtype=torch.int8)
    tensors, targets = [], []
    for layer in range(states // 2):
        conv = pages[layer, :, :conv_bytes].view(torch.float32).view(-1, *CONV)
        temporal = pages[layer, :, conv_bytes:].view(torch.float32).view(-1, *TEMPORAL)
        for k, state in enumerate((conv, temporal)):
            tensors.append(state)
            targets.append(fused.tensor_target(state, f"layer {layer} state {k}", f"layer {layer}"))
    table = torch.zeros(4, BLOCKS, dtype=torch.int32)
    as_table = lambda ts: torch.tensor([_i64(t.data_ptr()) for t in ts], dtype=torch.int64)  # noqa: E731
    ctx = Context(as_table(tensors), as_table([table]), as_table([table]), num_states=states)
    fused.record_targets(
        ctx,
        {
            "state_base_addrs": targets,
            "block_table_ptrs": fused.block_table_targets([table], "block table"),
            "aligned_index_block_table_ptrs": fused.block_table_targets([table], "aligned"),
        },
    )
    default_regions().add(pages, "states")
    default_regions().add(table, "block table")
    return ctx, pages


def timed(call, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat


def measure(states: int, rounds: int, repeat: int) -> dict:
    ctx, pages = build(states)
    tables = ("state_base_addrs", "block_table_ptrs")
    calls = {"unguarded": lambda: Context.run_fused_precopy(ctx)}
    for level in ("fast", "strict"):
        launch = fused.make_launch(Context.run_fused_precopy, tables, level)
        calls[level] = lambda launch=launch: launch(ctx)
    block = (CONV[0] * CONV[1] + TEMPORAL[0] * TEMPORAL[1]) * 4
    src, dst = pages.view(-1), torch.empty(states // 2 * block, dtype=torch.int8)
    calls["anchor"] = lambda: ctypes.memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(timed(call, repeat))
    best = {name: min(values) * 1e6 for name, values in samples.items()}
    median = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    return {
        "states": states,
        "anchor_bytes": dst.nbytes,
        "best_us": best,
        "median_us": median,
        "added_us": {level: best[level] - best["unguarded"] for level in ("fast", "strict")},
        "added_vs_anchor": {level: (best[level] - best["unguarded"]) / best["anchor"] for level in ("fast", "strict")},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rounds, repeat = (3, 50) if args.quick else (15, 400)
    rows = [measure(states, rounds, repeat) for states in STATES]
    RESULTS.mkdir(exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "machine": platform.machine(),
        "rounds": rounds,
        "repeat": repeat,
    }
    (RESULTS / "fused_checks.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Guard cost per launch of a fused Mamba kernel (host tables, best of rounds)",
        "",
        f"python {meta['python']}, torch {meta['torch']}, {rounds} rounds x {repeat} calls",
        "",
        "| states | unguarded µs | fast µs (added) | strict µs (added) | anchor memmove µs (bytes) | added / anchor: fast, strict |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        b, a = row["best_us"], row["added_us"]
        lines.append(
            f"| {row['states']} | {b['unguarded']:.2f} | {b['fast']:.2f} (+{a['fast']:.2f}) | "
            f"{b['strict']:.2f} (+{a['strict']:.2f}) | {b['anchor']:.2f} ({row['anchor_bytes']}) | "
            f"{row['added_vs_anchor']['fast']:.2f}, {row['added_vs_anchor']['strict']:.2f} |"
        )
    (RESULTS / "fused_checks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
