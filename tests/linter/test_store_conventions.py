"""PTR005's store fix follows the module's own convention only where it is the same store (issue 62).

Table-driven: each module is fixed with ``ptrlint --fix`` and the stored line compared. The executable
versions of the positive classes (run at real and simulated high addresses) are in test_encodings.py.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HELPER = "def to_i64(p):\n    return p - (1 << 64) if p >= 1 << 63 else p\n\n\n"

CASES = {
    # (module, the fixed store line)
    "int64 table, module wrap helper": (
        HELPER + "def f(ts):\n    out = torch.zeros(3, dtype=torch.int64)\n    out[0] = ts[0].data_ptr()\n",
        "out[0] = to_i64(ts[0].data_ptr())",
    ),
    "uint64 table, wrap helper: not for a uint64 table": (
        HELPER + "def f(ts):\n    out = torch.zeros(3, dtype=torch.uint64)\n    out[0] = ts[0].data_ptr()\n",
        "out[0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "helper shadowed at the store": (
        HELPER + "def f(ts, to_i64):\n    out = torch.zeros(3, dtype=torch.int64)\n    out[0] = ts[0].data_ptr()\n",
        "out[0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "uint64 table, view bound before": (
        "def f(ts):\n    out = torch.zeros(3, dtype=torch.uint64)\n    v = out.numpy()\n    out[0] = ts[0].data_ptr()\n",
        "v[0] = ts[0].data_ptr()",
    ),
    "view bound after the store": (
        "def f(ts):\n    out = torch.zeros(3, dtype=torch.uint64)\n    out[0] = ts[0].data_ptr()\n    v = out.numpy()\n",
        "out[0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "view bound in a branch": (
        "def f(ts, c):\n    out = torch.zeros(3, dtype=torch.uint64)\n    if c:\n        v = out.numpy()\n"
        "    out[0] = ts[0].data_ptr()\n",
        "out[0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "a slice of the table is not its view": (
        "def f(ts):\n    out = torch.zeros(5, dtype=torch.uint64)\n    v = out.numpy()\n    out[2:][0] = ts[0].data_ptr()\n",
        "out[2:][0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "int64 table, view: numpy would refuse the address": (
        "def f(ts):\n    out = torch.zeros(3, dtype=torch.int64)\n    v = out.numpy()\n    out[0] = ts[0].data_ptr()\n",
        "out[0] = torch.tensor(ts[0].data_ptr(), dtype=torch.uint64)",
    ),
    "member view made in __init__": (
        "class T:\n    def __init__(self):\n        self.p = torch.zeros(3, dtype=torch.uint64)\n"
        "        self.p_np = self.p.numpy()\n\n    def bind(self, t):\n        self.p[0] = t.data_ptr()\n",
        "self.p_np[0] = t.data_ptr()",
    ),
    "a factory's .np only where the module uses it": (
        "class T:\n    def __init__(self):\n        self.b = CpuGpuBuffer(3, dtype=torch.uint64)\n\n"
        "    def bind(self, t):\n        self.b.cpu[0] = t.data_ptr()\n",
        "self.b.cpu[0] = torch.tensor(t.data_ptr(), dtype=torch.uint64)",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_store_fix_follows_the_module_only_where_it_is_the_same_store(name: str, tmp_path: Path) -> None:
    source, fixed_line = CASES[name]
    path = tmp_path / "m.py"
    path.write_text("import torch\n\n\n" + textwrap.dedent(source))
    subprocess.run(
        [sys.executable, "-m", "ptrlint", "--fix", "--no-cache", "--exit-zero", "--select", "PTR005", str(path)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    lines = [line.strip() for line in path.read_text().splitlines()]
    assert fixed_line in lines, path.read_text()
