"""CpuGpuBuffer: a host tensor, its numpy view and a device twin (vLLM's API)."""

from __future__ import annotations

from typing import Any

from ._torch import np, torch


def accelerator_available() -> bool:
    accel = getattr(torch, "accelerator", None)
    if accel is not None and hasattr(accel, "is_available"):
        try:
            return bool(accel.is_available())
        except Exception:  # noqa: BLE001 - a broken backend means "no"
            return False
    return bool(torch.cuda.is_available())


class CpuGpuBuffer:
    """``.cpu`` (pinned when an accelerator exists), ``.np`` (numpy view of ``.cpu``), ``.gpu``.

    Write addresses through ``.np`` (full uint64 range); ``torch`` element writes of Python
    ints go through int64 and fail for addresses >= 2**63. On a CPU ``device`` ``.gpu`` is
    still a distinct tensor, so the upload path is exercised exactly as on a GPU.
    """

    def __init__(
        self, *size: int, dtype: torch.dtype, device: Any, pin_memory: bool | None = None, with_numpy: bool = True
    ) -> None:
        if pin_memory is None:
            pin_memory = accelerator_available()
        self.cpu = torch.zeros(*size, dtype=dtype, device="cpu", pin_memory=pin_memory)
        self.gpu = torch.zeros(*size, dtype=dtype, device=device)
        if with_numpy:
            if dtype == torch.bfloat16:
                raise ValueError("bfloat16 has no numpy dtype: create the CpuGpuBuffer with with_numpy=False")
            self.np: np.ndarray = self.cpu.numpy()

    def copy_to_gpu(self, n: int | None = None) -> torch.Tensor:
        if n is None:
            return self.gpu.copy_(self.cpu, non_blocking=True)
        return self.gpu[:n].copy_(self.cpu[:n], non_blocking=True)

    def copy_to_cpu(self, n: int | None = None) -> torch.Tensor:
        """Non-blocking: synchronise before reading the result."""
        if n is None:
            return self.cpu.copy_(self.gpu, non_blocking=True)
        return self.cpu[:n].copy_(self.gpu[:n], non_blocking=True)

    def __len__(self) -> int:
        return int(self.cpu.shape[0])
