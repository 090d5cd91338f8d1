"""Opt-in patch of a running vLLM worker: uint64 Mamba copy buffers and a guarded batched copy."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
from typing import Any

from .copy import batch_memcpy
from .guard import guard_level
from .mamba import _create, collect_mamba_copy_meta, do_mamba_copy_block

logger = logging.getLogger("ptrlint.runtime")
_MODULE = "vllm.v1.worker.mamba_utils"
_MARK = "_ptrlint_guard_installed"


_KNOWN_FIELDS = frozenset({"src_ptrs", "dst_ptrs", "sizes", "mamba_group_ids", "mamba_spec", "offset"})


def _field_names(cls: Any) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else frozenset()


def install(check: str | None = None) -> bool:
    """Swap vLLM's ``MambaCopyBuffers.create`` and batched copy for the guarded ones.

    Returns True when vLLM's Mamba utilities were found and are (now) patched, False when vLLM
    is not importable. Idempotent: a second call changes nothing.
    """
    level = guard_level(check)
    try:
        module = importlib.import_module(_MODULE)
    except ImportError:
        return False
    if getattr(module, _MARK, None):
        return True
    patched: list[str] = []
    buffers_cls = getattr(module, "MambaCopyBuffers", None)
    # Only a layout we know: newer vLLM versions restructured these buffers (and already use uint64).
    compatible = buffers_cls is not None and _field_names(buffers_cls) == _KNOWN_FIELDS
    if compatible:
        buffers_cls.create = classmethod(_create)
        patched.append("MambaCopyBuffers.create (uint64 pointer buffers)")
    if hasattr(module, "batch_memcpy"):
        original = module.batch_memcpy

        def guarded_batch_memcpy(src_ptrs: Any, dst_ptrs: Any, sizes: Any, *args: Any, **kwargs: Any) -> None:
            batch_memcpy(src_ptrs, dst_ptrs, sizes, check=level)

        guarded_batch_memcpy.__wrapped__ = original  # type: ignore[attr-defined]
        module.batch_memcpy = guarded_batch_memcpy
        patched.append(f"batch_memcpy (guard {level})")
    if compatible and hasattr(module, "collect_mamba_copy_meta"):
        module.collect_mamba_copy_meta = collect_mamba_copy_meta
        patched.append("collect_mamba_copy_meta (read-back stores)")
    if compatible and hasattr(module, "do_mamba_copy_block"):
        module.do_mamba_copy_block = lambda copy_bufs: do_mamba_copy_block(copy_bufs, check=level)
        patched.append("do_mamba_copy_block")
    setattr(module, _MARK, True)
    logger.info("ptrlint runtime guard installed in %s: %s", _MODULE, ", ".join(patched) or "nothing to patch")
    return True


def plugin() -> None:
    """``vllm.general_plugins`` entry point: install the guard when $PTRLINT_GUARD is fast or strict.

    vLLM calls general plugins in every process (possibly more than once); install() is
    idempotent and logs what it patched once.
    """
    level = os.environ.get("PTRLINT_GUARD", "").strip().lower()
    if level in ("fast", "strict"):
        install(check=level)
