"""Registered memory: the regions a guarded copy or a checked address table may point into.

A region registered from a tensor or an ndarray covers its whole allocation and lives as long as its
storage (a freed allocation is never accepted again); one registered by address stays until removed.
A range whose end wraps past 2**64 lies in no region. The process-wide regions are what
``register``/``unregister`` change and the checks read by default.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Callable

from ._torch import np, torch
from .buffers import CpuGpuBuffer
from .errors import PointerBoundsError
from .simulate import to_real

U64_MAX = (1 << 64) - 1


def dtype_name(x: Any) -> str:
    """``int64`` for a tensor or array of that dtype; the type's name for anything without a dtype."""
    return str(getattr(x, "dtype", type(x).__name__)).replace("torch.", "")


@dataclass(frozen=True)
class Region:
    start: int
    nbytes: int
    label: str = ""
    # whether the memory is still allocated (a tensor's storage, an ndarray's base): a region registered
    # from an object lives as long as its storage; one registered by address (add_range) until removed
    alive: Callable[[], bool] | None = field(default=None, compare=False, repr=False)

    @property
    def end(self) -> int:
        return self.start + self.nbytes

    def describe(self) -> str:
        what = f" ({self.label})" if self.label else ""
        return f"[{self.start:#x}, {self.end:#x}) of {self.nbytes} bytes{what}"


def _region_of(obj: Any) -> tuple[int, int, str]:
    start, nbytes, label, _alive = _allocation_of(obj)
    return start, nbytes, label


def _allocation_of(obj: Any) -> tuple[int, int, str, Callable[[], bool]]:
    """The whole allocation behind a tensor or ndarray, and a test of whether it is still allocated."""
    if isinstance(obj, torch.Tensor):
        from torch.multiprocessing.reductions import StorageWeakRef

        storage = obj.untyped_storage()
        ref = StorageWeakRef(storage)  # type: ignore[no-untyped-call]  # expires when its last tensor is freed
        return (
            to_real(storage.data_ptr()),
            storage.nbytes(),
            f"{tuple(obj.shape)} {dtype_name(obj)} on {obj.device}",
            lambda: not ref.expired(),  # type: ignore[no-untyped-call]
        )
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        owner = weakref.ref(base)  # views keep their base alive
        return base.ctypes.data, base.nbytes, f"ndarray {base.shape} {base.dtype}", lambda: owner() is not None
    if isinstance(obj, CpuGpuBuffer):
        raise TypeError("register the CpuGpuBuffer's .cpu or .gpu tensor, not the buffer object")
    raise TypeError(f"cannot register a {type(obj).__name__}; pass a tensor, an ndarray, or use add_range()")


class MemoryRegions:
    """Registered memory that copies may touch. Thread-safe.

    Used as a context manager, it removes on exit whatever was added inside the block. A region added
    from a tensor or an ndarray lives as long as its storage: once the memory is freed, no check accepts
    an address in it again (the allocator may hand it to anything).
    """

    def __init__(self) -> None:
        self._regions: list[Region] = []
        self._lock = threading.Lock()
        self._marks: list[int] = []
        self._cache: tuple[np.ndarray, np.ndarray, list[Region]] | None = None

    def add(self, obj: Any, label: str | None = None) -> Region:
        """Register a tensor's or ndarray's whole allocation, for as long as it is allocated."""
        start, nbytes, auto, alive = _allocation_of(obj)
        return self._add(start, nbytes, label if label is not None else auto, alive)

    def ensure(self, obj: Any, label: str | None = None) -> Region:
        """``add``, unless the same allocation is registered already (and still allocated): a wrapper that
        registers what a table is filled from on every fill keeps one region per allocation, not one per fill."""
        start, nbytes, auto, alive = _allocation_of(obj)
        with self._lock:
            for region in self._regions:
                if region.start == start and region.nbytes == nbytes and (region.alive is None or region.alive()):
                    return region
        return self._add(start, nbytes, label if label is not None else auto, alive)

    def add_range(self, addr: int, nbytes: int, label: str = "") -> Region:
        """Register ``nbytes`` at ``addr`` (a shifted address under simulated high addresses is stored real),
        until removed: ptrlint cannot tell when memory known only by its address is freed."""
        return self._add(to_real(addr), nbytes, label, None)

    def _add(self, addr: int, nbytes: int, label: str, alive: Callable[[], bool] | None) -> Region:
        nbytes = int(nbytes)
        region = Region(addr, nbytes, label, alive)
        if nbytes == 0 and addr >= 0:
            return region  # an empty allocation (data_ptr 0 is normal there): nothing to copy into
        if addr <= 0 or nbytes < 0 or addr + nbytes > U64_MAX + 1:
            raise PointerBoundsError(f"cannot register [{addr:#x}, +{nbytes}): not a valid address range")
        with self._lock:
            self._regions.append(region)
            self._cache = None
        return region

    def remove(self, obj: Any) -> None:
        """Remove a Region returned by add/add_range, or the region of a tensor/ndarray."""
        with self._lock:
            if isinstance(obj, Region):
                if obj.nbytes == 0:
                    return
                target = obj
                matches = [i for i, r in enumerate(self._regions) if r == target]
            else:
                start, nbytes, _ = _region_of(obj)
                matches = [i for i, r in enumerate(self._regions) if r.start == start and r.nbytes == nbytes]
            if not matches:
                raise KeyError("that memory is not registered")
            del self._regions[matches[-1]]
            self._marks = [min(m, len(self._regions)) for m in self._marks]
            self._cache = None

    def clear(self) -> None:
        with self._lock:
            self._regions.clear()
            self._marks = [0 for _ in self._marks]
            self._cache = None

    def __len__(self) -> int:
        return len(self._regions)

    def __iter__(self) -> Iterator[Region]:
        return iter(list(self._regions))

    def __enter__(self) -> MemoryRegions:
        with self._lock:
            self._marks.append(len(self._regions))
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            mark = self._marks.pop()
            del self._regions[mark:]
            self._cache = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, list[Region]]:
        """Sorted, merged (overlapping regions united) starts/ends as uint64 arrays, of the regions whose
        memory is still allocated (a freed one is dropped here)."""
        with self._lock:
            freed = [i for i, r in enumerate(self._regions) if r.alive is not None and not r.alive()]
            if freed:
                for i in reversed(freed):
                    del self._regions[i]
                self._marks = [min(m, len(self._regions)) for m in self._marks]
                self._cache = None
            if self._cache is None:
                merged: list[list[int]] = []
                owners: list[Region] = []
                for region in sorted(self._regions, key=lambda r: r.start):
                    if merged and region.start < merged[-1][1]:  # overlap (views of one allocation): unite
                        merged[-1][1] = max(merged[-1][1], region.end)
                    else:
                        merged.append([region.start, region.end])
                        owners.append(region)
                starts = np.array([m[0] for m in merged], dtype=np.uint64)
                ends = np.array([m[1] - 1 for m in merged], dtype=np.uint64)  # inclusive: 2**64 fits
                self._cache = (starts, ends, owners)
            return self._cache

    def contains(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Per range (uint64 arrays, inclusive ends, real addresses): does it lie inside one region? A range
        whose end wrapped past 2**64 (``last < first``: ``first + nbytes - 1`` computed in uint64) lies in none."""
        starts, ends, _ = self.arrays()
        if not len(starts):
            return np.zeros(len(first), bool)
        idx = np.searchsorted(starts, first, side="right").astype(np.int64) - 1
        return (idx >= 0) & (last >= first) & (last <= ends[np.maximum(idx, 0)])

    def nearest(self, addr: int) -> str:
        starts, ends, owners = self.arrays()
        if not len(starts):
            return "no memory is registered (register(tensor) the source and destination buffers)"
        i = int(np.searchsorted(starts, np.uint64(addr), side="right")) - 1
        candidates = [j for j in (i, i + 1) if 0 <= j < len(starts)]
        best = min(candidates, key=lambda j: min(abs(addr - int(starts[j])), abs(addr - int(ends[j]))))
        start, end = int(starts[best]), int(ends[best]) + 1
        label = owners[best].label
        return f"nearest registered region [{start:#x}, {end:#x}) of {end - start} bytes" + (
            f" ({label})" if label else ""
        )


_default = MemoryRegions()


def default_regions() -> MemoryRegions:
    return _default


def register(obj: Any, label: str | None = None) -> Region:
    """Register a tensor's (or ndarray's) whole allocation in the process-wide regions."""
    return _default.add(obj, label)


def unregister(obj: Any) -> None:
    _default.remove(obj)
