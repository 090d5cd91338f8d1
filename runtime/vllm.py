"""Opt-in guard for a running vLLM worker: checked pointer tables on every Mamba copy path.

``install()`` inspects what it patches and does the least that makes it safe:

- ``MambaCopyBuffers.create``: where vLLM already allocates uint64 pointer buffers (vLLM 0.33),
  vLLM's own ``create()`` is kept and only its result is checked (O(1)); where it does not (the
  older, signed layout), it is replaced by ours, with ``collect_mamba_copy_meta`` (stores read
  back through the numpy views).
- ``batch_memcpy`` (the prefix-cache copy, also called by the start-up warm-up): the tables are
  checked at the chosen level, then vLLM's own ``batch_memcpy`` runs, so vLLM's kernel (with its
  overlap barrier) or the platform's override (CPU: ``cpu_triton_utils._batch_memcpy_impl``)
  moves the bytes. ``do_mamba_copy_block`` hands the host views to the strict checks, so strict
  mode costs no device-to-host copy there.
- ``MambaSpecDecodeGPUContext`` (vLLM 0.33 and 0.34: the fused spec-decode and align kernels'
  int64 address tables ``state_base_addrs``, ``block_table_ptrs``, ``aligned_index_block_table_ptrs``):
  checked where they are filled, right after ``_populate_metadata`` (the one writer, through
  ``initialize_from_forward_context``), and where they are launched: every context method that
  hands a table to a kernel (found in its source: ``run_fused_precopy``,
  ``run_fused_postprocess[_align]``, ``compute_aligned_state_indices``) checks the tables it
  passes first. "fast": dtype and length; "strict" (``fused.py``): each entry equals, read as
  uint64, the address of the tensor it was filled from, whose whole span lies in one registered
  region, and no two states of one layer share a byte within a block.
- Strict mode that starts: ``bind_kv_cache_to_layers`` (where V1, V2 and 0.34's CPU runner bind
  their caches) registers every KV-cache and state tensor it binds; the block tables handed to
  ``_populate_metadata`` are registered there; the warm-up copy between two scratch tensors it
  allocates itself (0.33) runs at "fast" at most.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from . import families, fused
from ._torch import torch
from .copy import check_tables
from .guard import assert_pointer_buffer, guard_level
from .mamba import _create, collect_mamba_copy_meta, do_mamba_copy_block
from .regions import default_regions
from .simulate import active as simulating
from .simulate import to_real_tensor

logger = logging.getLogger("ptrlint.runtime")
_MODULE = "vllm.v1.worker.mamba_utils"
_WORKER_UTILS = "vllm.v1.worker.utils"
_WARMUP = "vllm.model_executor.warmup.mamba_triton_warmup"
_MARK = "_ptrlint_guard_installed"

_KNOWN_FIELDS = frozenset({"src_ptrs", "dst_ptrs", "sizes", "mamba_group_ids", "mamba_spec", "offset"})
_local = threading.local()  # .warmup: inside vLLM's warm-up copy


def _field_names(cls: Any) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else frozenset()


def create_layout(buffers_cls: Any) -> str:
    """How vLLM's ``MambaCopyBuffers.create`` allocates pointer buffers: "uint64", "signed" or "unknown".

    Read from its source: vLLM 0.33 passes ``dtype=torch.uint64``; the older layout passed int64.
    """
    create = getattr(buffers_cls, "create", None)
    try:
        source = inspect.getsource(create)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return "unknown"
    return "uint64" if "uint64" in source else "signed"


def _level(level: str) -> str:
    return "fast" if level == "strict" and getattr(_local, "warmup", False) else level


def _make_guarded_copy(original: Callable[..., Any], level: str) -> Callable[..., Any]:
    def batch_memcpy(
        src_ptrs: Any,
        dst_ptrs: Any,
        sizes: Any,
        *args: Any,
        host_views: tuple[Any, Any, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        check_tables(src_ptrs, dst_ptrs, sizes, level=_level(level), host_views=host_views)
        if simulating():  # vLLM's kernel dereferences what it is given: hand it real addresses
            src_ptrs, dst_ptrs = to_real_tensor(src_ptrs), to_real_tensor(dst_ptrs)
        return original(src_ptrs, dst_ptrs, sizes, *args, **kwargs)

    functools.update_wrapper(batch_memcpy, original)
    return batch_memcpy


def _make_do_copy(module: Any) -> Callable[[Any], None]:
    def do_mamba_copy_block(copy_bufs: Any) -> None:
        n = copy_bufs.offset
        if n == 0:
            return
        host = (copy_bufs.src_ptrs.np[:n], copy_bufs.dst_ptrs.np[:n], copy_bufs.sizes.np[:n])
        module.batch_memcpy(
            copy_bufs.src_ptrs.copy_to_gpu(n),
            copy_bufs.dst_ptrs.copy_to_gpu(n),
            copy_bufs.sizes.copy_to_gpu(n),
            host_views=host,
        )

    return do_mamba_copy_block


def _make_checked_create(original: Any) -> Any:
    """Keep vLLM's create(); check (O(1)) that what it built holds uint64 pointers."""
    function = getattr(original, "__func__", original)  # a classmethod's function, or a plain one

    def create(cls: Any, *args: Any, **kwargs: Any) -> Any:
        buffers = function(cls, *args, **kwargs)
        assert_pointer_buffer(buffers.src_ptrs, "MambaCopyBuffers.src_ptrs")
        assert_pointer_buffer(buffers.dst_ptrs, "MambaCopyBuffers.dst_ptrs")
        return buffers

    functools.update_wrapper(create, function)
    return classmethod(create)


def _tensors(value: Any) -> Iterable[Any]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def register_caches(kv_caches: Any, label: str = "vLLM KV cache") -> int:
    """Register every tensor of a ``{layer_name: tensor | [tensors]}`` mapping; returns how many."""
    regions = default_regions()
    count = 0
    for name, value in dict(kv_caches).items():
        for tensor in _tensors(value):
            if tensor.numel():
                regions.add(tensor, f"{label} {name}")
                count += 1
    return count


def _make_bind(original: Callable[..., Any]) -> Callable[..., Any]:
    def bind_kv_cache_to_layers(kv_caches: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(kv_caches, *args, **kwargs)
        count = register_caches(kv_caches)
        logger.debug("ptrlint: registered %d KV-cache tensors for strict copies", count)
        return result

    functools.update_wrapper(bind_kv_cache_to_layers, original)
    bind_kv_cache_to_layers._ptrlint_original = original  # type: ignore[attr-defined]
    return bind_kv_cache_to_layers


def check_fused_tables(ctx: Any, level: str) -> None:
    """Validate the address tables of a ``MambaSpecDecodeGPUContext`` at ``level`` (see ``fused.py``)."""
    fused.check_context(ctx, level)


def _make_populate(module: Any, original: Callable[..., Any], level: str) -> Callable[..., Any]:
    signature = inspect.signature(original)

    def _populate_metadata(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(self, *args, **kwargs).arguments
        block_tables = list(bound.get("block_tables") or ())
        aligned = list(bound.get("aligned_index_block_tables") or block_tables)
        if level == "strict":  # the tables the kernels index: the caller hands them over here
            _register_block_tables([*block_tables, *aligned])
        result = original(self, *args, **kwargs)
        states = fused.state_targets(
            module,
            self,
            bound.get("kv_cache_config"),
            bound.get("forward_context") or {},
            bound.get("mamba_state_copy_funcs"),
        )
        fused.record_targets(
            self,
            {
                "state_base_addrs": states,
                "block_table_ptrs": fused.block_table_targets(block_tables, "block table"),
                "aligned_index_block_table_ptrs": fused.block_table_targets(aligned, "aligned-index block table"),
            },
        )
        fused.check_context(self, level, overlaps=True)
        if simulating():  # checked as written (shifted); the fused kernels dereference real ones
            fused.to_real_tables(self)
        return result

    functools.update_wrapper(_populate_metadata, original)
    return _populate_metadata


_UNREGISTERED: set[str] = set()  # the block-table types said once not to be registrable


def _register_block_tables(tables: list[Any]) -> None:
    """Register the block tables that are tensors; say once per type which could not be (vLLM accepts
    any object with ``data_ptr()`` and ``stride()``: its entries are then checked for their round trip
    only, not against the registered regions)."""
    regions = default_regions()
    for i, table in enumerate(tables):
        if fused.is_tensor(table):
            if table.numel():
                regions.add(table, f"vLLM Mamba block table {i}")
            continue
        kind = type(table).__name__
        if kind not in _UNREGISTERED:
            _UNREGISTERED.add(kind)
            logger.warning(
                "ptrlint: cannot register a %s block table (not a tensor): strict checks its entries "
                "for the address they were filled from, not for the memory they point into",
                kind,
            )


def _make_warmup(original: Callable[..., Any]) -> Callable[..., Any]:
    def warm(*args: Any, **kwargs: Any) -> Any:
        _local.warmup = True  # copies between two scratch tensors it allocates itself
        try:
            return original(*args, **kwargs)
        finally:
            _local.warmup = False

    functools.update_wrapper(warm, original)
    return warm


def install(check: str | None = None) -> bool:
    """Guard vLLM's Mamba copy paths (see the module docstring); log what was patched.

    Returns True when vLLM's Mamba utilities were found and are (now) patched, False when vLLM
    is not importable. Idempotent: a second call changes nothing.
    """
    level = guard_level(check)
    try:
        module: Any = importlib.import_module(_MODULE)  # vLLM's module: its attributes are read and patched
    except ImportError:
        return False
    if getattr(module, _MARK, None):
        return True
    patched: list[str] = []
    buffers_cls = getattr(module, "MambaCopyBuffers", None)
    layout = create_layout(buffers_cls) if buffers_cls is not None else "absent"
    if buffers_cls is not None and layout == "signed" and _field_names(buffers_cls) == _KNOWN_FIELDS:
        buffers_cls.create = classmethod(_create)
        patched.append("MambaCopyBuffers.create replaced (vLLM's allocated signed pointer buffers; now uint64)")
        if hasattr(module, "collect_mamba_copy_meta"):
            module.collect_mamba_copy_meta = collect_mamba_copy_meta
            patched.append("collect_mamba_copy_meta (read-back stores)")
    elif buffers_cls is not None and layout in ("uint64", "unknown"):
        buffers_cls.create = _make_checked_create(buffers_cls.__dict__["create"])
        patched.append("MambaCopyBuffers.create kept (vLLM allocates uint64), result checked")
    elif buffers_cls is not None:
        patched.append("MambaCopyBuffers left alone (unknown field layout)")
    if hasattr(module, "batch_memcpy"):
        module.batch_memcpy = _make_guarded_copy(module.batch_memcpy, level)
        patched.append(f"batch_memcpy (tables checked at {level}, then vLLM's kernel or platform override)")
        if hasattr(module, "do_mamba_copy_block"):
            module.do_mamba_copy_block = _make_do_copy(module)
            patched.append("do_mamba_copy_block (host views for the checks)")
    elif hasattr(module, "do_mamba_copy_block"):  # a layout without a module-level batch_memcpy
        module.do_mamba_copy_block = lambda copy_bufs: do_mamba_copy_block(copy_bufs, check=level)
        patched.append("do_mamba_copy_block (ptrlint's batched copy)")
    patched += _install_fused(module, level)
    patched += families.install_families(level)
    if level == "strict":
        patched += _install_registration()
    setattr(module, _MARK, tuple(patched))
    logger.info("ptrlint runtime guard installed in %s: %s", _MODULE, "; ".join(patched) or "nothing to patch")
    return True


def _sync_allowed() -> Callable[[], Any] | None:
    """vLLM's own permission to synchronise (0.34: strict launch checks read small tables to the host)."""
    try:
        allowed: Callable[[], Any] = importlib.import_module("vllm.utils.gpu_sync_debug").gpu_sync_allowed
        return allowed
    except (ImportError, AttributeError):
        return None


def _install_fused(module: Any, level: str) -> list[str]:
    context = getattr(module, "MambaSpecDecodeGPUContext", None)
    if context is None or not hasattr(context, "_populate_metadata"):
        return []
    sites = {name: tables for name, tables in fused.launch_sites(context).items() if name != "_populate_metadata"}
    context._populate_metadata = _make_populate(module, context._populate_metadata, level)
    sync_allowed = _sync_allowed()
    for name, tables in sites.items():
        setattr(context, name, fused.make_launch(getattr(context, name), tables, level, sync_allowed))
    launches = ", ".join(f"{name} ({', '.join(tables)})" for name, tables in sorted(sites.items()))
    line = (
        f"MambaSpecDecodeGPUContext tables ({', '.join(fused.TABLES)}) checked at {level} where filled "
        f"(_populate_metadata) and launched: {launches or 'no launch site found'}"
    )
    return [line]


def _rebind(module_name: str, original: Any, replacement: Any) -> None:
    """Rebind ``original`` in every already-imported vLLM module that imported it by name."""
    for name, loaded in list(sys.modules.items()):
        if name.partition(".")[0] == "vllm" and name != module_name and loaded is not None:
            for attr, value in list(vars(loaded).items()):
                if value is original:
                    setattr(loaded, attr, replacement)


def _install_registration() -> list[str]:
    done: list[str] = []
    try:
        utils: Any = importlib.import_module(_WORKER_UTILS)
    except ImportError:
        utils = None
    original = getattr(utils, "bind_kv_cache_to_layers", None)
    if original is not None:
        guarded = _make_bind(original)
        utils.bind_kv_cache_to_layers = guarded
        _rebind(_WORKER_UTILS, original, guarded)  # V2's and the CPU runner's attn_utils import it by name
        done.append("bind_kv_cache_to_layers (registers bound KV caches for strict checks)")
    try:
        warmup: Any = importlib.import_module(_WARMUP)
    except ImportError:
        warmup = None
    if warmup is not None and hasattr(warmup, "_warm_batch_memcpy_kernel"):
        warmup._warm_batch_memcpy_kernel = _make_warmup(warmup._warm_batch_memcpy_kernel)
        done.append("warm-up copy (its own scratch tensors: fast checks)")
    return done


def installed() -> tuple[str, ...]:
    """What install() patched in this process (empty when it has not run or vLLM is absent)."""
    module = sys.modules.get(_MODULE)
    return tuple(getattr(module, _MARK, ()) or ())


def plugin() -> None:
    """``vllm.general_plugins`` entry point: install the guard when $PTRLINT_GUARD is fast or strict.

    vLLM calls general plugins in every process (possibly more than once); install() is
    idempotent and logs what it patched once.
    """
    level = os.environ.get("PTRLINT_GUARD", "").strip().lower()
    if level in ("fast", "strict"):
        install(check=level)


__all__ = ["check_fused_tables", "create_layout", "install", "installed", "plugin", "register_caches"]
