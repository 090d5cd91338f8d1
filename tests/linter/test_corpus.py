"""The shared corpora (../shared/corpus) are the executable spec: each must pass exactly.

``cases/`` (01-51), ``v2/`` (52-71, the evidence model v2) and ``cross_module/`` (a package whose
evidence crosses modules), each checked by the corpus's own ``check.py`` against this ptrlint;
``v3/`` (72-85) is run by its ``execcheck.py``: every case is linted, fixed and executed at real
and simulated high addresses.

The ``fixed/`` files of the first two batches predate the third batch's fix safety (DESIGN.md:
where v3 refines fix safety, v3 wins), in two ways: tables handed to compiled operators or
imported extensions (``torch.ops.*``, ``from fused_ops import ...``) now get the bit-preserving
fix (``.view(<signed dtype>)`` after an unsigned creation), and PTR005 stores now get a fix
(``buf[i] = torch.tensor(p, dtype=torch.uint64)``). For those corpora the findings must still be
exact, and a fixed file may differ from its ``fixed/`` version only by these two forms: views
whose fix names a consumer outside the project, and store wraps on the lines marked PTR005.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import CORPUS, needs_shared

_SIGNED_VIEW = re.compile(r"\)\.view\((?:[A-Za-z_]\w*\.)?(?:int64|long|i64)\)")
_STORE_WRAP = re.compile(r"(\w+)\.tensor\((.+), dtype=\1\.uint64\)")


def _without_v3_forms(text: str) -> str:
    lines = []
    for line in _SIGNED_VIEW.sub(")", text).splitlines(keepends=True):
        lines.append(_STORE_WRAP.sub(r"\2", line) if "expect: PTR005" in line else line)
    return "".join(lines)


def _differs_by_v3_forms_only(case: Path, fixed: Path, tmp_path: Path) -> None:
    """``case`` fixed by ptrlint equals ``fixed`` once the third batch's fix forms are taken out,
    and every bit-preserving fix names a consumer outside the project."""
    work = tmp_path / case.name
    shutil.copy(case, work)
    subprocess.run([sys.executable, "-m", "ptrlint", "--fix", "--no-cache", "--isolated", "--exit-zero", str(work)],
                   check=True, capture_output=True)
    actual, expected = work.read_text(), (fixed if fixed.is_file() else case).read_text()
    assert actual != expected and _without_v3_forms(actual) == _without_v3_forms(expected), case.name
    shutil.copy(case, work)
    out = subprocess.run([sys.executable, "-m", "ptrlint", "--output-format", "json", "--no-cache", "--isolated",
                          str(work)], capture_output=True, text=True).stdout
    titles = [f["fix"]["title"] for f in json.loads(out)
              if f["fix"] and f["fix"]["safe"] and f["fix"]["title"].startswith("Create the table unsigned")]
    assert all("outside the project" in t or "loaded by" in t for t in titles), titles
    assert bool(titles) == bool(_SIGNED_VIEW.search(actual)), (case.name, titles)


@pytest.mark.parametrize("corpus", [".", "v2", "cross_module"], ids=["main", "v2", "cross_module"])
def test_shared_corpus_passes_exactly(corpus, tmp_path):
    needs_shared(CORPUS / "check.py")
    needs_shared(CORPUS / corpus / "cases")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "check.py"), "--cmd", cmd, "--corpus", str(CORPUS / corpus)],
        capture_output=True, text=True, timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert re.search(r"missing=0 unexpected=0 fixdiff=\d+$", last), proc.stdout + proc.stderr
    assert "NOT-IDEMPOTENT" not in proc.stdout, proc.stdout
    for name in re.findall(r"^FIXDIFF (\S+)", proc.stdout, re.M):
        _differs_by_v3_forms_only(CORPUS / corpus / "cases" / name, CORPUS / corpus / "fixed" / name, tmp_path)


def test_v3_corpus_runs_fixed_code():
    """Corpus v3: findings exact, and every fixed program still works, at real and simulated high addresses."""
    needs_shared(CORPUS / "v3" / "execcheck.py")
    pytest.importorskip("torch")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "v3" / "execcheck.py"), "--cmd", cmd, "--python", sys.executable],
        capture_output=True, text=True, timeout=900,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing=0 unexpected=0 broken=0 unfixed=0 not_idempotent=0" in last
