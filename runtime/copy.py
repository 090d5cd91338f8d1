"""Guarded batched copy through raw addresses: ``batch_memcpy(src_ptrs, dst_ptrs, sizes)``."""

from __future__ import annotations

import ctypes
from typing import Any

from ._torch import torch
from .buffers import CpuGpuBuffer
from .errors import PointerBoundsError, PointerGuardError
from .guard import check_fast, check_strict, guard_level, host_array
from .regions import MemoryRegions, default_regions
from .simulate import active as simulating
from .simulate import current_offset, to_real_array, to_real_tensor

DEFAULT_BLOCK_SIZE = 1024
_memmove = ctypes.memmove


def _tensor(x: Any) -> Any:
    return x.gpu if isinstance(x, CpuGpuBuffer) else x


def _is_device(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type != "cpu"


def batch_memcpy(
    src_ptrs: Any,
    dst_ptrs: Any,
    sizes: Any,
    *,
    check: str | None = None,
    regions: MemoryRegions | None = None,
    backend: str | None = None,
    host_views: tuple[Any, Any, Any] | None = None,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> None:
    """Copy ``sizes[i]`` bytes from ``src_ptrs[i]`` to ``dst_ptrs[i]`` for every entry.

    ``check``: "off", "fast" (dtypes, shapes, lengths, device; O(1)) or "strict" (also: no
    null address, sizes in [0, 2**31), every range inside one registered region, no two
    destinations overlapping, no destination overlapping another entry's source). Default:
    ``$PTRLINT_GUARD``, else "fast". Every check runs before any byte moves.

    ``backend``: "triton" (the default for device tensors; also usable on CPU tensors under
    TRITON_INTERPRET=1) or "cpu" (a ``ctypes.memmove`` loop; the default for host tensors).
    ``host_views``: host copies of the three tables (e.g. the CpuGpuBuffers' ``.np`` slices)
    so strict checks of device tables need no device-to-host copy.

    Under ``simulate_high_addresses`` the tables hold shifted addresses; every check and both
    backends translate them back first, so the copy moves the same bytes as without the mode.
    """
    level = guard_level(check)
    src, dst, size = _tensor(src_ptrs), _tensor(dst_ptrs), _tensor(sizes)
    check_tables(src, dst, size, level=level, regions=regions, host_views=host_views)
    chosen = backend or ("triton" if any(_is_device(t) for t in (src, dst, size)) else "cpu")
    if chosen == "cpu":
        if any(_is_device(t) for t in (src, dst, size)):
            raise PointerGuardError("the cpu backend needs host tables; use backend='triton' for device tables")
        _copy_cpu(src, dst, size, checked=level != "off")
    elif chosen == "triton":
        if simulating():
            src, dst = to_real_tensor(src), to_real_tensor(dst)
        _copy_triton(src, dst, size, block_size)
    else:
        raise ValueError(f"unknown backend {chosen!r}: use 'triton' or 'cpu'")


def check_tables(
    src: Any,
    dst: Any,
    size: Any,
    *,
    level: str,
    regions: MemoryRegions | None = None,
    host_views: tuple[Any, Any, Any] | None = None,
) -> int:
    """Run the checks of ``level`` ("off", "fast", "strict") on three tables; returns the entry count.

    Shared by ``batch_memcpy`` and the guards around other copy kernels (vLLM's), so every
    guarded path checks the same things before a byte moves.
    """
    if level == "off":
        return int(src.shape[0])
    n = check_fast(src, dst, size)
    if level == "strict" and n:
        if host_views is not None:
            hs, hd, hz = (host_array(v, name) for v, name in zip(host_views, ("src_ptrs", "dst_ptrs", "sizes")))
            if not len(hs) == len(hd) == len(hz) == n:
                raise PointerGuardError(f"host_views must hold the same {n} entries as the tables")
            check_fast(hs, hd, hz)
        else:
            hs, hd, hz = host_array(src, "src_ptrs"), host_array(dst, "dst_ptrs"), host_array(size, "sizes")
        check_strict(hs, hd, hz, regions if regions is not None else default_regions())
    return n


def _copy_cpu(src: Any, dst: Any, sizes: Any, *, checked: bool = True) -> None:
    """One ``ctypes.memmove`` per entry over Python ints: the fastest CPU path measured."""
    hs, hd = to_real_array(host_array(src, "src_ptrs")), to_real_array(host_array(dst, "dst_ptrs"))
    z = host_array(sizes, "sizes").tolist()
    s, d = hs.tolist(), hd.tolist()
    if checked:
        _refuse_non_host_addresses(s, d, z)
    memmove = _memmove
    for src_addr, dst_addr, nbytes in zip(s, d, z):
        if nbytes > 0:
            memmove(dst_addr, src_addr, nbytes)


_HOST_LIMIT = 1 << 63  # user-space host addresses never reach the upper half of the address space


def _refuse_non_host_addresses(s: list[int], d: list[int], z: list[int]) -> None:
    """A host memmove to an address >= 2**63 is a SIGSEGV: say why instead."""
    if max(s, default=0) < _HOST_LIMIT and max(d, default=0) < _HOST_LIMIT:
        return
    for i, (src_addr, dst_addr, nbytes) in enumerate(zip(s, d, z)):
        if nbytes > 0 and max(src_addr, dst_addr) >= _HOST_LIMIT:
            hint = (
                "a table built under simulate_high_addresses, copied after the simulation ended?"
                if not simulating()
                else f"not an address shifted by this simulation's offset {current_offset():#x}"
            )
            raise PointerBoundsError(
                f"entry {i}: address {max(src_addr, dst_addr):#x} ({nbytes} bytes) is not a host address: user-space "
                f"memory lies below 2**63 ({hint}); nothing was copied"
            )


def _copy_triton(src: Any, dst: Any, sizes: Any, block_size: int) -> None:
    try:
        from . import _triton_kernel
    except ImportError as exc:
        raise PointerGuardError(
            "device tables need Triton for the batched copy kernel: pip install triton "
            "(or pass host tables to use the cpu backend)"
        ) from exc
    _triton_kernel.launch(src, dst, sizes, block_size)
