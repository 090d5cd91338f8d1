"""The catalogue of address APIs: calls and attributes whose value is a memory address.

Beyond ``Tensor.data_ptr()``, ``.ctypes.data``, ``ctypes.addressof``/``ctypes.cast`` and the
array interfaces, these are the places real code gets addresses from. Wherever their value
flows (lists, tables, element stores, containers, other modules), it is a pointer value.
Extend it with the ``pointer-functions`` setting (qualified or bare names). Imports nothing.

Names in :data:`PEER_ADDRESS_FUNCTIONS`, :data:`TUPLE_ADDRESS_FUNCTIONS` and
:data:`POINTER_OBJECTS` are distinctive and are matched by their last name wherever they
resolve (a binding module, ``ctypes.CDLL``, ``cffi``, pybind11). The generic names of CuPy's
and numba's runtimes are matched by qualified name only.
"""

from __future__ import annotations

import re

# OpenSHMEM-style translation of a local symmetric address into a peer's (NVSHMEM, OpenSHMEM,
# ROCm SHMEM, Intel SHMEM and their Python bindings, e.g. `pynvshmem.nvshmem_ptr(p, pe)`).
PEER_ADDRESS_FUNCTIONS = frozenset(
    {
        "nvshmem_ptr",
        "nvshmemx_ptr",
        "nvshmem_mc_ptr",
        "nvshmemx_mc_ptr",
        "shmem_ptr",
        "shmemx_ptr",
        "roc_shmem_ptr",
        "rocshmem_ptr",
        "roc_shmemx_ptr",
        "ishmem_ptr",
        "ishmemx_ptr",
    }
)

_PEER_ADDRESS_PATTERN = re.compile(r"(?:nv|roc_?|i)?shmemx?_(?:mc_)?ptr(?:_[a-z0-9]+)*", re.IGNORECASE)


def is_peer_address_function(name: str | None) -> bool:
    """An OpenSHMEM-style translation of a symmetric address into a peer's, whatever the binding calls
    its variants or whichever object it is reached through: ``nvshmem_ptr``, ``ms.shmem_ptr_p2p``,
    ``roc_shmem_ptr``."""
    return name is not None and (name in PEER_ADDRESS_FUNCTIONS or _PEER_ADDRESS_PATTERN.fullmatch(name) is not None)


# cuda-python (``cuda.bindings.driver``/``runtime``, the older ``cuda.cuda``/``cuda.cudart``) and
# hip-python return ``(error, value, ...)``: the address is item 1 of the result.
TUPLE_ADDRESS_FUNCTIONS: dict[str, int] = {
    name: 1
    for name in (
        # CUDA driver
        "cuMemAlloc",
        "cuMemAlloc_v2",
        "cuMemAllocManaged",
        "cuMemAllocPitch",
        "cuMemAllocPitch_v2",
        "cuMemAllocAsync",
        "cuMemAllocFromPoolAsync",
        "cuMemAllocHost",
        "cuMemAllocHost_v2",
        "cuMemHostAlloc",
        "cuMemHostGetDevicePointer",
        "cuMemHostGetDevicePointer_v2",
        "cuMemAddressReserve",
        "cuMemGetAddressRange",
        "cuMemGetAddressRange_v2",
        "cuIpcOpenMemHandle",
        "cuIpcOpenMemHandle_v2",
        "cuGraphicsResourceGetMappedPointer",
        "cuMemPoolImportPointer",
        "cuMulticastBindAddr",
        # CUDA runtime
        "cudaMalloc",
        "cudaMallocManaged",
        "cudaMallocPitch",
        "cudaMallocAsync",
        "cudaMallocFromPoolAsync",
        "cudaMallocHost",
        "cudaHostAlloc",
        "cudaHostGetDevicePointer",
        "cudaIpcOpenMemHandle",
        "cudaGraphicsResourceGetMappedPointer",
        "cudaMemPoolImportPointer",
        # HIP
        "hipMalloc",
        "hipMallocManaged",
        "hipMallocPitch",
        "hipMallocAsync",
        "hipMallocFromPoolAsync",
        "hipHostMalloc",
        "hipExtMallocWithFlags",
        "hipHostGetDevicePointer",
        "hipIpcOpenMemHandle",
        "hipMemAddressReserve",
        "hipMemGetAddressRange",
    )
}

# Driver pointer objects: ``int(CUdeviceptr(...))`` and ``CUdeviceptr(...).getPtr()`` are addresses.
POINTER_OBJECTS = frozenset({"CUdeviceptr", "CUdeviceptr_v1", "CUdeviceptr_v2", "hipDeviceptr_t"})
POINTER_METHODS = frozenset({"getPtr"})  # cuda-python objects: the address of the wrapped value

# Plain-int results of runtimes with generic names (matched by qualified name).
QUALIFIED_ADDRESS_FUNCTIONS = frozenset(
    {
        "torch.cuda.caching_allocator_alloc",
        "torch.cuda.memory.caching_allocator_alloc",
        "cupy.cuda.runtime.malloc",
        "cupy.cuda.runtime.mallocManaged",
        "cupy.cuda.runtime.mallocAsync",
        "cupy.cuda.runtime.mallocFromPoolAsync",
        "cupy.cuda.runtime.hostAlloc",
        "cupy.cuda.runtime.ipcOpenMemHandle",
        "cupy.cuda.runtime.hostGetDevicePointer",
        "numba.cuda.cudadrv.driver.device_pointer",
        "numba.cuda.cudadrv.driver.host_pointer",
        "numba.cuda.cudadrv.driver.get_devptr_for_active_ctx",
    }
)

# CuPy memory objects whose ``.ptr`` is the address: ``arr.data.ptr`` (``ndarray.data`` is a
# MemoryPointer) and the results of these calls (by last name: pools are reached through objects).
# CuPy declares ``ptr`` an ``intptr_t``: the address's bits read as signed (a WRAPPED value, negative from
# 2**63 on), kept by an int64 table and rejected by a uint64 one (PTR009). So do the allocations of its
# runtime module (``cupy.cuda.runtime.malloc(n) -> intptr_t``) above.
CUPY_MEMORY_CALLS = frozenset(
    {
        "alloc",
        "malloc",
        "malloc_managed",
        "malloc_async",
        "alloc_pinned_memory",
        "MemoryPointer",
        "PinnedMemoryPointer",
        "UnownedMemory",
        "BaseMemory",
        "ManagedMemory",
    }
)

# Attributes that are addresses: PyTorch symmetric memory handles (tables and scalars).
ADDRESS_ATTRIBUTES = {
    "buffer_ptrs": "seq",
    "buffer_ptrs_dev": "seq",
    "signal_pad_ptrs": "seq",
    "signal_pad_ptrs_dev": "seq",
    "multicast_ptr": "scalar",
}
# numba device arrays: ``arr.device_ctypes_pointer.value`` (a ``c_void_p``'s value).
CTYPES_POINTER_ATTRIBUTES = frozenset({"device_ctypes_pointer"})

# Words the prefilter must keep (lower case): each catalogue entry spells one of them.
PREFILTER_TOKENS = (
    "shmem",
    "malloc",
    "memalloc",
    "hostalloc",
    "ipcopenmemhandle",
    "deviceptr",
    "getptr",
    "addressreserve",
    "getdevicepointer",
    "getaddressrange",
    "getmappedpointer",
    "importpointer",
    "bindaddr",
    "device_ctypes_pointer",
    "caching_allocator_alloc",
)


# Calls that allocate or map memory and return its address, by their last name wherever they resolve
# (a binding's `alloc_uncached(n)`, `open_mem_handle(h)`, `pool.malloc(n)`): named, not catalogued one by
# one, so their values are addresses by name (NAMED), of unknown encoding. Not `alloc`/`allocate` alone:
# KV-cache block allocators hand out block ids under those names.
_ALLOCATION_NAME = re.compile(
    r"(?:\w+_)?(?:malloc|mem_?alloc|alloc_(?:uncached|pinned|host|device|managed|memory)|(?:ipc_)?open_mem_handle|"
    r"import_mem(?:ory)?|map_memory|mem_?map)(?:_\w+)?",
    re.IGNORECASE,
)


def is_allocation_name(name: str | None) -> bool:
    """``alloc_uncached``, ``open_mem_handle``, ``cuda_malloc_host``: a call that returns new memory's address."""
    return name is not None and _ALLOCATION_NAME.fullmatch(name) is not None


def tuple_address_position(last_name: str | None) -> int | None:
    """Item of the result tuple that holds the address (``err, ptr = cudart.cudaMalloc(n)``)."""
    return TUPLE_ADDRESS_FUNCTIONS.get(last_name or "")
