"""Lazy, explained import of torch and numpy (the runtime extra).

The bottom of the runtime: it imports nothing of ours. $PTRLINT_SIMULATE_HIGH_ADDRESSES is
honoured by the package itself (``ptrlint.runtime.__init__`` loads ``simulate`` when it is set),
so every part of the runtime sees the mode without a circle through this module."""

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
