"""vLLM's other address tables, checked where filled and where launched, and patched when their module loads.

vLLM 0.34 builds address tables outside the Mamba copy paths (``families.py`` lists the guarded
ones). Each table has one reader, a kernel, that expects one encoding: raw addresses in a uint64
table, or wrapped values (the int64 reading of the same 64 bits) in an int64 one. A table of the
other dtype, or one whose entries do not round-trip to the tensors they were filled from, is a wild
read or write on the first host that hands out addresses >= 2**63.

``check_table``: "fast" (O(1)) checks the dtype against the reader's encoding, 1-D and the entry
count; "strict" also checks every entry: non-null, equal (read as uint64) to the address it was
filled from, and that tensor's whole reachable span inside one registered region (``fused.py``).

``when_imported`` patches a vLLM module now when it is loaded, else the moment it is imported, so
``install()`` never imports a model's package (or anything a worker does not use) itself.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ._torch import torch
from .errors import PointerDtypeError, PointerGuardError
from .fused import Target, check_targets, span, tensor_target
from .regions import MemoryRegions, default_regions, dtype_name
from .simulate import active as simulating
from .simulate import to_real_tensor

RAW, WRAPPED = "raw", "wrapped"
_DTYPES = {RAW: torch.uint64, WRAPPED: torch.int64}
_MEANING = {
    RAW: "raw addresses in uint64 (create it with dtype=torch.uint64)",
    WRAPPED: "wrapped values in int64, the int64 reading of each address's 64 bits "
    "(torch.tensor(addrs, dtype=torch.uint64).view(torch.int64))",
}


def check_table(
    table: Any,
    name: str,
    targets: Sequence[Target] | None,
    *,
    encoding: str,
    level: str,
    regions: MemoryRegions | None = None,
    remedy: str | None = None,
) -> None:
    """Validate one address table against its reader's encoding and the tensors it was filled from."""
    if level == "off":
        return
    want = _DTYPES[encoding]
    dtype = getattr(table, "dtype", None)
    if not isinstance(table, torch.Tensor) or dtype != want:
        raise PointerDtypeError(
            f"{name} has dtype {dtype_name(table)}, but its kernel reads {_MEANING[encoding]}: another dtype truncates, "
            "sign-mangles or misreads addresses >= 2**63"
        )
    count = len(targets) if targets is not None else None
    if table.dim() != 1 or (count is not None and table.shape[0] != count):
        raise PointerGuardError(
            f"{name} must be 1-D with {count} entries (one per source tensor), got shape {tuple(table.shape)}"
        )
    if level == "strict" and targets is not None and table.numel():
        check_targets(table, name, list(targets), regions if regions is not None else default_regions(), remedy=remedy)


def targets_of(tensors: Sequence[Any], label: str) -> list[Target]:
    """One Target per source tensor: its address and its whole strided span."""
    return [tensor_target(tensor, f"{label} {i}") for i, tensor in enumerate(tensors)]


def reach_target(address: int, nbytes: int, label: str) -> Target:
    return Target(address=address, nbytes=nbytes, label=label)


def host_values(table: Any) -> list[int]:
    """A small table's entries as Python ints (a uint64 or int64 table read as uint64 bit patterns)."""
    if isinstance(table, torch.Tensor):
        values = table.detach().to("cpu")
        if values.dtype == torch.int64:
            values = values.view(torch.uint64)
        return [int(v) for v in values.numpy().tolist()]
    return [int(v) for v in table]


def to_real_table(table: Any) -> None:
    """Under simulated high addresses: rewrite a checked table to real addresses (its kernel dereferences them)."""
    if simulating() and isinstance(table, torch.Tensor) and table.dtype in _DTYPES.values() and table.numel():
        table.copy_(to_real_tensor(table.view(torch.uint64)).view(table.dtype))


def register_tensors(tensors: Sequence[Any], label: str) -> None:
    regions = default_regions()
    for i, tensor in enumerate(tensors):
        if isinstance(tensor, torch.Tensor) and tensor.numel():
            regions.ensure(tensor, f"{label} {i}")


def nbytes_of(tensor: Any) -> int:
    return span(tensor) if isinstance(tensor, torch.Tensor) else 0


def capturing() -> bool:
    """Inside a CUDA graph capture a device-to-host read is illegal: strict launch checks fall back to fast."""
    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


def launch_level(level: str) -> str:
    return "fast" if level == "strict" and capturing() else level


def sync_context(level: str) -> contextlib.AbstractContextManager[Any]:
    """vLLM's own permission to synchronise (0.34's ``gpu_sync_allowed``) around a strict read-back."""
    if level != "strict":
        return contextlib.nullcontext()
    try:
        allowed: Callable[[], contextlib.AbstractContextManager[Any]] = importlib.import_module(
            "vllm.utils.gpu_sync_debug"
        ).gpu_sync_allowed
    except (ImportError, AttributeError):
        return contextlib.nullcontext()
    return allowed()


def checked_launch(
    original: Callable[..., Any], check: Callable[..., None], level: str, *, with_args: bool = False
) -> Callable[..., Any]:
    """Check the tables a launch method reads (strict: read back inside vLLM's gpu_sync_allowed), then run it;
    ``with_args``: the check also gets the launch's arguments."""

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        at = launch_level(level)
        with sync_context(at):
            check(self, at, *args) if with_args else check(self, at)
        return original(self, *args, **kwargs)

    functools.update_wrapper(launch, original)
    return launch


# ----- patching a module when it loads ------------------------------------------------------------
def release_has(module: str) -> bool:
    """Whether the installed vLLM ships ``module`` (read from its files: nothing is imported but vllm)."""
    if module in sys.modules:
        return True
    root = sys.modules.get("vllm")
    base = os.path.dirname(getattr(root, "__file__", None) or "")
    if not base:
        return False
    parts = module.split(".")[1:]
    path = os.path.join(base, *parts)
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, patches: list[Callable[[ModuleType], None]]) -> None:
        self._loader = loader
        self._patches = patches

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self._loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        for patch in self._patches:
            patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ...: the real loader's
        return getattr(self._loader, name)


class _ImportHook(importlib.abc.MetaPathFinder):
    """Applies the pending patches of a module right after it is executed, once."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Callable[[ModuleType], None]]] = {}
        self.lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        with self.lock:
            patches = self.pending.pop(fullname, None)
        if patches is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: importlib.machinery.ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, patches)
                return spec
        return None


_hook = _ImportHook()


def when_imported(module: str, patch: Callable[[ModuleType], None]) -> bool:
    """Apply ``patch`` to ``module`` now if it is loaded (True), else when it is first imported (False)."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        patch(loaded)
        return True
    with _hook.lock:
        _hook.pending.setdefault(module, []).append(patch)
    if _hook not in sys.meta_path:
        sys.meta_path.insert(0, _hook)
    return False


__all__ = [
    "RAW",
    "WRAPPED",
    "check_table",
    "checked_launch",
    "host_values",
    "launch_level",
    "nbytes_of",
    "reach_target",
    "register_tensors",
    "release_has",
    "sync_context",
    "targets_of",
    "to_real_table",
    "when_imported",
]
