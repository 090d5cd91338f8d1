"""vLLM's batched-copy descriptor tables: the (src_ptrs, dst_ptrs, sizes) triples ``swap_blocks_batch`` reads.

Two families of ``families.py`` fill them, both with a dtype chosen per platform: uint64 on XPU (its DMA
engine takes raw addresses), int64 elsewhere (``cache_kernels.cu`` checks int64 and reads each entry's 64
bits as a pointer, so an int64 entry must hold the address's bits: its wrapped value). Both write the
addresses through numpy uint64 arithmetic and views, which keeps the bits whatever the table's dtype.

- ``vllm.v1.kv_offload.cpu.gpu_worker``: the KV-offload handler's pooled buffers (``_new_descriptor_buffers``),
  filled by ``SingleDirectionOffloadingHandler.transfer_async`` and launched through the function
  ``_select_swap_blocks_fn`` picks.
- ``vllm.distributed.ec_transfer.ec_connector.cpu.worker``: the encoder-cache connector's
  ``DescriptorBufferPool`` (``descriptor_buffers``), filled by ``DescriptorBuffers.add_copies`` and launched
  by the worker's ``swap_blocks_batch``.

Fast checks each new buffer's dtype against the platform's (O(1), when a pool makes one). Strict also checks,
at every launch, every entry: non-null, its byte range not wrapping past 2**64 and inside one registered region
(both ends of every copy), and at ``add_copies`` that what was stored reads back as the addresses given.
Under simulated high addresses each launch hands the copy real addresses (at every level).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ._torch import np, torch
from .errors import PointerBoundsError, PointerDtypeError, PointerRoundTripError
from .guard import host_array
from .regions import MemoryRegions, default_regions, dtype_name
from .simulate import active as simulating
from .simulate import to_real_array
from .tables import launch_level, register_tensors, to_real_table

KV_OFFLOAD = "vllm.v1.kv_offload.cpu.gpu_worker"
EC_BUFFERS = "vllm.distributed.ec_transfer.ec_connector.cpu.worker.descriptor_buffers"
EC_WORKER = "vllm.distributed.ec_transfer.ec_connector.cpu.worker"
_KV = f"{KV_OFFLOAD} _new_descriptor_buffers"
_EC = f"{EC_BUFFERS} DescriptorBuffers"
_REGISTER = (
    "Strict registers the host buffers the handler or connector is built with and the encoder outputs it "
    "saves; bind the KV caches through vLLM's bind_kv_cache_to_layers with the guard installed, or "
    "ptrlint.runtime.register(tensor) any other memory a copy touches"
)


def platform_dtype() -> Any:
    """The pointer dtype ``swap_blocks_batch`` takes on this platform: uint64 on XPU, int64 elsewhere."""
    try:
        xpu = bool(importlib.import_module("vllm.platforms").current_platform.is_xpu())
    except (ImportError, AttributeError, RuntimeError):
        xpu = False
    return torch.uint64 if xpu else torch.int64


def _meaning(dtype: Any) -> str:
    if dtype == torch.uint64:
        return "uint64 holding raw addresses (XPU's DMA engine)"
    return "int64 holding each address's 64 bits, its wrapped value (cache_kernels.cu reads the bits as a pointer)"


def check_dtypes(src: Any, dst: Any, sizes: Any, name: str) -> None:
    """O(1): both pointer tables have the platform's dtype, all three are 1-D of one length."""
    want = platform_dtype()
    for label, table in (("src_ptrs", src), ("dst_ptrs", dst)):
        dtype = getattr(table, "dtype", None)
        if not isinstance(table, torch.Tensor) or dtype != want:
            raise PointerDtypeError(
                f"{name} {label} has dtype {dtype_name(table)}, but swap_blocks_batch reads {_meaning(want)} on this platform: "
                "another dtype is rejected by the op or misreads addresses >= 2**63. Create the buffers with the "
                "platform's dtype and write addresses through a uint64 view (numpy .view(np.uint64))"
            )
    shapes = [tuple(getattr(t, "shape", ())) for t in (src, dst, sizes)]
    if any(len(s) != 1 for s in shapes) or len({s[0] for s in shapes}) != 1:
        raise PointerBoundsError(f"{name}: src_ptrs, dst_ptrs and sizes must be 1-D of one length, got {shapes}")


def check_copies(src: Any, dst: Any, sizes: Any, name: str, regions: MemoryRegions | None = None) -> None:
    """Strict: every copy's source and destination range non-null, not wrapping past 2**64, inside one region."""
    if not src.numel():
        return
    regions = regions if regions is not None else default_regions()
    counts = host_array(sizes.detach(), f"{name} sizes").astype(np.int64, copy=False)
    negative = np.flatnonzero(counts < 0)
    if len(negative):
        i = int(negative[0])
        raise PointerBoundsError(f"entry {i} of {name} sizes: {int(counts[i])} bytes is negative")
    reach = np.maximum(counts, 1).astype(np.uint64) - np.uint64(1)
    for label, table in (("src_ptrs", src), ("dst_ptrs", dst)):
        values = host_array(table.detach(), f"{name} {label}").view(np.uint64)
        real = to_real_array(values)
        with np.errstate(over="ignore"):
            last = real + reach  # wraps for a range past 2**64: contains() refuses last < first
        bad = np.flatnonzero((values == 0) | ~regions.contains(real, last))
        if not len(bad):
            continue
        i = int(bad[0])
        addr, nbytes = int(real[i]), int(counts[i])
        if int(values[i]) == 0:
            raise PointerBoundsError(f"entry {i} of {name} {label}: null address ({nbytes} bytes to copy)")
        if int(last[i]) < addr:
            raise PointerBoundsError(
                f"entry {i} of {name} {label}: [{addr:#x}, +{nbytes}) runs past 2**64 (its end wraps around to a "
                "low address): the address or the size is wrong"
            )
        raise PointerBoundsError(
            f"entry {i} of {name} {label}: [{addr:#x}, +{nbytes}) is not inside one registered region; "
            f"{regions.nearest(addr)}. {_REGISTER}"
        )


def checked_swap(swap: Callable[..., Any], name: str, level: str) -> Callable[..., Any]:
    """A ``swap_blocks_batch`` that checks its tables first (strict) and, under simulated high addresses,
    hands the copy real addresses (at every level: the op dereferences them)."""

    def swap_blocks_batch(src_ptrs: Any, dst_ptrs: Any, sizes: Any, *args: Any, **kwargs: Any) -> Any:
        if launch_level(level) == "strict":
            check_dtypes(src_ptrs, dst_ptrs, sizes, name)
            check_copies(src_ptrs, dst_ptrs, sizes, name)
        if simulating():
            to_real_table(src_ptrs)
            to_real_table(dst_ptrs)
        return swap(src_ptrs, dst_ptrs, sizes, *args, **kwargs)

    if inspect.isfunction(swap) or inspect.isbuiltin(swap):
        functools.update_wrapper(swap_blocks_batch, swap)
    swap_blocks_batch._ptrlint_original = swap  # type: ignore[attr-defined]
    return swap_blocks_batch


# ----- the KV-offload handler ---------------------------------------------------------------------
def patch_kv_offload(module: ModuleType, level: str) -> bool:
    make, select = getattr(module, "_new_descriptor_buffers", None), getattr(module, "_select_swap_blocks_fn", None)
    if not inspect.isfunction(make) or not inspect.isfunction(select):
        return False

    def _new_descriptor_buffers(*args: Any, **kwargs: Any) -> Any:
        made = make(*args, **kwargs)
        src, dst, sizes = made
        check_dtypes(src, dst, sizes, _KV)
        return made

    def _select_swap_blocks_fn(*args: Any, **kwargs: Any) -> Any:
        return checked_swap(select(*args, **kwargs), f"{_KV} (in swap_blocks_batch)", level)

    for original, replacement in ((make, _new_descriptor_buffers), (select, _select_swap_blocks_fn)):
        functools.update_wrapper(replacement, original)
        setattr(module, original.__name__, replacement)
    handler: Any = getattr(module, "SingleDirectionOffloadingHandler", None)
    init = vars(handler).get("__init__") if handler is not None else None
    if level == "strict" and inspect.isfunction(init):
        signature = inspect.signature(init)

        def guarded_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            cpu = signature.bind_partial(self, *args, **kwargs).arguments.get("cpu_tensors") or []
            register_tensors(list(cpu), "vLLM KV-offload CPU cache")

        functools.update_wrapper(guarded_init, init)
        handler.__init__ = guarded_init
    return True


# ----- the encoder-cache connector ----------------------------------------------------------------
def patch_ec_buffers(module: ModuleType, level: str) -> bool:
    pool: Any = getattr(module, "DescriptorBufferPool", None)
    buffers: Any = getattr(module, "DescriptorBuffers", None)
    acquire = vars(pool).get("acquire") if pool is not None else None
    add = vars(buffers).get("add_copies") if buffers is not None else None
    if not inspect.isfunction(acquire) or not inspect.isfunction(add):
        return False

    def guarded_acquire(self: Any, *args: Any, **kwargs: Any) -> Any:
        bufs = acquire(self, *args, **kwargs)
        check_dtypes(bufs.src_ptrs, bufs.dst_ptrs, bufs.sizes, _EC)
        return bufs

    def add_copies(self: Any, first: int, sources: Any, destinations: Any, byte_counts: Any) -> None:
        try:
            add(self, first, sources, destinations, byte_counts)
        except OverflowError as exc:
            raise PointerDtypeError(_unstorable(self, first, sources, destinations, exc)) from exc
        if level == "strict":
            _check_stored(self, first, sources, destinations)

    for original, replacement, owner in ((acquire, guarded_acquire, pool), (add, add_copies, buffers)):
        functools.update_wrapper(replacement, original)
        setattr(owner, original.__name__, replacement)
    return True


def _as_bits(values: Any) -> Any:
    """Addresses as uint64 bit patterns: arrays by their bits, Python ints by value (a negative one wraps)."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64 if array.dtype.kind == "i" else np.uint64, copy=False).view(np.uint64)
    return np.array([int(v) % (1 << 64) for v in array.ravel()], dtype=np.uint64)


def _check_stored(bufs: Any, first: int, sources: Any, destinations: Any) -> None:
    for label, table, given in (("src_ptrs", bufs.src_ptrs, sources), ("dst_ptrs", bufs.dst_ptrs, destinations)):
        want = _as_bits(given)
        stored = host_array(table.detach(), f"{_EC}.{label}").view(np.uint64)[first : first + len(want)]
        bad = np.flatnonzero(stored != want)
        if len(bad):
            i = int(bad[0])
            raise PointerRoundTripError(
                f"entry {first + i} of {_EC}.{label}: stored {int(stored[i]):#x}, but add_copies was given "
                f"{int(want[i]):#x}: the address was truncated or converted on its way in. Pass addresses as "
                "numpy uint64 arrays (the aliases keep their bits whatever the table's dtype)"
            )


def _unstorable(bufs: Any, first: int, sources: Any, destinations: Any, exc: BaseException) -> str:
    for label, given in (("src_ptrs", sources), ("dst_ptrs", destinations)):
        for i, value in enumerate(np.asarray(given, dtype=object).ravel()):
            if int(value) >= 1 << 63 and getattr(bufs, label).dtype == torch.int64:
                return (
                    f"entry {first + i} of {_EC}.{label}: address {int(value):#x} cannot be stored into the int64 "
                    f"table as a Python int ({exc}). Pass addresses as numpy uint64 arrays, whose store keeps the "
                    "bits (the value the CUDA op reads), or create the table uint64 and view it as int64"
                )
    return f"{_EC}: add_copies could not store the copies ({exc})"


def patch_ec_worker(module: ModuleType, level: str) -> bool:
    swap = getattr(module, "swap_blocks_batch", None)
    if swap is None or not callable(swap):
        return False
    module.swap_blocks_batch = checked_swap(swap, f"{EC_WORKER} swap_blocks_batch ({_EC} tables)", level)  # type: ignore[attr-defined]
    worker: Any = getattr(module, "ECCPUWorker", None)
    save = vars(worker).get("save_caches") if worker is not None else None
    if level == "strict" and inspect.isfunction(save):
        signature = inspect.signature(save)

        def save_caches(self: Any, *args: Any, **kwargs: Any) -> Any:
            bound = signature.bind_partial(self, *args, **kwargs).arguments
            cache, key = bound.get("encoder_cache") or {}, bound.get("mm_hash")
            blocks = getattr(getattr(self, "_region", None), "blocks", None)
            register_tensors([cache.get(key), blocks], "vLLM encoder-cache transfer buffer")
            return save(self, *args, **kwargs)

        functools.update_wrapper(save_caches, save)
        worker.save_caches = save_caches
    return True


__all__ = [
    "EC_BUFFERS",
    "EC_WORKER",
    "KV_OFFLOAD",
    "check_copies",
    "check_dtypes",
    "checked_swap",
    "patch_ec_buffers",
    "patch_ec_worker",
    "patch_kv_offload",
    "platform_dtype",
]
