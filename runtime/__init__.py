"""ptrlint.runtime: uint64 pointer buffers and a guarded batched copy (needs torch).

Never imports libcst or the linter.
"""

from .buffers import CpuGpuBuffer
from .copy import batch_memcpy
from .errors import (
    PointerBoundsError,
    PointerDtypeError,
    PointerGuardError,
    PointerOverlapError,
    PointerRoundTripError,
)
from .guard import (
    MemoryRegions,
    Region,
    assert_pointer_buffer,
    default_regions,
    guard_level,
    register,
    store_pointer,
    unregister,
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
    get_mamba_groups,
    get_temporal_copy_spec,
    make_buffer_factory,
)

__all__ = [
    "CpuGpuBuffer",
    "KVCacheConfig",
    "KVCacheGroupSpec",
    "MambaCopyBuffers",
    "MambaCopySpec",
    "MambaSpec",
    "MemoryRegions",
    "PointerBoundsError",
    "PointerDtypeError",
    "PointerGuardError",
    "PointerOverlapError",
    "PointerRoundTripError",
    "Region",
    "assert_pointer_buffer",
    "batch_memcpy",
    "collect_mamba_copy_meta",
    "default_regions",
    "do_mamba_copy_block",
    "get_conv_copy_spec",
    "get_mamba_groups",
    "get_temporal_copy_spec",
    "guard_level",
    "make_buffer_factory",
    "register",
    "store_pointer",
    "unregister",
    "verify_upload",
]
