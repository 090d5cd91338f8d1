"""A test-only perturbation of the order in which an index run takes its work.

The output of a run must be a function of its files and configuration alone: whatever order the
planner hands modules to the workers in, whichever worker finishes first, whatever each worker
analysed before. ``PTRLINT_TEST_PERMUTE=SEED`` (an integer) makes the planner shuffle every order
it is free to choose (the jobs of a round, the tasks a settle round walks, the modules parsed
ahead), and makes each worker sleep a short pseudo-random while before a job, so that the pool
assigns work differently from run to run. The determinism tests lint the same tree under many
seeds and job counts and compare the outputs byte for byte. Unset (the default), nothing changes.
"""

from __future__ import annotations

import os
import random
import time
import zlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
ENVIRONMENT = "PTRLINT_TEST_PERMUTE"


def seed() -> int | None:
    """The permutation seed of this run, or None (the normal, unperturbed order)."""
    raw = os.environ.get(ENVIRONMENT)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        return zlib.crc32(raw.encode())


def permuted(items: Sequence[T], salt: str) -> list[T]:
    """``items`` in the run's permuted order (``salt`` tells the call sites apart), or as they are."""
    value = seed()
    out = list(items)
    if value is not None and len(out) > 1:
        random.Random(f"{value}:{salt}:{len(out)}").shuffle(out)
    return out


def jitter(salt: str) -> None:
    """A short pseudo-random sleep (0-20 ms) when permuting: the pool's workers then take jobs in
    an order that differs by seed, and each worker's caches see a different history of jobs."""
    value = seed()
    if value is not None:
        time.sleep(random.Random(f"{value}:{salt}:{os.getpid()}").random() * 0.02)
