"""Minimal cases distilled from reviewing ptrlint's findings on installed package trees."""

from __future__ import annotations

import pytest

from ptrlint.config import Config
from ptrlint.engine import analyse, select_codes

ALL = select_codes(["ALL"], [], [])


def codes(source: str) -> list[str]:
    return [f"{f.line}:{f.code}" for f in analyse(source, "m.py", Config(), ALL)]


# torch/_native/ops/foreach_mm/nvmath_impl.py (torch 2.13): a pinned int64 buffer written through a
# ctypes POINTER(c_int64) view with data_ptr() values, then copied into an int64 device table.
NVMATH = """import ctypes
import torch


class GroupedMM:
    def __init__(self, g, device):
        self._pinned = torch.empty(3 * g, dtype=torch.int64, pin_memory=True)
        self._pinned_raw = ctypes.cast(self._pinned.data_ptr(), ctypes.POINTER(ctypes.c_int64))
        self._table = torch.empty(3 * g, dtype=torch.int64, device=device)

    def run(self, mats):
        h = self._pinned_raw
        for i, m in enumerate(mats):
            h[i] = m.data_ptr()
        self._table.copy_(self._pinned, non_blocking=True)
"""


def test_writes_through_a_ctypes_pointer_view_reach_the_buffer_and_flow_through_copy():
    # ctypes stores the addresses' bits into the pinned buffer without a range check, and `copy_` moves
    # the bits on: signed end to end, no failure (issue 54). The device table is written and, in this
    # excerpt, never read: a note that its values leave for readers ptrlint cannot see.
    found = analyse(NVMATH, "m.py", Config(), ALL)
    assert [(f.line, f.code, f.severity) for f in found] == [(9, "PTR001", "note")]
    assert "evidence" not in found[0].failure and "leave for code ptrlint cannot see" in found[0].failure


@pytest.mark.parametrize(
    "source",
    [
        # an address-sized integer that is not an address: a ctypes view of an index buffer
        "import ctypes, torch\nidx = torch.empty(4, dtype=torch.int64)\nv = ctypes.cast(idx.data_ptr(), ctypes.POINTER(ctypes.c_int64))\nv[0] = 5\n",
        # the pointer *of* a buffer is not stored in it
        "import torch\nbuf = torch.empty(4, dtype=torch.int64)\nlib.launch(buf.data_ptr(), 4)\n",
    ],
)
def test_no_false_positive(source):
    assert codes(source) == []


# torch/_inductor/kernel/vendored_templates/cutedsl/kernels/cutedsl_grouped_gemm.py (torch 2.13):
# addresses come back as item 0 of returned tuples, two calls deep, then become an int64 tensor.
CUTEDSL = """import torch


def create_tensor(shape):
    t = torch.empty(shape)
    return (t.data_ptr(), t, shape)


def create_all(shapes):
    ptrs_abc = []
    for shape in shapes:
        ptr_a, tensor_a, _ = create_tensor(shape)
        ptr_b, tensor_b, _ = create_tensor(shape)
        ptrs_abc.append([ptr_a, ptr_b])
    return (ptrs_abc, shapes)


def run(shapes, make_cute):
    (ptrs_abc, _shapes) = create_all(shapes)
    return make_cute(torch.tensor(ptrs_abc, dtype=torch.int64))
"""


def test_addresses_returned_in_tuples_are_traced_through_local_functions():
    assert codes(CUTEDSL) == ["20:PTR001"]
