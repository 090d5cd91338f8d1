"""The public corpus (../shared/corpus) is the executable spec: it must pass exactly."""

from __future__ import annotations

import shlex
import subprocess
import sys

from ..conftest import CORPUS, needs_shared


def test_public_corpus_passes_exactly():
    needs_shared(CORPUS / "check.py")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "check.py"), "--cmd", cmd], capture_output=True, text=True, timeout=600
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing=0 unexpected=0 fixdiff=0" in last
