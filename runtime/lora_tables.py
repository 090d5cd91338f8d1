"""vLLM's LoRA kernels' weight-pointer tables: the uint64 ``lora_ptr_tensor`` that the cached getters
``_get_lora_a_ptr`` / ``_get_lora_b_ptr`` of ``vllm.lora.ops.triton_ops.utils`` build over several weight
stacks (raw addresses). Each LoRA kernel takes its table from a getter just before it launches, so the
getter is both where the table is filled and where it is launched: fast checks a table when it is built,
strict on every call and registers the stacks a new table points at. One family of ``families.py``."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import tables

MODULE = "vllm.lora.ops.triton_ops.utils"
_LORA_FIX = (
    "Strict registers the weight stacks a getter builds a table for; register(tensor) a stack a table "
    "was built for before the guard was installed"
)


def _lora_weights(weights: Any) -> list[Any]:
    """The weight tensors as vLLM tables them (a 4-D stack squeezed to 3-D: the same address)."""
    return [w.squeeze(dim=1) if getattr(w, "ndim", 0) == 4 else w for w in weights]


def _lora_getter(
    original: Callable[..., Any], table_at: int, cache: dict[Any, Any], name: str, level: str
) -> Callable[..., Any]:
    """vLLM's cached getter, with the uint64 table it returns checked: once when built (fast), on every call
    (strict: each launch of a LoRA kernel gets its table from here, so a stale or overwritten entry is caught)."""

    def get(lora_weights: Any, *args: Any, **kwargs: Any) -> Any:
        weights = list(lora_weights)
        known = len(cache)
        result = original(weights, *args, **kwargs)
        if len(weights) > 1 and (level == "strict" or len(cache) != known):
            table, stacks = result[table_at], _lora_weights(weights)
            if level == "strict" and len(cache) != known:  # the stacks the new table points at
                tables.register_tensors(stacks, "vLLM LoRA weight stack")
            tables.check_table(
                table,
                name,
                tables.targets_of(stacks, "LoRA weight stack"),
                encoding=tables.RAW,
                level=level,
                remedy=_LORA_FIX,
            )
            if len(cache) != known:
                tables.to_real_table(table)
        return result

    functools.update_wrapper(get, original)
    return get


def patch(module: ModuleType, level: str) -> bool:
    done = False
    for getter, table_at, cache in (
        ("_get_lora_a_ptr", 0, "_LORA_A_PTR_DICT"),
        ("_get_lora_b_ptr", 1, "_LORA_B_PTR_DICT"),
    ):
        original, found = getattr(module, getter, None), getattr(module, cache, None)
        if not inspect.isfunction(original) or not isinstance(found, dict):
            continue
        guarded = _lora_getter(original, table_at, found, f"{MODULE} {getter} (the lora_ptr_tensor it returns)", level)
        setattr(module, getter, guarded)
        for loaded in [m for n, m in list(sys.modules.items()) if n.startswith("vllm.lora.") and m is not None]:
            if getattr(loaded, getter, None) is original:  # the ops that imported it by name before the patch
                setattr(loaded, getter, guarded)
        done = True
    return done


__all__ = ["MODULE", "patch"]
