"""vLLM 0.34's FlashInfer ReplaySSM context: its int64 address tables (wrapped values), where filled and launched.

``ReplaySSMModelContext.create`` (``vllm.v1.worker.replayssm_utils``, absent from 0.33) fills ten
int64 tables through ``_cuda_i64_ptrs``, which writes wrapped values (``_reinterpret_u64_as_i64``):
``block_table_ptrs``, ``ring_start_ptrs``, ``num_committed_ptrs``, ``src_slots_ptrs``,
``dst_slots_ptrs`` and ``materialize_tables.{state,x_cache,dt_cache,B_cache,A}_ptrs``. The module's
``_cuda_i64_ptrs`` is replaced by a checked one (each entry round-trips to the tensor it was made
from; strict registers those tensors), and ``reset_new_slots``, ``postprocess`` and ``_materialize``
check the tables before their kernels run (fast: dtypes; strict: every entry, its source found again
from the context as ``create()`` chose it).
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any

from . import tables

MODULE = "vllm.v1.worker.replayssm_utils"
_RS = f"{MODULE} ReplaySSMModelContext"
LAUNCHES = ("reset_new_slots", "postprocess", "_materialize")
_RS_FIX = "Strict registers what _cuda_i64_ptrs is handed; register(tensor) any table filled another way"


def _rs_sources(ctx: Any) -> dict[str, list[Any]]:
    """Each int64 table of a ``ReplaySSMModelContext`` and the tensors ``create()`` fills it from."""
    offsets = [0]
    for count in tables.host_values(ctx.num_layers)[:-1]:
        offsets.append(offsets[-1] + count)
    mixers = list(ctx.mixers)
    heads = [mixers[i] for i in offsets]
    out: dict[str, list[Any]] = {
        "block_table_ptrs": list(ctx.block_tables),
        "ring_start_ptrs": [m._replayssm_ring_start for m in heads],
        "num_committed_ptrs": [m._replayssm_prev_num_accepted for m in heads],
        "src_slots_ptrs": [ctx.src_slots[i] for i in offsets],
        "dst_slots_ptrs": [ctx.dst_slots[i] for i in offsets],
    }
    for name, k in (("state_ptrs", 1), ("x_cache_ptrs", 2), ("dt_cache_ptrs", 3), ("B_cache_ptrs", 4)):
        out[f"materialize_tables.{name}"] = [m.kv_cache[k] for m in mixers]
    out["materialize_tables.A_ptrs"] = [m.A for m in mixers]
    return out


def _rs_table(ctx: Any, name: str) -> Any:
    owner, _, attr = name.rpartition(".")
    return getattr(getattr(ctx, owner) if owner else ctx, attr, None)


def check_replayssm(ctx: Any, level: str) -> None:
    """Validate a ``ReplaySSMModelContext``'s int64 address tables (wrapped values) at ``level``."""
    if level == "off":
        return
    if level != "strict":  # O(1): the dtypes
        for name in (*_RS_NAMES, *(f"materialize_tables.{n}" for n in _RS_MATERIALIZE)):
            table = _rs_table(ctx, name)
            if table is not None:
                tables.check_table(table, f"{_RS}.{name}", None, encoding=tables.WRAPPED, level=level)
        return
    try:
        sources = _rs_sources(ctx)
    except (AttributeError, IndexError, TypeError):  # not the layout this walk knows: the dtypes only
        check_replayssm(ctx, "fast")
        return
    for name, tensors in sources.items():
        tables.check_table(
            _rs_table(ctx, name),
            f"{_RS}.{name}",
            tables.targets_of(tensors, "source tensor"),
            encoding=tables.WRAPPED,
            level=level,
            remedy=_RS_FIX,
        )


_RS_NAMES = ("block_table_ptrs", "ring_start_ptrs", "num_committed_ptrs", "src_slots_ptrs", "dst_slots_ptrs")
_RS_MATERIALIZE = ("state_ptrs", "x_cache_ptrs", "dt_cache_ptrs", "B_cache_ptrs", "A_ptrs")


def patch(module: ModuleType, level: str) -> bool:
    build = getattr(module, "_cuda_i64_ptrs", None)
    context: Any = getattr(module, "ReplaySSMModelContext", None)
    if not inspect.isfunction(build) or context is None:
        return False

    def _cuda_i64_ptrs(tensors: list[Any]) -> Any:
        sources = list(tensors)
        if level == "strict":
            tables.register_tensors(sources, "vLLM ReplaySSM table source")
        table = build(sources)
        tables.check_table(
            table,
            f"{MODULE} _cuda_i64_ptrs (a ReplaySSMModelContext table)",
            tables.targets_of(sources, "source tensor"),
            encoding=tables.WRAPPED,
            level=level,
            remedy=_RS_FIX,
        )
        tables.to_real_table(table)
        return table

    functools.update_wrapper(_cuda_i64_ptrs, build)
    module._cuda_i64_ptrs = _cuda_i64_ptrs  # type: ignore[attr-defined]  # create() reads the module global
    for name in LAUNCHES if level == "strict" else ():  # fast adds nothing to the per-step path
        if inspect.isfunction(vars(context).get(name)):
            setattr(context, name, tables.checked_launch(vars(context)[name], check_replayssm, level))
    return True


__all__ = ["LAUNCHES", "MODULE", "check_replayssm", "patch"]
