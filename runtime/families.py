"""The vLLM address-table families ``install()`` guards beyond the Mamba copy paths, one patch each.

Each family names its vLLM module, its tables and their readers' encoding, and is patched where the
tables are filled (``tables.check_table`` at the level) and, at "strict", where a kernel is launched
with them: "fast" adds nothing to the per-step paths.
A release without the module skips the family and says so (never an error).

- ``vllm.models.kimi_k3.nvidia.ops.recoverssm``: ``KDARecoverSSMCommitContext``'s four base-address
  tables (``conv_state_base_addrs``, ``state_base_addrs``, ``correction_cache_base_addrs``,
  ``kg_cache_base_addrs``), int64 read as wrapped values by the commit kernels. vLLM 0.34's
  ``create()`` builds them with ``_base_addrs``, ``torch.tensor(raw addresses, dtype=torch.int64)``,
  which overflows for an address >= 2**63: the guard reports that as a ``PointerDtypeError`` naming
  the table, the entry, its tensor and the fix. Filled: ``create``; launched: ``commit``; strict
  registers the verify records ``KDARecoverSSMRecords.allocate`` makes (the states come from
  ``bind_kv_cache_to_layers``). vLLM 0.33 ships the same tables.
- ``vllm.v1.worker.utils``: ``KVBlockZeroer``'s ``seg_addrs`` (uint64, raw addresses), one entry per
  KV-cache segment the zeroing kernel writes block by block. Filled: ``__init__`` (strict: each entry
  lies in a KV-cache tensor of the forward context it was built from, and its reach, every block's
  page, inside one registered region); launched: ``zero_block_ids`` (strict: also every block id is
  below the block count).
- ``vllm.v1.worker.gpu.block_table`` and ``vllm.v1.worker.gpu.pcp_manager``: see ``block_tables.py``.
- ``vllm.lora.ops.triton_ops.utils`` (``lora_tables.py``): the uint64 ``lora_ptr_tensor`` that the cached getters
  ``_get_lora_a_ptr`` / ``_get_lora_b_ptr`` build over several weight stacks. Each LoRA kernel gets its
  table from them just before it launches: fast checks a table when it is built, strict on every call
  (a stale or overwritten cached entry is refused) and registers the stacks a new table points at.
- ``vllm.v1.worker.replayssm_utils``: see ``replayssm.py``.
- ``vllm.v1.worker.gpu.model_states.prompt_embeds``: see ``prompt_embeds.py``.
- ``vllm.v1.kv_offload.cpu.gpu_worker`` and the encoder-cache connector's CPU worker
  (``vllm.distributed.ec_transfer.ec_connector.cpu.worker`` and its ``descriptor_buffers``): the batched-copy
  descriptor pools, see ``descriptors.py``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import block_tables, descriptors, lora_tables, prompt_embeds, replayssm, tables
from ._torch import torch
from .errors import PointerBoundsError, PointerDtypeError, PointerRoundTripError
from .fused import Target

_TOP = 1 << 63


@dataclass(frozen=True)
class Family:
    module: str  # the vLLM module that fills the tables
    what: str  # the tables, their dtype and encoding, as installed() names them
    filled: str  # where they are filled
    launched: str  # where a kernel is launched with them: checked at strict only (fast costs nothing per step)
    patch: Callable[[ModuleType, str], bool]  # applied to the loaded module; False: nothing to patch
    launch_is_fill: bool = False  # the filling function is called before every launch (LoRA's cached getters)


# ----- Kimi-K3 RecoverSSM commit context ----------------------------------------------------------
RECOVERSSM = "vllm.models.kimi_k3.nvidia.ops.recoverssm"
_RSSM_TABLES = {  # table -> (the context's tuple of source tensors, what each is)
    "conv_state_base_addrs": ("conv_states", "conv state"),
    "state_base_addrs": ("checkpoints", "state checkpoint"),
    "correction_cache_base_addrs": ("correction_caches", "verify correction record"),
    "kg_cache_base_addrs": ("kg_caches", "verify key/gate record"),
}
_RSSM_FIX = (
    "Fix it in vLLM: build the table from uint64 storage viewed as int64, "
    "torch.tensor(addrs, dtype=torch.uint64).view(torch.int64) (the kernel reads the 64 bits; .to(torch.int64) "
    "would not do), or store wrapped values (addr - 2**64 for addr >= 2**63, as vLLM's _reinterpret_u64_as_i64 "
    "does for the Mamba tables)"
)


def _rssm_name(table: str) -> str:
    return f"{RECOVERSSM} KDARecoverSSMCommitContext.{table}"


def _rssm_sources(layers: Sequence[Any]) -> dict[str, list[Any]]:
    """The tensors create() tables, per table, read from the layers as vLLM's create() reads them."""
    return {
        "conv_state_base_addrs": [layer.kv_cache[0] for layer in layers],
        "state_base_addrs": [layer.kv_cache[1] for layer in layers],
        "correction_cache_base_addrs": [layer.recoverssm_records.correction for layer in layers],
        "kg_cache_base_addrs": [layer.recoverssm_records.key_gate for layer in layers],
    }


def _rssm_overflow(layers: Sequence[Any]) -> str | None:
    """The first entry create()'s int64 ``_base_addrs`` cannot hold, described; None when there is none."""
    try:
        sources = _rssm_sources(layers)
    except (AttributeError, IndexError, TypeError):
        return None
    for table, tensors in sources.items():
        for i, tensor in enumerate(tensors):
            addr = int(tensor.data_ptr())
            if addr >= _TOP:
                what = _RSSM_TABLES[table][1]
                return (
                    f"entry {i} of {_rssm_name(table)}: address {addr:#x} (layer {i}'s {what}, "
                    f"{tables.nbytes_of(tensor)} bytes) is >= 2**63 and cannot be stored: "
                    "KDARecoverSSMCommitContext.create builds the table with _base_addrs, "
                    "torch.tensor([t.data_ptr() ...], dtype=torch.int64), from raw addresses, which overflows on a "
                    "host that hands out high addresses (Intel XPU, some ROCm or unified-memory hosts). " + _RSSM_FIX
                )
    return None


def _rssm_targets(ctx: Any) -> dict[str, list[Target] | None]:
    out: dict[str, list[Target] | None] = {}
    for table, (field, what) in _RSSM_TABLES.items():
        sources = getattr(ctx, field, None)
        out[table] = tables.targets_of(list(sources), f"{what} of layer") if sources is not None else None
    return out


def check_recoverssm(ctx: Any, level: str) -> None:
    """Validate a ``KDARecoverSSMCommitContext``'s base-address tables at ``level``."""
    for table, targets in _rssm_targets(ctx).items():
        tables.check_table(
            getattr(ctx, table, None),
            _rssm_name(table),
            targets,
            encoding=tables.WRAPPED,
            level=level,
            remedy="Bind the states through vLLM's bind_kv_cache_to_layers and allocate "
            "the records through KDARecoverSSMRecords.allocate with the guard installed (strict), "
            "or ptrlint.runtime.register(tensor) them",
        )


def _patch_recoverssm(module: ModuleType, level: str) -> bool:
    context: Any = getattr(module, "KDARecoverSSMCommitContext", None)
    if context is None or "create" not in vars(context):
        return False
    create = getattr(vars(context)["create"], "__func__", None)
    if create is None:
        return False

    def guarded_create(cls: Any, layers: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        layers = list(layers)
        try:
            ctx = create(cls, layers, *args, **kwargs)
        except (OverflowError, ValueError, RuntimeError) as exc:
            report = _rssm_overflow(layers)
            if report is None:
                raise
            raise PointerDtypeError(report) from exc
        check_recoverssm(ctx, level)
        for table in _RSSM_TABLES:
            tables.to_real_table(getattr(ctx, table, None))
        return ctx

    functools.update_wrapper(guarded_create, create)
    context.create = classmethod(guarded_create)
    commit = vars(context).get("commit")
    if inspect.isfunction(commit) and level == "strict":  # fast adds nothing to the per-step path
        context.commit = tables.checked_launch(commit, lambda ctx, at: check_recoverssm(ctx, at), level)
    records: Any = getattr(module, "KDARecoverSSMRecords", None)
    if level == "strict" and records is not None and "allocate" in vars(records):
        records.allocate = classmethod(_registering(vars(records)["allocate"].__func__))
    return True


def _registering(allocate: Callable[..., Any]) -> Callable[..., Any]:
    def allocate_registered(cls: Any, *args: Any, **kwargs: Any) -> Any:
        made = allocate(cls, *args, **kwargs)
        tables.register_tensors(
            [getattr(made, "correction", None), getattr(made, "key_gate", None)], "vLLM KDARecoverSSMRecords"
        )
        return made

    functools.update_wrapper(allocate_registered, allocate)
    return allocate_registered


# ----- the KV block zeroer -------------------------------------------------------------------------
WORKER_UTILS = "vllm.v1.worker.utils"
_SEG = f"{WORKER_UTILS} KVBlockZeroer.seg_addrs"
_SEG_FIX = (
    "Bind the KV caches through vLLM's bind_kv_cache_to_layers with the guard installed (strict), or "
    "ptrlint.runtime.register(tensor) them; an entry whose blocks run past its allocation has a wrong "
    "block stride or page size"
)
_ZEROER = "_ptrlint_zeroer"  # set on a checked zeroer: (targets, num_blocks)


def _kv_storages(forward_context: Any) -> list[tuple[int, int, str]]:
    """(start, nbytes, layer) of each tensor KV cache's allocation, as this process reports addresses."""
    out = []
    for name, layer in dict(forward_context or {}).items():
        kv = getattr(layer, "kv_cache", None)
        if isinstance(kv, torch.Tensor) and kv.numel():
            storage = kv.untyped_storage()
            out.append((int(storage.data_ptr()), int(storage.nbytes()), str(name)))
    return out


def _zeroer_targets(zeroer: Any, forward_context: Any, num_blocks: int) -> list[Target] | None:
    """Per segment: the bytes the kernel can write from it (every block), in the KV cache it came from."""
    meta = getattr(zeroer, "_meta", None)
    if meta is None:
        return None
    seg_addrs, strides, pages = (tables.host_values(t) for t in meta[:3])
    storages = _kv_storages(forward_context)
    targets = []
    for i, (addr, stride, page) in enumerate(zip(seg_addrs, strides, pages)):
        owner = next((name for start, nbytes, name in storages if start <= addr < start + nbytes), None)
        if owner is None:
            raise PointerRoundTripError(
                f"entry {i} of {_SEG}: address {addr:#x} lies in no KV cache tensor of the forward context it was "
                "built from: the address was truncated or sign-mangled on its way into the table"
            )
        reach = ((max(num_blocks, 1) - 1) * stride + page) * 4  # int32 elements: every block's page
        targets.append(tables.reach_target(addr, reach, f"{owner}'s KV cache segment, {num_blocks} blocks"))
    return targets


def _check_zeroer(zeroer: Any, level: str, block_ids: Sequence[int] = ()) -> None:
    meta = getattr(zeroer, "_meta", None)
    if meta is None or level == "off":
        return
    targets, num_blocks = getattr(zeroer, _ZEROER, (None, 0))
    tables.check_table(
        meta[0], _SEG, targets if level == "strict" else None, encoding=tables.RAW, level=level, remedy=_SEG_FIX
    )
    if level == "strict" and block_ids and not all(0 <= int(b) < num_blocks for b in block_ids):
        bad = next(int(b) for b in block_ids if not 0 <= int(b) < num_blocks)
        raise PointerBoundsError(
            f"{_SEG}: block id {bad} is outside [0, {num_blocks}): the zeroing kernel would "
            "write past every segment's KV cache; the scheduler handed out a block that "
            "does not exist"
        )


def _patch_zeroer(module: ModuleType, level: str) -> bool:
    zeroer: Any = getattr(module, "KVBlockZeroer", None)
    if zeroer is None or not inspect.isfunction(vars(zeroer).get("__init__")):
        return False
    init = vars(zeroer)["__init__"]
    signature = inspect.signature(init)

    def guarded_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        bound = signature.bind_partial(self, *args, **kwargs).arguments
        num_blocks = int(bound.get("num_blocks") or 0)
        if level == "strict":
            setattr(self, _ZEROER, (_zeroer_targets(self, bound.get("static_forward_context"), num_blocks), num_blocks))
        _check_zeroer(self, level)
        meta = getattr(self, "_meta", None)
        if meta is not None:
            tables.to_real_table(meta[0])

    functools.update_wrapper(guarded_init, init)
    zeroer.__init__ = guarded_init
    zero = vars(zeroer).get("zero_block_ids")
    if inspect.isfunction(zero) and level == "strict":
        zeroer.zero_block_ids = tables.checked_launch(zero, _check_zeroer, level, with_args=True)
    return True


# ----- LoRA kernels' weight pointer tables ----------------------------------------------------------
# ----- shared --------------------------------------------------------------------------------------
FAMILIES = (
    Family(
        RECOVERSSM,
        "KDARecoverSSMCommitContext.{conv_state,state,correction_cache,kg_cache}_base_addrs (int64, wrapped values)",
        "KDARecoverSSMCommitContext.create",
        "commit",
        _patch_recoverssm,
    ),
    Family(
        WORKER_UTILS,
        "KVBlockZeroer.seg_addrs (uint64, raw addresses)",
        "KVBlockZeroer.__init__",
        "zero_block_ids",
        _patch_zeroer,
    ),
    Family(
        block_tables.BLOCK_TABLE,
        "BlockTables.{block_table_ptrs,input_block_table_ptrs} (uint64, raw addresses)",
        "BlockTables._make_ptr_tensor",
        ", ".join(block_tables.BT_LAUNCHES),
        block_tables.patch_block_tables,
    ),
    Family(
        block_tables.PCP,
        "PCPManager._local_block_table_ptrs (uint64, raw addresses)",
        "PCPManager.set_block_tables",
        "through BlockTables.gather_block_tables",
        block_tables.patch_pcp,
    ),
    Family(
        lora_tables.MODULE,
        "_get_lora_a_ptr / _get_lora_b_ptr lora_ptr_tensor (uint64, raw addresses)",
        "the getters, when they build a table",
        "the same getters: every LoRA shrink/expand kernel takes its table from them; strict checks every call",
        lora_tables.patch,
        launch_is_fill=True,
    ),
    Family(
        replayssm.MODULE,
        "ReplaySSMModelContext.{block_table,ring_start,num_committed,src_slots,dst_slots}_ptrs and "
        "materialize_tables.{state,x_cache,dt_cache,B_cache,A}_ptrs (int64, wrapped values)",
        "_cuda_i64_ptrs, through ReplaySSMModelContext.create",
        ", ".join(replayssm.LAUNCHES),
        replayssm.patch,
    ),
    Family(
        prompt_embeds.MODULE,
        "PromptEmbedsState.{embeds_ptrs,mask_ptrs} (uint64, raw addresses)",
        "PromptEmbedsState.__init__ and add_request",
        "apply",
        prompt_embeds.patch,
    ),
    Family(
        descriptors.KV_OFFLOAD,
        "_new_descriptor_buffers src/dst pointer tables (uint64 on XPU, raw addresses; int64 elsewhere, "
        "each address's bits)",
        "_new_descriptor_buffers",
        "the swap_blocks_batch _select_swap_blocks_fn picks",
        descriptors.patch_kv_offload,
    ),
    Family(
        descriptors.EC_BUFFERS,
        "DescriptorBuffers.{src_ptrs,dst_ptrs} (uint64 on XPU, raw addresses; int64 elsewhere, each address's bits)",
        "DescriptorBufferPool.acquire and DescriptorBuffers.add_copies",
        "through the connector worker's swap_blocks_batch",
        descriptors.patch_ec_buffers,
    ),
    Family(
        descriptors.EC_WORKER,
        "ECCPUWorker's swap_blocks_batch of the DescriptorBuffers tables",
        "DescriptorBuffers.add_copies, through ECCPUWorker.save_caches and the loads",
        "swap_blocks_batch",
        descriptors.patch_ec_worker,
    ),
)


def install_families(level: str) -> list[str]:
    """Patch every family the installed release has (now, or when its module is imported); one line each."""
    lines = []
    for family in FAMILIES:
        head = f"{family.module} {family.what}"
        if not tables.release_has(family.module):
            lines.append(f"{head}: skipped, this vLLM release has no {family.module}")
            continue
        said: list[bool] = []

        def patch(module: ModuleType, family: Family = family, said: list[bool] = said) -> None:
            said.append(family.patch(module, level))

        now = tables.when_imported(family.module, patch)
        if now and not said[0]:
            lines.append(f"{head}: skipped, this release's {family.module} has none of these tables")
        else:
            later = "" if now else f" (patched when {family.module} is imported)"
            lines.append(
                f"{head}: checked at {level} where filled ({family.filled})"
                + (
                    f" and launched ({family.launched})"
                    if level == "strict" or family.launch_is_fill
                    else f"; at strict also where launched ({family.launched})"
                )
                + later
            )
    return lines


__all__ = ["FAMILIES", "RECOVERSSM", "Family", "check_recoverssm", "install_families"]
