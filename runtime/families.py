"""The vLLM address-table families ``install()`` guards beyond the Mamba copy paths, one patch each.

Each family names its vLLM module, its tables and their readers' encoding, and is patched where the
tables are filled and where a kernel is launched with them (``tables.check_table`` at the level).
A release without the module (vLLM 0.33 has no Kimi-K3 ``recoverssm``) skips the family and says so.

- ``vllm.models.kimi_k3.nvidia.ops.recoverssm``: ``KDARecoverSSMCommitContext``'s four base-address
  tables (``conv_state_base_addrs``, ``state_base_addrs``, ``correction_cache_base_addrs``,
  ``kg_cache_base_addrs``), int64 read as wrapped values by the commit kernels. vLLM 0.34's
  ``create()`` builds them with ``_base_addrs``, ``torch.tensor(raw addresses, dtype=torch.int64)``,
  which overflows for an address >= 2**63: the guard reports that as a ``PointerDtypeError`` naming
  the table, the entry, its tensor and the fix. Filled: ``create``; launched: ``commit``; strict
  registers the verify records ``KDARecoverSSMRecords.allocate`` makes (the states come from
  ``bind_kv_cache_to_layers``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from . import tables
from .errors import PointerDtypeError
from .fused import Target

_TOP = 1 << 63


@dataclass(frozen=True)
class Family:
    module: str  # the vLLM module that fills the tables
    what: str  # the tables, their dtype and encoding, as installed() names them
    patch: Callable[[ModuleType, str], str | None]  # applied to the loaded module; None: nothing to patch


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
        tables.check_table(getattr(ctx, table, None), _rssm_name(table), targets, encoding=tables.WRAPPED,
                           level=level, remedy="Bind the states through vLLM's bind_kv_cache_to_layers and allocate "
                           "the records through KDARecoverSSMRecords.allocate with the guard installed (strict), "
                           "or ptrlint.runtime.register(tensor) them")


def _patch_recoverssm(module: ModuleType, level: str) -> str | None:
    context: Any = getattr(module, "KDARecoverSSMCommitContext", None)
    if context is None or "create" not in vars(context):
        return None
    create = getattr(vars(context)["create"], "__func__", None)
    if create is None:
        return None

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
    if inspect.isfunction(commit):
        context.commit = _launch(commit, lambda ctx, at: check_recoverssm(ctx, at), level)
    records: Any = getattr(module, "KDARecoverSSMRecords", None)
    if level == "strict" and records is not None and "allocate" in vars(records):
        records.allocate = classmethod(_registering(vars(records)["allocate"].__func__))
    return "filled (KDARecoverSSMCommitContext.create) and launched (commit)"


def _registering(allocate: Callable[..., Any]) -> Callable[..., Any]:
    def allocate_registered(cls: Any, *args: Any, **kwargs: Any) -> Any:
        made = allocate(cls, *args, **kwargs)
        tables.register_tensors([getattr(made, "correction", None), getattr(made, "key_gate", None)],
                                "vLLM KDARecoverSSMRecords")
        return made

    functools.update_wrapper(allocate_registered, allocate)
    return allocate_registered


# ----- shared --------------------------------------------------------------------------------------
def _launch(original: Callable[..., Any], check: Callable[[Any, str], None], level: str) -> Callable[..., Any]:
    """Check the tables a launch method reads (strict: read back inside vLLM's gpu_sync_allowed), then run it."""

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = tables.launch_level(level)
        with tables.sync_context(at):
            check(self, at)
        return original(self, *args, **kwargs)

    functools.update_wrapper(launch, original)
    return launch


FAMILIES = (
    Family(RECOVERSSM, "KDARecoverSSMCommitContext.{conv_state,state,correction_cache,kg_cache}_base_addrs "
           "(int64, wrapped values)", _patch_recoverssm),
)


def install_families(level: str) -> list[str]:
    """Patch every family the installed release has (now, or when its module is imported); one line each."""
    lines = []
    for family in FAMILIES:
        head = f"{family.module} {family.what}"
        if not tables.release_has(family.module):
            lines.append(f"{head}: skipped, this vLLM release has no {family.module}")
            continue
        said: list[str] = []

        def patch(module: ModuleType, family: Family = family, said: list[str] = said) -> None:
            said.append(family.patch(module, level) or "")

        now = tables.when_imported(family.module, patch)
        if now and not said[0]:
            lines.append(f"{head}: skipped, {family.module} has none of these tables")
        elif now:
            lines.append(f"{head}: checked at {level} where {said[0]}")
        else:
            lines.append(f"{head}: checked at {level} where filled and launched, patched when {family.module} "
                         "is imported")
    return lines


__all__ = ["FAMILIES", "RECOVERSSM", "Family", "check_recoverssm", "install_families"]
