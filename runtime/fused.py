"""The address tables vLLM's fused Mamba kernels dereference, checked where filled and where launched.

vLLM 0.33 and 0.34 keep them in a ``MambaSpecDecodeGPUContext`` as int64 tensors holding uint64
bit patterns (written through ``_reinterpret_u64_as_i64``): ``state_base_addrs`` (one entry per
Mamba state tensor), ``block_table_ptrs`` and ``aligned_index_block_table_ptrs`` (one per Mamba
group). The kernels add ``block_id * stride`` to an entry and copy whole state blocks, so an entry
that is truncated, sign-mangled, overwritten or points at memory nobody bound is a wild write.

When the context is filled, each entry is paired with the tensor it was filled from (a ``Target``:
the address that tensor reports and every byte a kernel can reach from it). Strict checks then
ask, for every entry: non-null; equal, read as uint64, to its target's address (the round trip);
the target's whole span inside one registered region; and, at fill time, no two states of one
layer sharing a byte within a block (the kernels write every state of a layer for the same block
at once). Fast checks are O(1): dtype, shape and length.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._torch import np, torch
from .errors import PointerBoundsError, PointerOverlapError, PointerRoundTripError
from .guard import _shown, check_address_table, host_array
from .regions import MemoryRegions, default_regions
from .simulate import to_real, to_real_array, to_real_tensor

CONTEXT = "MambaSpecDecodeGPUContext"
TABLES = ("state_base_addrs", "block_table_ptrs", "aligned_index_block_table_ptrs")
_TARGETS = "_ptrlint_targets"  # set on a filled context: {table name: [Target, ...]}


@dataclass(frozen=True)
class Target:
    """What one table entry must point at: the tensor it was filled from."""

    address: int  # data_ptr() as this process reports it (shifted under simulated high addresses)
    nbytes: int  # the tensor's strided span: every byte a kernel can reach from the entry
    label: str
    layer: str = ""  # states of one layer are written for the same block at once
    block_stride: int = 0  # bytes between consecutive blocks (0: not indexed by block)
    block_bytes: int = 0  # the span of one block
    bounded: bool = True  # its span is known: checked against the registered regions (else its address only)


def span(tensor: Any) -> int:
    """Bytes from ``data_ptr()`` to the end of the last element of a strided tensor."""
    if tensor.numel() == 0:
        return 0
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    nbytes: int = (last + 1) * tensor.element_size()
    return nbytes


def tensor_target(tensor: Any, label: str, layer: str = "") -> Target:
    blocked = tensor.dim() > 1
    return Target(
        address=int(tensor.data_ptr()),
        nbytes=span(tensor),
        label=label,
        layer=layer,
        block_stride=tensor.stride(0) * tensor.element_size() if blocked else 0,
        block_bytes=span(tensor[0]) if blocked and tensor.shape[0] else 0,
    )


def state_targets(
    module: Any, ctx: Any, kv_cache_config: Any, forward_context: Mapping[str, Any], copy_funcs: Any
) -> list[Target] | None:
    """One Target per ``state_base_addrs`` entry, walking the context's groups as vLLM fills it.

    Uses vLLM's own helpers for the per-layer spec and copy functions (0.34 adds the ReplaySSM
    ring states through ``_get_mamba_gpu_state_copy_funcs``; 0.33 reads ``copy_funcs[type]``).
    None when the walk does not account for every entry (an unknown layout).
    """
    spec_of = getattr(module, "_get_mamba_spec_for_layer", None)
    funcs_of = getattr(module, "_get_mamba_gpu_state_copy_funcs", None)
    if spec_of is None:
        return None
    targets: list[Target] = []
    try:
        for group_id in ctx.mamba_group_ids:
            group = kv_cache_config.kv_cache_groups[group_id]
            for name in group.layer_names:
                spec = spec_of(group, name)
                layer = forward_context[name]
                funcs = funcs_of(spec, layer, copy_funcs) if funcs_of else copy_funcs[spec.mamba_type]
                states = list(layer.kv_cache)[: len(funcs)]
                targets += [tensor_target(state, f"{name} state {k}", layer=name) for k, state in enumerate(states)]
    except (AttributeError, KeyError, IndexError, TypeError):  # not the layout this walk knows
        return None
    return targets if len(targets) == getattr(ctx, "num_states", -1) else None


def block_table_targets(tables: Iterable[Any], kind: str) -> list[Target]:
    """One Target per block table. vLLM accepts any object with ``data_ptr()`` and ``stride()`` as a
    block table; one that is not a tensor has no extent ptrlint can read: its entry is checked for its
    round trip (the address it was filled from) and not against the registered regions."""
    out = []
    for i, table in enumerate(tables):
        if is_tensor(table):
            out.append(tensor_target(table, f"{kind} {i}"))
        else:
            out.append(
                Target(
                    address=int(table.data_ptr()),
                    nbytes=0,
                    bounded=False,
                    label=f"{kind} {i} (a {type(table).__name__}: its extent is unknown)",
                )
            )
    return out


def is_tensor(value: Any) -> bool:
    """A torch tensor: what can be registered and measured (a duck-typed block table is not)."""
    return isinstance(value, torch.Tensor)


def record_targets(ctx: Any, targets: dict[str, list[Target] | None]) -> None:
    setattr(ctx, _TARGETS, {name: found for name, found in targets.items() if found is not None})


def _lengths(ctx: Any) -> dict[str, int | None]:
    groups = getattr(ctx, "num_groups", None)
    return {
        "state_base_addrs": getattr(ctx, "num_states", None),
        "block_table_ptrs": groups,
        "aligned_index_block_table_ptrs": groups,
    }


def check_context(
    ctx: Any,
    level: str,
    tables: Iterable[str] = TABLES,
    *,
    overlaps: bool = False,
    regions: MemoryRegions | None = None,
) -> None:
    """Validate a context's address tables at ``level`` (see the module docstring)."""
    if level == "off":
        return
    targets: dict[str, list[Target]] = getattr(ctx, _TARGETS, None) or {}
    lengths = _lengths(ctx)
    for name in tables:
        table = getattr(ctx, name, None)
        if table is None:
            continue
        label = f"{CONTEXT}.{name}"
        found = targets.get(name)
        if level != "strict" or found is None:  # no record of what it was filled from: the plain checks
            check_address_table(table, label, level=level, length=lengths[name], regions=regions)
            continue
        check_address_table(table, label, level="fast", length=lengths[name])
        check_targets(table, label, found, regions if regions is not None else default_regions())
        if overlaps:
            check_layer_overlaps(label, found)


_BIND = (
    "Bind the caches through vLLM's bind_kv_cache_to_layers with the guard installed, or "
    "ptrlint.runtime.register(tensor) them"
)


def check_targets(
    table: Any, name: str, targets: list[Target], regions: MemoryRegions, *, remedy: str | None = None
) -> None:
    """Strict, per entry (vectorised): non-null, the round trip to its target, its span inside a region.
    ``remedy`` ends the message of an entry outside every region (default: bind the caches)."""
    values = host_array(table.detach(), name).view(np.uint64)
    real = to_real_array(values)
    want = np.array([to_real(t.address) for t in targets], dtype=np.uint64)
    last = want + np.array([max(t.nbytes, 1) - 1 for t in targets], dtype=np.uint64)  # inclusive end
    unbounded = np.array([not t.bounded for t in targets], dtype=bool)  # duck-typed: the round trip only
    bad = np.flatnonzero((values == 0) | (real != want) | ~(regions.contains(want, last) | unbounded))
    if not len(bad):
        return
    i = int(bad[0])
    target, stored, addr = targets[i], int(values[i]), int(real[i])
    if stored == 0:
        raise PointerBoundsError(
            f"entry {i} of {name}: null address; a kernel would read the table before it was filled "
            f"(fill it from {target.label} first)"
        )
    if int(last[i]) < int(want[i]):
        raise PointerBoundsError(
            f"entry {i} of {name}: {target.label} [{_shown(stored, addr)}, +{target.nbytes}) runs past 2**64 "
            "(its end wraps around to a low address): no allocation can hold it; the address or the size is wrong"
        )
    if addr != int(want[i]):
        raise PointerRoundTripError(
            f"entry {i} of {name}: address {_shown(stored, addr)} is not the address it was filled from "
            f"({target.label} at {int(want[i]):#x}, {target.nbytes} bytes): the entry was overwritten, or the "
            f"address truncated or sign-mangled on its way in. {_write_remedy(table)}"
        )
    raise PointerBoundsError(
        f"entry {i} of {name}: {target.label} [{_shown(stored, addr)}, +{target.nbytes}) is not inside one "
        f"registered region; {regions.nearest(addr)}. {remedy or _BIND}"
    )


def _write_remedy(table: Any) -> str:
    """How to write an address into a table of this dtype so that it arrives intact, and never after the fill."""
    if getattr(table, "dtype", None) == torch.int64:
        return (
            "Write addresses through a uint64 reinterpretation (the int64 reading of the address's 64 bits, "
            "as vLLM's _reinterpret_u64_as_i64 does) and never after the fill"
        )
    return "Store each address as it is (data_ptr(): uint64 holds every address) and never after the fill"


def _block_overlap(a: Target, b: Target) -> bool:
    """Do the per-block windows of two states overlap (same stride), or their spans (otherwise)?"""
    lo, hi = (a, b) if to_real(a.address) <= to_real(b.address) else (b, a)
    delta = to_real(hi.address) - to_real(lo.address)
    if lo.block_stride and lo.block_stride == hi.block_stride:
        shift = delta % lo.block_stride
        return shift < lo.block_bytes or shift + hi.block_bytes > lo.block_stride
    return delta < lo.nbytes


def check_layer_overlaps(name: str, targets: list[Target]) -> None:
    """States of one layer must not share a byte within a block: the kernels write them at once."""
    by_layer: dict[str, list[int]] = {}
    for i, target in enumerate(targets):
        if target.layer and target.nbytes:
            by_layer.setdefault(target.layer, []).append(i)
    for entries in by_layer.values():
        for x, i in enumerate(entries):
            for j in entries[x + 1 :]:
                a, b = targets[i], targets[j]
                if _block_overlap(a, b):
                    raise PointerOverlapError(
                        f"entries {i} and {j} of {name}: {a.label} ({a.block_bytes} bytes per block, stride "
                        f"{a.block_stride}) and {b.label} ({b.block_bytes} bytes per block, stride {b.block_stride}) "
                        f"share bytes, {to_real(b.address) - to_real(a.address):+d} bytes apart; a fused copy of one "
                        "would overwrite the other. The layer's page layout (state sizes, alignment, padding) is wrong"
                    )


# ----- launch sites ---------------------------------------------------------------------------------
def launch_sites(cls: Any) -> dict[str, tuple[str, ...]]:
    """The context's methods that hand address tables to a call (a kernel launch), and which tables.

    Read from the source, so a release that adds or renames a launch is followed; empty when the
    source is unavailable.
    """
    sites: dict[str, tuple[str, ...]] = {}
    for name, function in vars(cls).items():
        if not inspect.isfunction(function):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        except (OSError, TypeError, SyntaxError):
            continue
        passed: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for arg in (*node.args, *(k.value for k in node.keywords)):
                    if (
                        isinstance(arg, ast.Attribute)
                        and arg.attr in TABLES
                        and isinstance(arg.value, ast.Name)
                        and arg.value.id == "self"
                    ):
                        passed.add(arg.attr)
        if passed:
            sites[name] = tuple(t for t in TABLES if t in passed)
    return sites


def _capturing() -> bool:
    """Inside a CUDA graph capture a device-to-host read is illegal; strict reads wait for a replay-free launch."""
    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


def make_launch(
    original: Callable[..., Any],
    tables: tuple[str, ...],
    level: str,
    sync_allowed: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
) -> Callable[..., Any]:
    """Check the tables a launch method reads, then run it (vLLM returns early before the fill)."""

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "is_initialized", True):
            at = "fast" if level == "strict" and _capturing() else level
            with sync_allowed() if sync_allowed is not None and at == "strict" else contextlib.nullcontext():
                check_context(self, at, tables)
        return original(self, *args, **kwargs)

    functools.update_wrapper(launch, original)
    return launch


def to_real_tables(ctx: Any) -> None:
    """Under simulated high addresses: rewrite the filled tables to real addresses (kernels dereference them)."""
    for name in TABLES:
        table = getattr(ctx, name, None)
        if table is not None and table.dtype in (torch.int64, torch.uint64) and table.numel():
            table.copy_(to_real_tensor(table.view(torch.uint64)).view(table.dtype))


__all__ = [
    "TABLES",
    "Target",
    "block_table_targets",
    "check_context",
    "check_layer_overlaps",
    "check_targets",
    "launch_sites",
    "make_launch",
    "record_targets",
    "span",
    "state_targets",
    "tensor_target",
    "to_real_tables",
]
