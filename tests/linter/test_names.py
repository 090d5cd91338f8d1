"""Name resolution through the scope model: aliases, shadowing, globals, nested scopes."""

from __future__ import annotations

import pytest

from ptrlint.config import Config
from ptrlint.engine import analyse, select_codes

ALL = select_codes(["ALL"], [], [])


def codes(source: str) -> list[str]:
    return [f"{f.line}:{f.code}" for f in analyse(source, "m.py", Config(), ALL)]


@pytest.mark.parametrize(
    "source, expected",
    [
        # import spellings
        ("import torch as th\nx = th.tensor([t.data_ptr() for t in ts], dtype=th.long)\n", ["2:PTR001"]),
        (
            "from torch import int64 as i64\nimport torch\nx = torch.tensor([t.data_ptr() for t in ts], dtype=i64)\n",
            ["3:PTR001"],
        ),
        ("import numpy\nx = numpy.asarray([a.ctypes.data for a in xs], dtype=numpy.longlong)\n", ["2:PTR001"]),
        ("import torch.nn\nx = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n", ["2:PTR001"]),
        # an import at the bottom of the module still counts inside functions defined above it
        (
            "def f(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nimport torch\n",
            ["2:PTR001"],
        ),
        # a parameter or local named torch/np is not the module
        (
            "import torch\ndef f(torch, ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n",
            [],
        ),
        (
            "import numpy as np\ndef f(ts):\n    np = load()\n    return np.array([t.data_ptr() for t in ts], dtype=np.int64)\n",
            [],
        ),
        # a later local assignment makes the name local for the whole function
        (
            "import torch\ndef f(ts):\n    x = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n    torch = None\n",
            [],
        ),
        # `global` makes the module binding visible
        (
            "import torch\ndef f(ts):\n    global torch\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n",
            ["4:PTR001"],
        ),
        # self.attr in a comprehension inside a method is still the class attribute
        (
            "import torch\nclass A:\n    def __init__(self, n):\n        self.table = torch.zeros(n, dtype=torch.int64)\n"
            "    def fill(self, ts):\n        [self.table.numpy().__setitem__(i, 0) for i in range(3)]\n"
            "        v = self.table.numpy()\n        v[0] = ts[0].data_ptr()\n",
            ["4:PTR001"],
        ),
        # class-body names are not visible in methods
        (
            "import torch\nclass A:\n    torch = None\n    def f(self, ts):\n"
            "        return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n",
            ["5:PTR001"],
        ),
        # local variables with the same name in two functions are different buffers
        (
            "import torch\ndef a(ts):\n    buf = torch.zeros(4, dtype=torch.int64)\n    buf[0] = ts[0].data_ptr()\n"
            "def b():\n    buf = torch.zeros(4, dtype=torch.int64)\n    return buf\n",
            ["3:PTR001", "4:PTR005"],
        ),
    ],
)
def test_resolution(source, expected):
    assert codes(source) == expected
