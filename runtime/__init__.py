"""ptrlint.runtime: uint64 pointer buffers, a guarded batched copy and simulated high addresses.

Needs torch and numpy (the ``runtime`` extra); never imports libcst or the linter. The names
below load on first use, so the pytest plugin (``ptrlint.runtime.pytest_plugin``) can be
registered in every environment without importing torch until a run asks for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._env import requested_value

_EXPORTS: dict[str, str] = {
    "CpuGpuBuffer": "buffers",
    "batch_memcpy": "copy",
    "PointerBoundsError": "errors",
    "PointerCastError": "errors",
    "PointerDtypeError": "errors",
    "PointerGuardError": "errors",
    "PointerOverlapError": "errors",
    "PointerRoundTripError": "errors",
    "MemoryRegions": "regions",
    "Region": "regions",
    "assert_pointer_buffer": "guard",
    "default_regions": "regions",
    "guard_level": "guard",
    "register": "regions",
    "store_pointer": "guard",
    "unregister": "regions",
    "verify_upload": "guard",
    "KVCacheConfig": "mamba",
    "KVCacheGroupSpec": "mamba",
    "MambaCopyBuffers": "mamba",
    "MambaCopySpec": "mamba",
    "MambaSpec": "mamba",
    "collect_mamba_copy_meta": "mamba",
    "do_mamba_copy_block": "mamba",
    "get_conv_copy_spec": "mamba",
    "get_mamba_group_ids": "mamba",
    "get_mamba_groups": "mamba",
    "get_temporal_copy_spec": "mamba",
    "make_buffer_factory": "mamba",
    "validate_mamba_state_copy_funcs": "mamba",
    "real_addresses": "simulate",
    "simulate_high_addresses": "simulate",
}

__all__ = sorted(_EXPORTS)  # the export list is _EXPORTS; the TYPE_CHECKING imports below give their types


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ptrlint.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# `PTRLINT_SIMULATE_HIGH_ADDRESSES=1` takes effect when the package is imported (loading torch
# then); without it, importing the package stays free of torch.
if requested_value() is not None:
    importlib.import_module(f"{__name__}.simulate")


if TYPE_CHECKING:
    from .buffers import CpuGpuBuffer
    from .copy import batch_memcpy
    from .errors import (
        PointerBoundsError,
        PointerCastError,
        PointerDtypeError,
        PointerGuardError,
        PointerOverlapError,
        PointerRoundTripError,
    )
    from .guard import (
        assert_pointer_buffer,
        guard_level,
        store_pointer,
        verify_upload,
    )
    from .mamba import (
        KVCacheConfig,
        KVCacheGroupSpec,
        MambaCopyBuffers,
        MambaCopySpec,
        MambaSpec,
        collect_mamba_copy_meta,
        do_mamba_copy_block,
        get_conv_copy_spec,
        get_mamba_group_ids,
        get_mamba_groups,
        get_temporal_copy_spec,
        make_buffer_factory,
        validate_mamba_state_copy_funcs,
    )
    from .regions import (
        MemoryRegions,
        Region,
        default_regions,
        register,
        unregister,
    )
    from .simulate import real_addresses, simulate_high_addresses
