"""vLLM 0.34's other address tables built by vLLM's own code with the guard installed, on the CPU.

Run as ``python -m tests.vllm_integration.scenario_tables_034 LEVEL [plugin] [simulate]`` in a fresh
process (install() patches vLLM process-wide); prints one ``SCENARIO {json}`` line of observations.

- Kimi-K3 RecoverSSM: ``KDARecoverSSMCommitContext.create`` (vLLM's ``_base_addrs``) builds the four
  base-address tables, and ``commit`` runs vLLM's Triton commit kernels (interpreter). The package
  ``vllm.models.kimi_k3`` imports the whole Kimi-K3 model on import, which needs
  ``compressed_tensors`` and GPU-only pieces this CPU venv does not install; ``load_recoverssm``
  executes vLLM's own ``recoverssm.py`` (and the ``kernels.py`` it imports) unchanged, under its real
  module name, with the parent packages created empty instead of running their ``__init__``.
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # a scenario process: set before vLLM decides on Triton
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # the CPU platform: no pinned host memory

import importlib  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402

import torch  # noqa: E402

from .support import emit, start_guard  # noqa: E402

RECOVERSSM = "vllm.models.kimi_k3.nvidia.ops.recoverssm"
HEADS, DIM, WINDOW, REQS, BLOCKS = 2, 8, 3, 3, 4
ZERO_BLOCKS = 6
BT_ROWS = ([5, 1, 4], [2, 7])  # request 0's blocks in the two groups


def load_recoverssm() -> types.ModuleType:
    """vLLM's recoverssm module, without running the Kimi-K3 package's ``__init__`` (see the docstring)."""
    import vllm

    root = os.path.dirname(vllm.__file__)
    for package in (
        "vllm.models.kimi_k3",
        "vllm.models.kimi_k3.nvidia",
        "vllm.models.kimi_k3.nvidia.ops",
        "vllm.models.kimi_k3.nvidia.recoverssm",
    ):
        if package not in sys.modules:
            spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
            spec.submodule_search_locations = [os.path.join(root, *package.split(".")[1:])]
            sys.modules[package] = importlib.util.module_from_spec(spec)
    return importlib.import_module(RECOVERSSM)


def kda_layer(records) -> types.SimpleNamespace:
    """What ``KDARecoverSSMCommitContext.create`` reads of a KDA layer; ``bind_kv_cache`` sets its states."""
    layer = types.SimpleNamespace(
        recoverssm_records=records,
        kv_cache=(),
        local_num_heads=HEADS,
        head_dim=DIM,
        gate_lower_bound=None,
        **{"A_log": torch.zeros(HEADS), "dt_bias": torch.zeros(HEADS * DIM)},
    )
    layer.bind_kv_cache = lambda kv_cache: setattr(layer, "kv_cache", tuple(kv_cache))
    return layer


def kda_layers(rssm) -> dict[str, types.SimpleNamespace]:
    """Two KDA layers bound through vLLM's ``bind_kv_cache_to_layers`` (the guard registers them in strict)."""
    from vllm.v1.worker.utils import bind_kv_cache_to_layers

    gen = torch.Generator().manual_seed(0)
    layers = {
        f"model.layers.{i}.self_attn": kda_layer(
            rssm.KDARecoverSSMRecords.allocate(REQS, HEADS, WINDOW, DIM, torch.float16, torch.device("cpu"))
        )
        for i in range(2)
    }
    caches = {
        name: (
            torch.randn(BLOCKS, HEADS * DIM, WINDOW + 3, generator=gen),
            torch.randn(BLOCKS, HEADS, DIM, DIM, generator=gen),
        )
        for name in layers
    }
    bind_kv_cache_to_layers(caches, layers)
    for lyr in layers.values():  # allocate() leaves them uninitialised: finite values keep the kernels finite
        for record in (lyr.recoverssm_records.correction, lyr.recoverssm_records.key_gate):
            record.copy_(torch.randn(record.shape, generator=gen) * 0.1)
    return layers


def bits(tensors) -> list[torch.Tensor]:
    return [t.clone().view(torch.int32) for t in tensors]


def attempt(seen: dict, key: str, run) -> object:
    from ptrlint.runtime import PointerGuardError

    try:
        result = run()
        seen[key] = "accepted"
        return result
    except PointerGuardError as exc:
        seen[key] = f"{type(exc).__name__}: {exc}"
        seen[key + "_cause"] = type(exc.__cause__).__name__ if exc.__cause__ else None
    return None


def recoverssm(seen: dict, level: str) -> None:
    rssm = load_recoverssm()
    context = rssm.KDARecoverSSMCommitContext
    seen["rssm_patched"] = hasattr(context.create.__func__, "__wrapped__")
    layers = list(kda_layers(rssm).values())
    ctx = attempt(seen, "rssm_create", lambda: context.create(layers, spec_query_len=WINDOW, max_num_reqs=REQS))
    if ctx is None:
        return
    seen["rssm_dtypes"] = [str(ctx.state_base_addrs.dtype), str(ctx.conv_state_base_addrs.dtype)]
    ints = lambda *v: torch.tensor(v, dtype=torch.int32)  # noqa: E731
    attempt(seen, "rssm_commit", lambda: ctx.commit(ints(2, 1, 0), ints(1, 2, 3), ints(0, 3, 6, 9)))
    good = ctx.kg_cache_base_addrs.clone()
    if level == "strict":  # fast does not read entries: launching this would be a wild read
        ctx.kg_cache_base_addrs[1] ^= 1 << 40  # an entry overwritten after the fill
        before = bits(ctx.checkpoints)
        attempt(seen, "rssm_corrupted", lambda: ctx.commit(ints(2, 1, 0), ints(1, 2, 3), ints(0, 3, 6, 9)))
        seen["rssm_corrupted_untouched"] = all(torch.equal(a, b) for a, b in zip(before, bits(ctx.checkpoints)))
    ctx.kg_cache_base_addrs = good.view(torch.uint64)  # raw in a table its kernel reads as int64
    attempt(seen, "rssm_raw_dtype", lambda: ctx.commit(ints(2, 1, 0), ints(1, 2, 3), ints(0, 3, 6, 9)))


def zeroer(seen: dict, level: str) -> None:
    """vLLM's ``KVBlockZeroer`` over two attention layers bound by ``bind_kv_cache_to_layers``; its kernel zeroes."""
    from vllm.v1.attention.backend import AttentionBackend
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.worker.utils import AttentionGroup, KVBlockZeroer, bind_kv_cache_to_layers

    names = [f"model.layers.{i}.self_attn" for i in range(2)]
    layers = {name: types.SimpleNamespace(kv_cache=None) for name in names}
    for lyr in layers.values():
        lyr.bind_kv_cache = lambda kv, lyr=lyr: setattr(lyr, "kv_cache", kv)
    gen = torch.Generator().manual_seed(1)
    bind_kv_cache_to_layers({name: torch.randn(ZERO_BLOCKS, 2, 16, 8, generator=gen) for name in names}, layers)
    spec = FullAttentionSpec(16, num_kv_heads=2, head_size=8, dtype=torch.float32)
    group = AttentionGroup(AttentionBackend, names, spec, 0)
    made = attempt(seen, "zeroer_init", lambda: KVBlockZeroer(torch.device("cpu"), [group], [16], layers, ZERO_BLOCKS))
    if made is None or made._meta is None:
        return
    seen["zeroer_dtype"] = str(made._meta[0].dtype)
    before = [lyr.kv_cache.clone() for lyr in layers.values()]
    attempt(seen, "zeroer_zero", lambda: made.zero_block_ids([1, 4]))
    seen["zeroer_exact"] = all(
        bool((lyr.kv_cache[[1, 4]] == 0).all()) and torch.equal(lyr.kv_cache[[0, 2, 3, 5]], old[[0, 2, 3, 5]])
        for lyr, old in zip(layers.values(), before)
    )
    good = made._meta
    if level == "strict":  # fast does not read entries: launching these would be wild writes
        corrupted = good[0].clone()
        corrupted[1] ^= 1 << 40
        made._meta = (corrupted, *good[1:])
        attempt(seen, "zeroer_corrupted", lambda: made.zero_block_ids([2]))
        made._meta = good
        attempt(seen, "zeroer_block_out_of_range", lambda: made.zero_block_ids([ZERO_BLOCKS]))
        seen["zeroer_refused_untouched"] = bool((layers[names[0]].kv_cache[2] != 0).all())
    made._meta = (good[0].view(torch.int64), *good[1:])  # wrapped values in a table its kernel reads as uint64
    attempt(seen, "zeroer_wrapped_dtype", lambda: made.zero_block_ids([2]))


def v2_block_tables():
    """A V2 runner ``BlockTables`` of two groups, request 0's rows filled. Its ``__init__`` allocates pinned host
    memory (UVA buffers), which a CPU host has not: the object is made without it, with the attributes its
    ``init_block_table_layout_tensors`` and kernels read; everything that builds or reads a table is vLLM's."""
    from vllm.v1.worker.gpu.block_table import BlockTables

    bt = BlockTables.__new__(BlockTables)
    rows = torch.zeros(REQS, 8, dtype=torch.int32)
    rows[0, :3] = torch.tensor(BT_ROWS[0])
    other = torch.zeros(REQS, 8, dtype=torch.int32)
    other[0, :2] = torch.tensor(BT_ROWS[1])
    vars(bt).update(
        device=torch.device("cpu"),
        block_sizes=[16, 16],
        num_kv_cache_groups=2,
        cp_size=1,
        cp_rank=0,
        cp_interleave=1,
        _slot_mapping_enabled=[True, True],
        _sliding_window_reach=[0, 0],
        has_sliding_window_groups=False,
        _num_dirty_rows=0,
        dcp_sharded=torch.tensor([True, True]),
        block_tables=[types.SimpleNamespace(gpu=rows), types.SimpleNamespace(gpu=other)],
        input_block_tables=[torch.zeros_like(rows), torch.zeros_like(other)],
        num_blocks=types.SimpleNamespace(gpu=torch.tensor([[3, 0, 0], [2, 0, 0]], dtype=torch.int32)),
        slot_mappings=torch.zeros(2, 64, dtype=torch.int64),
    )
    return bt


def block_tables(seen: dict, level: str) -> None:
    bt = v2_block_tables()
    if attempt(seen, "bt_fill", bt.init_block_table_layout_tensors) is None and seen["bt_fill"] != "accepted":
        return
    seen["bt_dtypes"] = [str(bt.block_table_ptrs.dtype), str(bt.input_block_table_ptrs.dtype)]
    idx = torch.tensor([0], dtype=torch.int32)
    gathered = attempt(seen, "bt_gather", lambda: bt.gather_block_tables(idx, 1))
    seen["bt_gathered"] = [t[0].tolist() for t in gathered] if gathered is not None else None
    slots = attempt(
        seen,
        "bt_slots",
        lambda: bt.compute_slot_mappings(idx, torch.tensor([0, 3], dtype=torch.int32), torch.tensor([0, 1, 17]), 3),
    )
    seen["bt_slot_mappings"] = slots.tolist() if slots is not None else None
    pcp_tables(seen, bt, idx)
    good = bt.block_table_ptrs.clone()
    if level == "strict":  # fast does not read entries: launching this would be a wild read
        bt.block_table_ptrs[1] ^= 1 << 40
        attempt(
            seen,
            "bt_corrupted",
            lambda: bt.compute_slot_mappings(idx, torch.tensor([0, 3], dtype=torch.int32), torch.tensor([0, 1, 17]), 3),
        )
        bt.block_table_ptrs = good
    bt.input_block_table_ptrs = bt.input_block_table_ptrs.view(torch.int64)  # wrapped values, read as uint64
    attempt(seen, "bt_wrapped_dtype", lambda: bt.gather_block_tables(idx, 1))


def pcp_tables(seen: dict, bt, idx: torch.Tensor) -> None:
    """vLLM's ``PCPManager.set_block_tables`` builds its local tables' uint64 table; ``prepare_attn`` hands it to
    ``gather_block_tables`` as ``out_ptrs`` (called here as it does). Made without ``__init__`` (it sizes
    buffers from a parallel config), with the attributes ``set_block_tables`` reads."""
    from vllm.v1.worker.gpu.pcp_manager import PCPManager

    pcp = PCPManager.__new__(PCPManager)
    vars(pcp).update(device=torch.device("cpu"), pcp_world_size=2, _max_num_local_reqs=2 * REQS, _max_num_tokens=None)
    if attempt(seen, "pcp_fill", lambda: pcp.set_block_tables(bt)) is None and seen["pcp_fill"] != "accepted":
        return
    seen["pcp_dtype"] = str(pcp._local_block_table_ptrs.dtype)
    out = attempt(
        seen,
        "pcp_gather",
        lambda: bt.gather_block_tables(idx, 1, out=pcp._local_block_tables, out_ptrs=pcp._local_block_table_ptrs),
    )
    seen["pcp_gathered"] = [t[0].tolist() for t in out] if out is not None else None
    attempt(
        seen,
        "pcp_swapped",
        lambda: bt.gather_block_tables(  # another table's addresses as out_ptrs
            idx, 1, out=pcp._local_block_tables, out_ptrs=bt.input_block_table_ptrs
        ),
    )


def replayssm(seen: dict, level: str) -> None:
    """vLLM's ``ReplaySSMModelContext.create`` fills its int64 tables through ``_cuda_i64_ptrs`` (wrapped values);
    ``reset_new_slots`` runs vLLM's Triton kernel (interpreter), which moves ring cursors between slots."""
    from vllm.v1.kv_cache_interface import MambaSpec
    from vllm.v1.worker.replayssm_utils import ReplaySSMModelContext

    spec = MambaSpec(16, ((3, 8), (2, 4, 4)), (torch.float32, torch.float32), mamba_cache_mode="none")
    ring_start = torch.arange(10, 10 + BLOCKS, dtype=torch.int32)
    committed = torch.arange(20, 20 + BLOCKS, dtype=torch.int32)
    mixers = [
        types.SimpleNamespace(
            kv_cache=(
                torch.zeros(BLOCKS, 3, 8),
                torch.zeros(BLOCKS, 2, 4, 4),
                torch.zeros(BLOCKS, 2, 5, 4),
                torch.zeros(BLOCKS, 2, 5),
                torch.zeros(BLOCKS, 1, 5, 4),
            ),
            A=torch.zeros(2),
            replayssm_buffer_len=4,
            _replayssm_ring_start=ring_start,
            _replayssm_prev_num_accepted=committed,
        )
        for _ in range(2)
    ]
    table = torch.tensor([[1, 3, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.int32)
    ctx = attempt(seen, "rs_create", lambda: ReplaySSMModelContext.create([(mixers, spec, table)], REQS))
    if ctx is None:
        return
    seen["rs_dtype"] = str(ctx.block_table_ptrs.dtype)
    ints = lambda *v: torch.tensor(v, dtype=torch.int32)  # noqa: E731

    def reset() -> object:
        return ctx.reset_new_slots(idx_mapping=None, src_cols=ints(0, -1, -1), dst_cols=ints(1, -1, -1), num_reqs=1)

    attempt(seen, "rs_reset", reset)
    seen["rs_cursors"] = [int(ring_start[3]), int(committed[3])]  # slot 1's cursors copied to slot 3
    good = ctx.ring_start_ptrs.clone()
    if level == "strict":  # fast does not read entries: launching this would be a wild write
        ctx.ring_start_ptrs[0] ^= 1 << 40
        attempt(seen, "rs_corrupted", reset)
        ctx.ring_start_ptrs = good
    ctx.ring_start_ptrs = good.view(torch.uint64)  # raw in a table its kernel reads as int64
    attempt(seen, "rs_raw_dtype", reset)


def lora(seen: dict, level: str) -> None:
    """vLLM's cached LoRA pointer getters build uint64 tables of weight-stack addresses (more than one stack)."""
    from vllm.lora.ops.triton_ops import lora_shrink_op
    from vllm.lora.ops.triton_ops import utils as lu

    seen["lora_rebound"] = lora_shrink_op._get_lora_a_ptr is lu._get_lora_a_ptr  # imported by name: same guard
    cpu = torch.device("cpu")
    stacks = [torch.randn(2, 8, 4), torch.randn(2, 1, 8, 4)]  # a 3-D and a 4-D stack (squeezed by vLLM)
    got = attempt(seen, "lora_a", lambda: lu._get_lora_a_ptr(stacks, cpu))
    seen["lora_a_dtype"] = str(got[0].dtype) if got else None
    got_b = attempt(seen, "lora_b", lambda: lu._get_lora_b_ptr([torch.randn(2, 8, 4), torch.randn(2, 6, 4)], 0, cpu))
    seen["lora_b_dtype"] = str(got_b[1].dtype) if got_b else None
    if got and level == "strict":  # an entry of the cached table overwritten: the next launch's lookup refuses it
        got[0].view(torch.int64)[1] ^= 1 << 40
        attempt(seen, "lora_a_corrupted", lambda: lu._get_lora_a_ptr(stacks, cpu))


def main(argv: list[str]) -> int:
    level = argv[0]
    seen = start_guard(level, argv[1:])
    recoverssm(seen, level)
    zeroer(seen, level)
    block_tables(seen, level)
    replayssm(seen, level)
    lora(seen, level)
    emit(seen)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
