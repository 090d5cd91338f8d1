"""Lazy, explained import of torch and numpy (the runtime extra)."""

from __future__ import annotations

try:
    import numpy as np
    import torch
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ptrlint.runtime needs torch and numpy: pip install 'ptrlint[runtime]' "
        "(pin torch yourself, e.g. torch==2.13.0, to avoid pulling a CUDA build)"
    ) from exc

__all__ = ["np", "torch"]


# $PTRLINT_SIMULATE_HIGH_ADDRESSES takes effect as soon as any part of the runtime loads: the
# simulate module turns the mode on at the end of its own import.
from . import simulate as _simulate  # noqa: F401
