"""Evidence that the guard is load-bearing: unguarded, a bad table kills the process."""

from __future__ import annotations

import signal
import subprocess
import sys

SCRIPT = """
import sys, torch
from ptrlint.runtime import batch_memcpy, MemoryRegions, PointerBoundsError
dst = torch.zeros(4096, dtype=torch.uint8)
regions = MemoryRegions(); regions.add(dst)
table = (torch.tensor([0x8000000000001000], dtype=torch.uint64),
         torch.tensor([dst.data_ptr()], dtype=torch.uint64),
         torch.tensor([4096], dtype=torch.int32))
mode = sys.argv[1]
if mode == "guarded":
    try:
        batch_memcpy(*table, check="strict", regions=regions)
    except PointerBoundsError as exc:
        print("REJECTED", exc)
        sys.exit(0)
    sys.exit(3)
batch_memcpy(*table, check="off")
print("survived")
"""


def _run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=120)


def test_unguarded_bad_address_segfaults_but_guarded_raises():
    unguarded = _run("off")
    assert unguarded.returncode == -signal.SIGSEGV, (unguarded.returncode, unguarded.stdout, unguarded.stderr)
    guarded = _run("guarded")
    assert guarded.returncode == 0, guarded.stderr
    assert "REJECTED entry 0" in guarded.stdout and "0x8000000000001000" in guarded.stdout
