"""Per-call cost of the runtime guard on vLLM 0.34's address-table families (issue 61), on the CPU.

For each family ``install()`` patches (``runtime/families.py``, ``lora_tables.py``, ``replayssm.py``),
the functions that fill its tables and launch its kernels are timed unguarded (``check="off"``, the
guard not installed), at the default level ("fast") and at "strict". Each level runs in its own
process (``install()`` patches vLLM process-wide). The objects are built through vLLM's own code as in
``tests/vllm_integration/scenario_tables_034.py``. Every Triton kernel of the patched modules is
replaced by a no-op stand-in before timing, so a launch number is vLLM's Python wrapper plus the
guard's own work (no kernel runs; TRITON_INTERPRET is not needed). The anchor is one contiguous
memmove (``torch.Tensor.copy_``) of as many bytes as the path's address tables hold. Medians of
``timeit`` repeats, one torch thread. Writes benchmarks/results/family_costs.{json,md}.

    .venv-vllm-0.34.0/bin/python benchmarks/family_costs.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LEVELS = ("off", "fast", "strict")
KERNEL_MODULES = (
    "vllm.models.kimi_k3.nvidia.ops.recoverssm",
    "vllm.v1.worker.utils",
    "vllm.v1.worker.gpu.block_table",
    "vllm.v1.worker.replayssm_utils",
    "vllm.v1.worker.gpu.model_states.prompt_embeds",
)

Case = tuple[str, str, Callable[[], object], int]  # family, path, call, table bytes


def stub_kernels(module: ModuleType) -> list[str]:
    """Replace each Triton kernel of ``module`` by a no-op launcher; returns their names."""
    from triton.runtime.jit import KernelInterface

    class NoOp:
        def __getitem__(self, grid: object) -> Callable[..., None]:
            return lambda *args, **kwargs: None

    names = [name for name, value in vars(module).items() if isinstance(value, KernelInterface)]
    for name in names:
        setattr(module, name, NoOp())
    return names


def nbytes(*tables: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tables)


def cases() -> tuple[list[Case], list[str]]:
    """Each family's fill and launch paths, built as the vLLM 0.34 scenario builds them."""
    import importlib

    import torch

    from tests.vllm_integration import scenario_tables_034 as sc

    rssm = sc.load_recoverssm()
    stubbed = [f"{m}.{k}" for m in KERNEL_MODULES for k in stub_kernels(importlib.import_module(m))]
    found: list[Case] = []
    ints = lambda *v: torch.tensor(v, dtype=torch.int32)  # noqa: E731

    layers = list(sc.kda_layers(rssm).values())
    create = lambda: rssm.KDARecoverSSMCommitContext.create(layers, spec_query_len=sc.WINDOW, max_num_reqs=sc.REQS)  # noqa: E731
    ctx = create()
    rssm_bytes = nbytes(
        ctx.conv_state_base_addrs, ctx.state_base_addrs, ctx.correction_cache_base_addrs, ctx.kg_cache_base_addrs
    )
    args = (ints(2, 1, 0), ints(1, 2, 3), ints(0, 3, 6, 9))
    found += [("recoverssm", "fill: create", create, rssm_bytes)]
    found += [("recoverssm", "launch: commit", lambda: ctx.commit(*args), rssm_bytes)]

    from vllm.v1.attention.backend import AttentionBackend
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec
    from vllm.v1.worker.utils import AttentionGroup, KVBlockZeroer, bind_kv_cache_to_layers

    names = [f"model.layers.{i}.self_attn" for i in range(2)]
    attn: dict[str, Any] = {name: type("Layer", (), {"kv_cache": None})() for name in names}
    for lyr in attn.values():
        lyr.bind_kv_cache = lambda kv, lyr=lyr: setattr(lyr, "kv_cache", kv)
    bind_kv_cache_to_layers({name: torch.randn(sc.ZERO_BLOCKS, 2, 16, 8) for name in names}, attn)
    group = AttentionGroup(
        AttentionBackend, names, FullAttentionSpec(16, num_kv_heads=2, head_size=8, dtype=torch.float32), 0
    )
    make = lambda: KVBlockZeroer(torch.device("cpu"), [group], [16], attn, sc.ZERO_BLOCKS)  # noqa: E731
    zeroer = make()
    zero_bytes = nbytes(zeroer._meta[0])
    found += [("zeroer", "fill: KVBlockZeroer.__init__", make, zero_bytes)]
    found += [("zeroer", "launch: zero_block_ids", lambda: zeroer.zero_block_ids([1, 4]), zero_bytes)]

    bt = sc.v2_block_tables()
    bt.init_block_table_layout_tensors()
    bt_bytes = nbytes(bt.block_table_ptrs, bt.input_block_table_ptrs)
    idx = ints(0)
    starts, positions = ints(0, 3), torch.tensor([0, 1, 17])
    found += [("block_tables", "fill: init_block_table_layout_tensors", bt.init_block_table_layout_tensors, bt_bytes)]
    found += [("block_tables", "launch: gather_block_tables", lambda: bt.gather_block_tables(idx, 1), bt_bytes)]
    found += [
        (
            "block_tables",
            "launch: compute_slot_mappings",
            lambda: bt.compute_slot_mappings(idx, starts, positions, 3),
            bt_bytes,
        )
    ]

    from vllm.v1.worker.gpu.pcp_manager import PCPManager

    pcp = PCPManager.__new__(PCPManager)
    vars(pcp).update(
        device=torch.device("cpu"), pcp_world_size=2, _max_num_local_reqs=2 * sc.REQS, _max_num_tokens=None
    )
    pcp.set_block_tables(bt)
    pcp_bytes = nbytes(pcp._local_block_table_ptrs)
    found += [("pcp", "fill: set_block_tables", lambda: pcp.set_block_tables(bt), pcp_bytes)]
    found += [
        (
            "pcp",
            "launch: gather_block_tables(out_ptrs)",
            lambda: bt.gather_block_tables(idx, 1, out=pcp._local_block_tables, out_ptrs=pcp._local_block_table_ptrs),
            pcp_bytes,
        )
    ]

    from vllm.v1.worker.replayssm_utils import ReplaySSMModelContext

    spec = MambaSpec(16, ((3, 8), (2, 4, 4)), (torch.float32, torch.float32), mamba_cache_mode="none")
    blocks = sc.BLOCKS
    mixers = [
        type(
            "Mixer",
            (),
            {
                "kv_cache": tuple(
                    torch.zeros(blocks, *shape) for shape in ((3, 8), (2, 4, 4), (2, 5, 4), (2, 5), (1, 5, 4))
                ),
                "A": torch.zeros(2),
                "replayssm_buffer_len": 4,
                "_replayssm_ring_start": torch.arange(10, 10 + blocks, dtype=torch.int32),
                "_replayssm_prev_num_accepted": torch.arange(20, 20 + blocks, dtype=torch.int32),
            },
        )()
        for _ in range(2)
    ]
    table = torch.tensor([[1, 3, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.int32)
    rs_create = lambda: ReplaySSMModelContext.create([(mixers, spec, table)], sc.REQS)  # noqa: E731
    rs = rs_create()
    rs_bytes = sum(nbytes(v) for k, v in vars(rs).items() if k.endswith("_ptrs") and isinstance(v, torch.Tensor))
    src, dst = ints(0, -1, -1), ints(1, -1, -1)
    found += [("replayssm", "fill: ReplaySSMModelContext.create", rs_create, rs_bytes)]
    found += [
        (
            "replayssm",
            "launch: reset_new_slots",
            lambda: rs.reset_new_slots(idx_mapping=None, src_cols=src, dst_cols=dst, num_reqs=1),
            rs_bytes,
        )
    ]

    from vllm.lora.ops.triton_ops import utils as lu

    cpu = torch.device("cpu")
    stacks = [torch.randn(2, 8, 4), torch.randn(2, 1, 8, 4)]
    lora_bytes = nbytes(lu._get_lora_a_ptr(stacks, cpu)[0])

    def lora_fill() -> object:
        lu._LORA_A_PTR_DICT.clear()
        return lu._get_lora_a_ptr(stacks, cpu)

    found += [("lora", "fill: _get_lora_a_ptr (cache miss)", lora_fill, lora_bytes)]
    found += [("lora", "launch: _get_lora_a_ptr (cached)", lambda: lu._get_lora_a_ptr(stacks, cpu), lora_bytes)]
    return found + transfer_cases(), stubbed


def transfer_cases() -> list[Case]:
    """Prompt embeddings and the copy descriptor pools, built as ``scenario_transfers_034`` builds them (the
    compiled swap op is its host stand-in: a memmove per descriptor, the same at every level)."""
    import types

    import numpy as np
    import torch
    from ptrlint.runtime import register
    from vllm.distributed.ec_transfer.ec_connector.cpu import worker as ecw
    from vllm.distributed.ec_transfer.ec_connector.cpu.worker import descriptor_buffers as db
    from vllm.v1.kv_offload.cpu import gpu_worker as gw
    from vllm.v1.worker.gpu import buffer_utils
    from vllm.v1.worker.gpu.model_states import prompt_embeds as pe

    from tests.vllm_integration import scenario_transfers_034 as st

    st.stand_in_op()
    buffer_utils.is_uva_available = lambda: False  # as the scenario: a CPU build of torch has no pinned memory
    state = pe.PromptEmbedsState(4, st.HIDDEN, torch.float32, torch.device("cpu"))
    request = types.SimpleNamespace(req_id="a", prompt_embeds=torch.ones(5, st.HIDDEN), prompt_is_token_ids=None)
    state.add_request(2, request)
    state.apply_staged_writes()
    batch = types.SimpleNamespace(
        num_reqs=1,
        num_scheduled_tokens=np.array([5], dtype=np.int32),
        idx_mapping=torch.tensor([2], dtype=torch.int32),
        query_start_loc=torch.tensor([0, 5], dtype=torch.int32),
    )
    computed, out = torch.zeros(4, dtype=torch.int32), torch.zeros(5, st.HIDDEN)
    pe_bytes = nbytes(state.embeds_ptrs.cpu, state.mask_ptrs.cpu)
    found: list[Case] = [
        ("prompt_embeds", "fill: add_request", lambda: state.add_request(2, request), pe_bytes),
        ("prompt_embeds", "launch: apply", lambda: state.apply(batch, computed, out), pe_bytes),
    ]

    src, dst = torch.arange(4096, dtype=torch.uint8), torch.zeros(4096, dtype=torch.uint8)
    register(src, "benchmark source")
    register(dst, "benchmark destination")
    offsets = np.arange(0, 4096, 256, dtype=np.uint64)
    sizes = np.full(len(offsets), 256, dtype=np.int64)
    bufs = db.DescriptorBufferPool().acquire(len(offsets))
    add = lambda: bufs.add_copies(0, np.uint64(src.data_ptr()) + offsets, np.uint64(dst.data_ptr()) + offsets, sizes)  # noqa: E731
    add()
    ec_bytes = nbytes(bufs.src_ptrs, bufs.dst_ptrs)
    to_host = ecw.ECCPUTransferDirection.DEVICE_TO_HOST
    found += [
        ("ec_descriptors", "fill: add_copies", add, ec_bytes),
        (
            "ec_descriptors",
            "launch: _submit_transfer",
            lambda: ecw.ECCPUWorker._submit_transfer(None, bufs, len(offsets), to_host),
            ec_bytes,
        ),
    ]

    kv_src, kv_dst, kv_sizes = gw._new_descriptor_buffers(len(offsets))
    kv_src.numpy().view(np.uint64)[:] = np.uint64(src.data_ptr()) + offsets
    kv_dst.numpy().view(np.uint64)[:] = np.uint64(dst.data_ptr()) + offsets
    kv_sizes.numpy()[:] = sizes
    swap = gw._select_swap_blocks_fn([], True, True)
    kv_bytes = nbytes(kv_src, kv_dst)
    found += [
        ("kv_offload", "fill: _new_descriptor_buffers", lambda: gw._new_descriptor_buffers(len(offsets)), kv_bytes),
        ("kv_offload", "launch: swap_blocks_batch", lambda: swap(kv_src, kv_dst, kv_sizes), kv_bytes),
    ]
    return found


def per_call_us(call: Callable[[], object], repeat: int) -> float:
    """Median over ``repeat`` timeit rounds of the time of one call, in µs (rounds of >= ~20 ms)."""
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(repeat=repeat, number=number)) / number * 1e6


def child(level: str, repeat: int) -> None:
    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, str(ROOT))  # the scenario helpers of tests/vllm_integration
    from ptrlint.runtime import vllm as guard

    if level != "off":
        guard.install(check=level)
    found, stubbed = cases()
    rows = []
    # launches first, then fills (a strict fill registers each allocation once: the regions do not grow)
    for family, path, call, table_bytes in sorted(found, key=lambda case: not case[1].startswith("launch")):
        call()  # warm: caches, lazy imports
        row: dict[str, object] = {"family": family, "path": path, "us": per_call_us(call, repeat)}
        if level == "off":
            src = torch.zeros(max(table_bytes, 1), dtype=torch.uint8)
            dst = torch.empty_like(src)
            row.update(table_bytes=table_bytes, anchor_us=per_call_us(functools.partial(dst.copy_, src), repeat))
        rows.append(row)
    print("FAMILY_COSTS " + json.dumps({"installed": list(guard.installed()), "stubbed": stubbed, "rows": rows}))


def run_level(level: str, repeat: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PTRLINT_GUARD", None)
    argv = [sys.executable, __file__, "--child", level, "--repeat", str(repeat)]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("FAMILY_COSTS ")]
    if proc.returncode or not lines:
        raise SystemExit(f"level {level} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return json.loads(lines[-1].removeprefix("FAMILY_COSTS "))


def write(levels: dict[str, dict[str, Any]], command: str) -> None:
    import torch
    import vllm

    rows = []
    for off, fast, strict in zip(*(levels[level]["rows"] for level in LEVELS), strict=True):
        overhead = fast["us"] - off["us"]
        rows.append(
            {
                "family": off["family"],
                "path": off["path"],
                "table_bytes": off["table_bytes"],
                "unguarded_us": off["us"],
                "fast_us": fast["us"],
                "strict_us": strict["us"],
                "fast_overhead_us": overhead,
                "strict_overhead_us": strict["us"] - off["us"],
                "anchor_memmove_us": off["anchor_us"],
                "fast_overhead_x_anchor": overhead / off["anchor_us"],
            }
        )
    meta = {
        "command": command,
        "torch": torch.__version__,
        "vllm": vllm.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "kernels_stubbed": levels["off"]["stubbed"],
        "installed_fast": levels["fast"]["installed"],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "family_costs.json").write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Guard cost per vLLM 0.34 table family",
        "",
        f"`{command}`",
        "",
        f"CPU, 1 torch thread, torch {meta['torch']}, vLLM {meta['vllm']}; medians of timeit rounds, µs per call.",
        "Every Triton kernel of the patched modules is a no-op stand-in (no kernel runs): a launch number is",
        "vLLM's Python wrapper plus the guard's own work. Anchor: one contiguous memmove (`Tensor.copy_`) of",
        "the path's address-table bytes; ratio = fast overhead / anchor. Launches are timed before fills, in one",
        "process per level. A strict fill registers its sources once per allocation (``MemoryRegions.ensure``):",
        "refilling from the same tensors thousands of times here adds no regions. The copy descriptor paths run",
        "the scenario's host stand-in for vLLM's compiled swap op (a memmove per descriptor) at every level.",
        "",
        "| family | path | unguarded µs | fast µs | strict µs | fast overhead µs | strict overhead µs "
        "| memmove anchor µs (bytes) | fast overhead / anchor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['family']} | {r['path']} | {r['unguarded_us']:.1f} | {r['fast_us']:.1f} | {r['strict_us']:.1f} "
            f"| {r['fast_overhead_us']:+.1f} | {r['strict_overhead_us']:+.1f} "
            f"| {r['anchor_memmove_us']:.2f} ({r['table_bytes']}) | {r['fast_overhead_x_anchor']:+.1f}x |"
        )
    lines += ["", "Stubbed kernels: " + ", ".join(f"`{k}`" for k in meta["kernels_stubbed"]), ""]
    (RESULTS / "family_costs.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--child", choices=LEVELS)
    opts = parser.parse_args()
    if opts.child:
        child(opts.child, opts.repeat)
        return
    command = " ".join(["python", "benchmarks/family_costs.py", *sys.argv[1:]])
    write({level: run_level(level, opts.repeat) for level in LEVELS}, command)


if __name__ == "__main__":
    main()
