"""Batched-copy speed: ptrlint.runtime.batch_memcpy (guard off/fast/strict) against the ceiling.

For entries N in {16, 256, 4096} and entry sizes S in {256 B, 4 KiB, 64 KiB, 1 MiB} (combinations
over ~1 GiB are skipped), one run compares, round-robin on the same buffers:
- ceiling: one ctypes.memmove of N*S contiguous bytes;
- batch_memcpy with check="off", "fast" and "strict" (CPU backend, tables already on the host);
- a per-entry torch copy_ loop over prebuilt views, and torch._foreach_copy_.
Entry i copies slot perm_s[i] to slot perm_d[i] (random permutations). One torch thread.
Writes benchmarks/results/copy_speed.{json,md} and copy_speed.png (needs matplotlib: the
`bench` extra).

    python benchmarks/copy_speed.py [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from ptrlint.runtime import MemoryRegions, batch_memcpy

RESULTS = Path(__file__).resolve().parent / "results"
ENTRIES = (16, 256, 4096)
SIZES = (256, 4096, 65536, 1 << 20)
LIMIT = 1 << 30


def build(n: int, size: int, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, 256, (n * size,), dtype=torch.uint8, generator=gen)
    dst = torch.zeros(n * size, dtype=torch.uint8)
    perm_s = torch.randperm(n, generator=gen).tolist()
    perm_d = torch.randperm(n, generator=gen).tolist()
    src_ptrs = np.array([src.data_ptr() + p * size for p in perm_s], dtype=np.uint64)
    dst_ptrs = np.array([dst.data_ptr() + p * size for p in perm_d], dtype=np.uint64)
    sizes = np.full(n, size, dtype=np.int32)
    src_views = [src[p * size : (p + 1) * size] for p in perm_s]
    dst_views = [dst[p * size : (p + 1) * size] for p in perm_d]
    regions = MemoryRegions()
    regions.add(src)
    regions.add(dst)
    tables = (torch.from_numpy(src_ptrs), torch.from_numpy(dst_ptrs), torch.from_numpy(sizes))
    return src, dst, tables, src_views, dst_views, regions


def methods(src, dst, tables, src_views, dst_views, regions):
    total = src.numel()
    memmove = ctypes.memmove
    s_addr, d_addr = src.data_ptr(), dst.data_ptr()

    def loop_copy() -> None:
        for d, s in zip(dst_views, src_views):
            d.copy_(s)

    return {
        "ceiling_memmove": lambda: memmove(d_addr, s_addr, total),
        "batch_off": lambda: batch_memcpy(*tables, check="off"),
        "batch_fast": lambda: batch_memcpy(*tables, check="fast"),
        "batch_strict": lambda: batch_memcpy(*tables, check="strict", regions=regions),
        "loop_copy_": loop_copy,
        "foreach_copy_": lambda: torch._foreach_copy_(dst_views, src_views),
    }


def measure(n: int, size: int, quick: bool) -> dict:
    src, dst, tables, src_views, dst_views, regions = build(n, size)
    funcs = methods(src, dst, tables, src_views, dst_views, regions)
    # correctness first: the batched copy must reproduce the per-entry copy
    batch_memcpy(*tables, check="strict", regions=regions)
    expected = dst.clone()
    dst.zero_()
    funcs["loop_copy_"]()
    assert torch.equal(dst, expected)
    total = n * size
    rounds = int(min(200, max(5, 4e8 / max(total, 1))))
    if quick:
        rounds = max(3, rounds // 10)
    times: dict[str, list[float]] = {k: [] for k in funcs}
    for _ in range(2):
        for f in funcs.values():
            f()
    for _ in range(rounds):
        for name, f in funcs.items():
            start = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - start)
    best = {k: min(v) for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    ceiling = best["ceiling_memmove"]
    return {
        "entries": n,
        "entry_bytes": size,
        "total_bytes": total,
        "rounds": rounds,
        "best_s": best,
        "median_s": median,
        "gbps_best": {k: total / v / 1e9 for k, v in best.items()},
        "ratio_to_ceiling": {k: ceiling / v for k, v in best.items()},
        "per_entry_overhead_us": {k: (v - ceiling) / n * 1e6 for k, v in best.items()},
        "guard_overhead_vs_off": {
            "fast": median["batch_fast"] / median["batch_off"] - 1,
            "strict": median["batch_strict"] / median["batch_off"] - 1,
        },
    }


def human(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB" if size >= 1024 else f"{size} B"


def markdown(result: dict) -> str:
    out = [
        f"CPU, {result['threads']} torch thread, best-of rounds (GB/s; x = ratio to the contiguous memmove ceiling). "
        f'Guard overhead = median time vs `check="off"`. {result["date"]}, torch {result["torch"]}.',
        "",
        "| N | S | ceiling | off | fast | strict | copy_ loop | _foreach_copy_ | fast overhead | strict overhead | off per-entry |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        g, x = r["gbps_best"], r["ratio_to_ceiling"]
        cell = lambda k, g=g, x=x: f"{g[k]:.2f} ({x[k]:.2f}x)"  # noqa: E731
        out.append(
            f"| {r['entries']} | {human(r['entry_bytes'])} | {g['ceiling_memmove']:.2f} | {cell('batch_off')} | "
            f"{cell('batch_fast')} | {cell('batch_strict')} | {cell('loop_copy_')} | {cell('foreach_copy_')} | "
            f"{r['guard_overhead_vs_off']['fast'] * 100:+.1f}% | {r['guard_overhead_vs_off']['strict'] * 100:+.1f}% | "
            f"{r['per_entry_overhead_us']['batch_off']:.2f} µs |"
        )
    return "\n".join(out) + "\n"


def plot(result: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(ENTRIES), figsize=(5 * len(ENTRIES), 4), sharey=True)
    for ax, n in zip(axes, ENTRIES):
        rows = [r for r in result["rows"] if r["entries"] == n]
        for method in ("ceiling_memmove", "batch_off", "batch_fast", "batch_strict", "loop_copy_", "foreach_copy_"):
            ax.plot([r["entry_bytes"] for r in rows], [r["gbps_best"][method] for r in rows], marker="o", label=method)
        ax.set_xscale("log", base=2)
        ax.set_title(f"N = {n} entries")
        ax.set_xlabel("entry size (bytes)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("GB/s (best of rounds)")
    axes[-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for n in ENTRIES:
        for size in SIZES:
            if n * size > LIMIT:
                continue
            row = measure(n, size, args.quick)
            rows.append(row)
            print(
                json.dumps({k: row[k] for k in ("entries", "entry_bytes", "gbps_best", "guard_overhead_vs_off")}),
                flush=True,
            )
    result = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "copy_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "copy_speed.md").write_text(markdown(result))
    if not plot(result, args.out / "copy_speed.png"):
        print("matplotlib not installed: no plot (pip install '.[bench]')", file=sys.stderr)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
