"""Checks that stand between a pointer table and a SIGSEGV.

All strict checks are vectorised in numpy uint64 on the host copy of the table and run before
any byte moves. torch's uint64 lacks ordering, arithmetic and searchsorted, so none of the
maths here is done in torch.
"""

from __future__ import annotations

import os
from typing import Any, cast

from ._torch import np, torch
from .buffers import CpuGpuBuffer
from .errors import PointerBoundsError, PointerDtypeError, PointerGuardError, PointerOverlapError, PointerRoundTripError
from .regions import U64_MAX, MemoryRegions, default_regions, dtype_name
from .simulate import to_real_array

MAX_ENTRY_BYTES = 1 << 31  # sizes live in int32 buffers
GUARD_LEVELS = ("off", "fast", "strict")
_UNSIGNED = (torch.uint64,)


def guard_level(check: str | None = None) -> str:
    """``check`` if given, else ``$PTRLINT_GUARD``, else "fast"."""
    level = check if check is not None else os.environ.get("PTRLINT_GUARD", "fast").strip().lower() or "fast"
    if level not in GUARD_LEVELS:
        raise ValueError(
            f"guard level must be one of {', '.join(GUARD_LEVELS)}, got {level!r} (check= or $PTRLINT_GUARD)"
        )
    return level


def _is_buffer_like(x: Any) -> bool:
    """vLLM's own CpuGpuBuffer (or any object with .cpu/.gpu tensors)."""
    return isinstance(getattr(x, "cpu", None), torch.Tensor) and isinstance(getattr(x, "gpu", None), torch.Tensor)


def assert_pointer_buffer(x: Any, name: str = "pointer buffer") -> None:
    """Raise PointerDtypeError unless ``x`` (tensor, ndarray or CpuGpuBuffer) is uint64."""
    if isinstance(x, CpuGpuBuffer) or _is_buffer_like(x):
        assert_pointer_buffer(x.cpu, f"{name}.cpu")
        assert_pointer_buffer(x.gpu, f"{name}.gpu")
        return
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.uint64:
            return
    elif isinstance(x, np.ndarray):
        if x.dtype == np.uint64:
            return
    else:
        raise PointerDtypeError(f"{name} must be a torch tensor or numpy array of uint64, got {type(x).__name__}")
    raise PointerDtypeError(
        f"{name} has dtype {dtype_name(x)}, but addresses need uint64: signed or narrow buffers overflow, "
        "wrap negative or truncate for addresses >= 2**63. Create it with dtype=torch.uint64 / np.uint64 "
        "(`ptrlint --fix` rewrites the creation site)."
    )


def _numpy_view(view: Any) -> np.ndarray:
    if isinstance(view, CpuGpuBuffer) or (_is_buffer_like(view) and hasattr(view, "np")):
        return cast(np.ndarray, view.np)  # a CpuGpuBuffer's (or a buffer-like's) numpy view
    if isinstance(view, torch.Tensor):
        if view.device.type != "cpu":
            raise PointerGuardError("store_pointer needs a host view; write into the CpuGpuBuffer's .np and upload")
        return view.numpy()
    if isinstance(view, np.ndarray):
        return view
    raise PointerDtypeError(f"store_pointer needs a numpy uint64 view, got {type(view).__name__}")


def store_pointer(view: Any, index: int, addr: int) -> None:
    """Write ``addr`` at ``view[index]`` through the numpy view and read it back.

    The numpy path handles the full uint64 range (torch setitem does not). A signed or narrow
    view raises PointerDtypeError, a value outside [0, 2**64) or a mismatch PointerRoundTripError.
    """
    array = _numpy_view(view)
    if array.dtype != np.uint64:
        raise PointerDtypeError(
            f"cannot store address {addr:#x} at entry {index}: the view has dtype {array.dtype}, not uint64 "
            "(signed views overflow above 2**63 - 1, narrow ones truncate); create the buffer as uint64"
        )
    value = int(addr)
    if not 0 <= value <= U64_MAX:
        raise PointerRoundTripError(f"entry {index}: {value} is not an address (must be in [0, 2**64)); nothing stored")
    try:
        array[index] = value
    except OverflowError as exc:  # pragma: no cover - uint64 holds the whole checked range
        raise PointerRoundTripError(f"entry {index}: address {value:#x} did not fit: {exc}") from exc
    back = int(array[index])
    if back != value:
        raise PointerRoundTripError(
            f"entry {index}: stored address {value:#x} but read back {back:#x}; the buffer cannot hold addresses"
        )


def verify_upload(buffer: CpuGpuBuffer, n: int) -> None:
    """Debug check: the first ``n`` device entries equal the host entries bit for bit."""
    host = buffer.cpu[:n]
    device = buffer.gpu[:n].to("cpu")
    if not torch.equal(host, device):
        bad = int(np.flatnonzero(host.numpy() != device.numpy())[0])
        raise PointerRoundTripError(
            f"entry {bad}: host holds {int(host.numpy()[bad]):#x} but the device copy holds "
            f"{int(device.numpy()[bad]):#x}; synchronise before launching, and keep both sides uint64"
        )


# ----- table checks ------------------------------------------------------------------------------
def host_array(x: Any, name: str) -> np.ndarray:
    if isinstance(x, CpuGpuBuffer) or _is_buffer_like(x):
        x = x.cpu
    if isinstance(x, torch.Tensor):
        if x.device.type != "cpu":
            x = x.to("cpu")  # synchronises: pass host_views= to batch_memcpy to avoid it
        return cast(np.ndarray, x.numpy())  # a Tensor's
    if isinstance(x, np.ndarray):
        return x
    raise PointerGuardError(f"{name} must be a tensor or ndarray, got {type(x).__name__}")


def check_fast(src: Any, dst: Any, sizes: Any) -> int:
    """O(1) checks: uint64 pointer dtypes, integer sizes, 1-D, equal lengths, one device."""
    assert_pointer_buffer(src, "src_ptrs")
    assert_pointer_buffer(dst, "dst_ptrs")
    size_dtype = getattr(sizes, "dtype", None)
    integer_sizes = (
        isinstance(sizes, torch.Tensor)
        and not sizes.dtype.is_floating_point
        and not sizes.dtype.is_complex
        and sizes.dtype != torch.bool
    ) or (isinstance(sizes, np.ndarray) and sizes.dtype.kind in "iu")
    if not integer_sizes:
        raise PointerDtypeError(f"sizes must be an integer tensor/array (int32 in vLLM), got {size_dtype}")
    shapes: list[tuple[int, ...]] = [tuple(t.shape) for t in (src, dst, sizes)]
    if any(len(s) != 1 for s in shapes):
        raise PointerGuardError(f"src_ptrs, dst_ptrs and sizes must be 1-D, got shapes {shapes}")
    if not shapes[0][0] == shapes[1][0] == shapes[2][0]:
        raise PointerGuardError(
            f"src_ptrs, dst_ptrs and sizes must have one length, got {shapes[0][0]}, {shapes[1][0]}, {shapes[2][0]}"
        )
    devices = {str(t.device) for t in (src, dst, sizes) if isinstance(t, torch.Tensor)}
    if len(devices) > 1:
        raise PointerGuardError(f"src_ptrs, dst_ptrs and sizes must be on one device, got {sorted(devices)}")
    return shapes[0][0]


def _shown(table: int, real: int) -> str:
    """An address as the table holds it, with the real one when simulated high addresses shifted it."""
    return f"{table:#x}" if table == real else f"{table:#x} (real {real:#x})"


def check_strict(src: np.ndarray, dst: np.ndarray, sizes: np.ndarray, regions: MemoryRegions) -> None:
    """Per-entry checks, vectorised; raises on the first bad entry (lowest index).

    Sizes, null entries and wrap-around are checked on the table's own values; bounds and
    overlaps on real addresses (``to_real_array``: identity unless high addresses are simulated).
    """
    n = len(src)
    if n == 0:
        return
    sz = sizes.astype(np.int64, copy=False)
    bad = np.flatnonzero((sz < 0) | (sz >= MAX_ENTRY_BYTES))
    if len(bad):
        i = int(bad[0])
        raise PointerBoundsError(
            f"entry {i}: size {int(sz[i])} bytes is outside [0, 2**31) (src {int(src[i]):#x}, dst {int(dst[i]):#x}); "
            "sizes must be non-negative and fit the int32 size buffer; split larger copies"
        )
    live = np.flatnonzero(sz > 0)  # size-0 entries are no-ops: never dereferenced
    if not len(live):
        return
    s, d = src[live], dst[live]
    nbytes = sz[live].astype(np.uint64)
    for label, addrs in (("source", s), ("destination", d)):
        zero = np.flatnonzero(addrs == 0)
        if len(zero):
            i = int(live[zero[0]])
            raise PointerBoundsError(
                f"entry {i}: null {label} address with size {int(sz[i])}; fill the table before copying "
                "(an unfilled entry is 0)"
            )
        last = addrs + (nbytes - np.uint64(1))  # inclusive end; wraps past 2**64 - 1
        wrapped = np.flatnonzero(last < addrs)
        if len(wrapped):
            i = int(live[wrapped[0]])
            raise PointerBoundsError(
                f"entry {i}: {label} range {int(addrs[wrapped[0]]):#x} + {int(sz[i])} bytes wraps past 2**64; "
                "the address is corrupt (a sign-extended or truncated value?)"
            )
    real_s, real_d = to_real_array(s), to_real_array(d)
    # one sort per side, shared by the bounds and the overlap checks (sorting dominates the cost)
    orders = {"source": np.argsort(real_s), "destination": np.argsort(real_d)}
    for label, addrs, table in (("source", real_s, s), ("destination", real_d, d)):
        last = addrs + (nbytes - np.uint64(1))
        _check_bounds(label, addrs, table, last, orders[label], live, sz, regions)
    _check_overlaps(real_s, real_d, s, d, nbytes, live, orders["source"], orders["destination"])


def _check_bounds(
    label: str,
    addrs: np.ndarray,
    table: np.ndarray,
    last: np.ndarray,
    order: np.ndarray,
    live: np.ndarray,
    sz: np.ndarray,
    regions: MemoryRegions,
) -> None:
    starts, ends, _ = regions.arrays()
    if len(starts) == 0:
        i = int(live[0])
        raise PointerBoundsError(
            f"entry {i}: {label} {_shown(int(table[0]), int(addrs[0]))} + {int(sz[i])} bytes: no memory is registered; "
            "strict mode copies only inside registered regions (ptrlint.runtime.register(tensor) each source and "
            "destination buffer)"
        )
    sorted_addrs = addrs[order]
    idx = np.searchsorted(starts, sorted_addrs, side="right").astype(np.int64) - 1
    outside = idx < 0
    safe_idx = np.where(outside, 0, idx)
    outside |= last[order] > ends[safe_idx]
    bad = np.flatnonzero(outside)
    if len(bad):
        positions = order[bad]
        k = int(positions.min())
        i = int(live[k])
        addr, shown, size = int(addrs[k]), int(table[k]), int(sz[i])
        real = "" if addr == shown else f" (real [{addr:#x}, {addr + size:#x}))"
        raise PointerBoundsError(
            f"entry {i}: {label} range [{shown:#x}, {shown + size:#x}){real} of {size} bytes is not inside one "
            f"registered region; {regions.nearest(addr)}. Register the buffer it points into, or fix the address"
        )


def _check_overlaps(
    s: np.ndarray,
    d: np.ndarray,
    table_s: np.ndarray,
    table_d: np.ndarray,
    nbytes: np.ndarray,
    live: np.ndarray,
    s_order: np.ndarray,
    order: np.ndarray,
) -> None:
    """Inclusive ends throughout, so a range ending at 2**64 cannot wrap."""
    one = np.uint64(1)
    d_last = d + (nbytes - one)
    s_last = s + (nbytes - one)
    # destination vs destination: sorted by start, each range must end before the next begins
    if len(order) > 1:
        clash = np.flatnonzero(d_last[order][:-1] >= d[order][1:])
        if len(clash):
            a, b = int(order[clash[0]]), int(order[clash[0] + 1])
            i, j = sorted((int(live[a]), int(live[b])))
            raise PointerOverlapError(
                f"entries {i} and {j}: destination ranges overlap ([{_shown(int(table_d[a]), int(d[a]))}, "
                f"+{int(nbytes[a])}) and [{_shown(int(table_d[b]), int(d[b]))}, +{int(nbytes[b])})); the result "
                "would depend on copy order"
            )
    # destination vs sources: does any source interval meet a destination interval?
    s_sorted = s[s_order]
    s_last_max = np.maximum.accumulate(s_last[s_order])
    k = np.searchsorted(s_sorted, d_last, side="right")  # sources starting at or before each destination's end
    has = k > 0
    candidates = np.flatnonzero(has & (s_last_max[np.where(has, k - 1, 0)] >= d))
    for c in candidates.tolist():  # rare path: resolve exactly, allowing an entry's own left-overlapping source
        lo, hi = int(d[c]), int(d_last[c])
        for j in s_order[: int(k[c])].tolist():
            src_lo, src_hi = int(s[j]), int(s_last[j])
            if src_lo > hi or src_hi < lo:
                continue
            dest = _shown(int(table_d[c]), lo)
            source = _shown(int(table_s[j]), src_lo)
            if j == c:
                if src_lo < lo:
                    raise PointerOverlapError(
                        f"entry {int(live[c])}: destination [{dest}, +{int(nbytes[c])}) starts inside its own source "
                        f"[{source}, +{int(nbytes[j])}); a forward copy would overwrite bytes before reading them"
                    )
                continue
            raise PointerOverlapError(
                f"entry {int(live[c])}: destination [{dest}, +{int(nbytes[c])}) overlaps the source of entry "
                f"{int(live[j])} ([{source}, +{int(nbytes[j])})); the result would depend on copy order"
            )


# ----- address tables read by fused kernels ------------------------------------------------------
_BIT_PATTERN_DTYPES = (torch.int64, torch.uint64)


def check_address_table(
    table: Any, name: str, *, level: str, length: int | None = None, regions: MemoryRegions | None = None
) -> None:
    """Validate a 1-D table of base addresses that a kernel dereferences.

    vLLM keeps some of these as int64 holding the uint64 bit pattern (``_reinterpret_u64_as_i64``):
    that is a deliberate, lossless reinterpretation, so int64 is accepted here and every entry is
    read back as uint64. "fast" (O(1)): dtype is int64 or uint64, 1-D, ``length`` entries.
    "strict": also every entry is non-null and lies inside one registered region.
    """
    if level == "off":
        return
    dtype = getattr(table, "dtype", None)
    if not isinstance(table, torch.Tensor) or dtype not in _BIT_PATTERN_DTYPES:
        raise PointerDtypeError(
            f"{name} has dtype {dtype_name(table)}: an address table must hold 64-bit patterns (uint64, or int64 "
            "written through a u64->i64 reinterpretation); narrow or floating tables truncate addresses"
        )
    if table.dim() != 1 or (length is not None and table.shape[0] != length):
        raise PointerGuardError(f"{name} must be 1-D with {length} entries, got shape {tuple(table.shape)}")
    if level != "strict" or table.numel() == 0:
        return
    values = host_array(table.detach(), name).view(np.uint64)  # the bit pattern, unsigned
    zero = np.flatnonzero(values == 0)
    if len(zero):
        raise PointerBoundsError(
            f"entry {int(zero[0])} of {name}: null address; the table is read by a kernel before it was filled "
            "(populate it from the bound caches first)"
        )
    regions = regions if regions is not None else default_regions()
    real = to_real_array(values)
    bad = np.flatnonzero(~regions.contains(real, real))
    if len(bad):
        i = int(bad[0])
        addr = int(values[i])
        raise PointerBoundsError(
            f"entry {i} of {name}: address {_shown(addr, int(real[i]))} is not inside any registered region; "
            f"{regions.nearest(int(real[i]))}. A truncated or sign-mangled address, or memory nobody registered "
            "(ptrlint.runtime.register(tensor) it)"
        )
