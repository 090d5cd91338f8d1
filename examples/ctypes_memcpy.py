"""Example: a direct cudaMemcpyAsync call through ctypes."""

import ctypes

import torch


def copy_to_host(lib: ctypes.CDLL, src: torch.Tensor, dst: torch.Tensor, stream: int) -> int:
    return lib.cudaMemcpyAsync(
        ctypes.c_int64(dst.data_ptr()),
        ctypes.c_int64(src.data_ptr()),
        ctypes.c_size_t(src.nbytes),
        ctypes.c_int(2),
        ctypes.c_void_p(stream),
    )
