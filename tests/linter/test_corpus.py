"""The shared corpora (../shared/corpus) are the executable spec: each must pass exactly.

``cases/`` (01-51), ``v2/`` (52-71, the evidence model v2) and ``cross_module/`` (a package whose
evidence crosses modules), each checked by the corpus's own ``check.py`` against this ptrlint.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from ..conftest import CORPUS, needs_shared


@pytest.mark.parametrize("corpus", [".", "v2", "cross_module"], ids=["main", "v2", "cross_module"])
def test_shared_corpus_passes_exactly(corpus):
    needs_shared(CORPUS / "check.py")
    needs_shared(CORPUS / corpus / "cases")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "check.py"), "--cmd", cmd, "--corpus", str(CORPUS / corpus)],
        capture_output=True, text=True, timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing=0 unexpected=0 fixdiff=0" in last
