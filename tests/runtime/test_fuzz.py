"""Property test: strict mode rejects every invalid table before a byte moves, copies every valid one."""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptrlint.runtime import MemoryRegions, PointerGuardError, batch_memcpy

BUF = 256
EXAMPLES = int(os.environ.get("PTRLINT_FUZZ_EXAMPLES", "300"))


class Memory:
    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(1)
        self.bufs = [torch.randint(0, 256, (BUF,), dtype=torch.uint8, generator=gen) for _ in range(3)]
        self.regions = MemoryRegions()
        self.regions.add(self.bufs[0])
        self.regions.add(self.bufs[1])  # bufs[2] exists but is not registered

    def base(self, which: int) -> int:
        return self.bufs[which].data_ptr()

    def snapshot(self) -> list[bytes]:
        return [bytes(b.numpy().tobytes()) for b in self.bufs]


MEM = Memory()
WILD = [0, 2**63, 2**63 + 4096, 2**64 - 1, 2**64 - 16, 4096]

entry = st.tuples(
    st.one_of(st.tuples(st.integers(0, 2), st.integers(-2, BUF + 2)), st.sampled_from(WILD).map(lambda a: (None, a))),
    st.one_of(st.tuples(st.integers(0, 2), st.integers(-2, BUF + 2)), st.sampled_from(WILD).map(lambda a: (None, a))),
    st.one_of(st.integers(0, 40), st.sampled_from([0, 1, BUF, BUF + 1, -1, 2**31, 2**31 - 1])),
)


def _addr(spec: tuple) -> int:
    which, value = spec
    return value if which is None else MEM.base(which) + value


def oracle(table: list[tuple[int, int, int]]) -> bool:
    """Independent, plain-Python statement of the strict rules."""
    regions = [(MEM.base(0), MEM.base(0) + BUF), (MEM.base(1), MEM.base(1) + BUF)]
    live = []
    for s, d, n in table:
        if n < 0 or n >= 2**31:
            return False
        if n == 0:
            continue
        for a in (s, d):
            if a == 0 or a + n > 2**64 or not any(lo <= a and a + n <= hi for lo, hi in regions):
                return False
        live.append((s, d, n))
    for i, (s1, d1, n1) in enumerate(live):
        for j, (s2, d2, n2) in enumerate(live):
            if i != j and d1 < d2 + n2 and d2 < d1 + n1:
                return False
            if i != j and d1 < s2 + n2 and s2 < d1 + n1:
                return False
            if i == j and s1 < d1 < s1 + n1:
                return False
    return True


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(entry, min_size=0, max_size=6))
def test_strict_mode_against_the_oracle(entries):
    table = [(_addr(s), _addr(d), n) for s, d, n in entries]
    valid = oracle(table)
    before = MEM.snapshot()
    src = torch.tensor([t[0] for t in table], dtype=torch.uint64)
    dst = torch.tensor([t[1] for t in table], dtype=torch.uint64)
    sizes = torch.tensor([t[2] for t in table], dtype=torch.int64)
    if not valid:
        with pytest.raises(PointerGuardError):
            batch_memcpy(src, dst, sizes, check="strict", regions=MEM.regions)
        assert MEM.snapshot() == before, "an invalid table moved bytes"
        return
    # expected result: apply each copy to a model of memory
    model = {i: bytearray(b) for i, b in enumerate(before)}

    def locate(addr: int) -> tuple[int, int]:
        for i in range(3):
            if MEM.base(i) <= addr < MEM.base(i) + BUF:
                return i, addr - MEM.base(i)
        raise AssertionError("valid table outside memory")

    for s, d, n in table:
        if n:
            si, so = locate(s)
            di, do = locate(d)
            chunk = bytes(model[si][so : so + n])
            model[di][do : do + n] = chunk
    batch_memcpy(src, dst, sizes, check="strict", regions=MEM.regions)
    assert MEM.snapshot() == [bytes(model[i]) for i in range(3)]
