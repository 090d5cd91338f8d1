"""The shared corpora (../shared/corpus) are the executable spec: each must pass exactly.

``cases/`` (01-51), ``v2/`` (52-71, the evidence model v2) and ``cross_module/`` (a package whose
evidence crosses modules), each checked by the corpus's own ``check.py`` against this ptrlint;
``v3/`` (72-85) is run by its ``execcheck.py``: every case is linted, fixed and executed at real
and simulated high addresses.

The ``fixed/`` files of the first two batches predate the fix safety of issue 41 (DESIGN.md: where
the third batch refines fix safety, it wins; issue 41 refines it again: plain uint64 only where
every use is seen and uint64-ready, no safe fix that creates a table unsigned from Python ints of
unknown sign). For those corpora the findings must still be exact, and a fixed file may differ
from its ``fixed/`` version only line by line, in these forms, each backed by the finding's fix:

- a bit-preserving fix (``.view(<signed dtype>)`` after the unsigned creation, or an unsigned
  numpy view for the stores, ``.view(torch.uint64).numpy()``) whose title names the deciding use;
- no change where the reference changed the dtype to uint64, because the fix is unsafe and its
  title says why (a use that needs int64 with no view possible, or values of unknown sign);
- a PTR005 store wrapped as ``torch.tensor(p, dtype=torch.uint64)`` (the third batch's store fix), or, into an
  int64 table of a module with its own wrap helper, as ``helper(p)`` (issue 62: the module's convention; v2
  case 53);
- a PTR007 computation in uint64 (``np.uint64(...)``, ``.astype(np.uint64)``).
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import CORPUS, needs_shared

_SIGNED_VIEW = re.compile(r"\)\.view\((?:[A-Za-z_]\w*\.)?(?:int64|long|intp|i64|int)\)|\)\.view\([\"']int64[\"']\)")
_UNSIGNED_VIEW = re.compile(r"\.view\((?:[A-Za-z_]\w*\.)?uint64\)(?=\.numpy\(\))")
_STORE_WRAP = re.compile(r"(\w+)\.tensor\((.+), dtype=\1\.uint64\)")
_UINT64_COMPUTE = re.compile(r"(?:np|numpy)\.uint64\(|\.astype\((?:np|numpy)\.uint64\)")


def _accounted_for(old: str, new: str, findings: list[dict], file_findings: list[dict]) -> str | None:
    """Why line ``new`` (ptrlint's fix) may differ from ``old`` (the reference), or None."""

    def fixes(kind: str, among: list[dict]) -> list[dict]:
        return [
            f
            for f in among
            if f["fix"]
            and (
                (kind == "bits" and f["fix"]["safe"] and f["fix"]["title"].startswith("Create the table unsigned"))
                or (kind == "unsafe" and not f["fix"]["safe"] and "unsafe:" in f["fix"]["title"])
                or (kind == "ptr007" and f["code"] == "PTR007")
            )
        ]

    views = [f for f in fixes("bits", file_findings) if "unsigned numpy view" in f["fix"]["title"]]
    if _UNSIGNED_VIEW.sub("", new) == old and views:
        return "stores through an unsigned view"
    if _SIGNED_VIEW.sub(")", new) in (old, _OLD_DTYPE.sub("uint64", old)) and fixes("bits", findings):
        return "bit-preserving"
    if "expect: PTR005" in new and _STORE_WRAP.sub(r"\2", new) == old:
        return "store"
    for helper in _module_helpers(findings):  # issue 62: an int64 table's store follows the module's wrap helper
        if "expect: PTR005" in new and re.sub(rf"\b{helper}\((.+)\)", r"\1", new) == _STORE_WRAP.sub(r"\2", old):
            return "store through the module's wrap helper"
    if _UINT64_COMPUTE.search(new) and fixes("ptr007", findings):
        return "ptr007"
    if re.sub(r",\s*dtype=[\w.]*uint64", "", old) == new and new != old and fixes("unsafe", findings):
        return "unsafe (no dtype added)"
    if "uint64" in old and _OLD_DTYPE.sub("uint64", new) == old:
        if fixes("unsafe", findings):
            return "unsafe"
        if [f for f in fixes("bits", findings) if "unsigned numpy view" in f["fix"]["title"]]:
            return "created empty, stored through an unsigned view"
    return None


def _module_helpers(findings: list[dict]) -> list[str]:
    """The wrap helpers PTR005 fixes on this line name (``Store the wrapped value with the module's `to_i64()```)."""
    titles = [f["fix"]["title"] for f in findings if f["code"] == "PTR005" and f["fix"] and f["fix"]["safe"]]
    return [m.group(1) for t in titles if (m := re.search(r"with the module's `(\w+)\(\)`", t))]


_OLD_DTYPE = re.compile(r"\b(int64|long|intp|int32|int|float64|uint32)\b")


def _differs_by_policy_forms_only(corpus: Path, names: list[str], tmp_path: Path) -> None:
    """Each FIXDIFF file of ``corpus``, fixed by ptrlint, differs from its ``fixed/`` reference only
    in lines each accounted for by a fix (the whole ``cases/`` folder is fixed, as check.py does)."""
    work = tmp_path / "cases"
    shutil.copytree(corpus / "cases", work)
    out = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--output-format", "json", "--no-cache", "."],
        capture_output=True,
        text=True,
        cwd=work,
    ).stdout
    findings = json.loads(out)
    subprocess.run(
        [sys.executable, "-m", "ptrlint", "--fix", "--no-cache", "--exit-zero", "."],
        check=True,
        capture_output=True,
        cwd=work,
    )
    for name in names:
        fixed = corpus / "fixed" / name
        actual = (work / name).read_text().splitlines()
        expected = (fixed if fixed.is_file() else corpus / "cases" / name).read_text().splitlines()
        assert len(actual) == len(expected), name
        in_file = [f for f in findings if f["path"] == name]
        origin = _original_lines((corpus / "cases" / name).read_text().splitlines(), actual)
        for number, (new, old) in enumerate(zip(actual, expected), 1):
            if new != old:
                line = origin.get(number, number)  # the line of the case the fixed line came from
                here = [
                    f
                    for f in in_file
                    if f["line"] == line
                    or any(
                        e["location"]["line"] <= line <= e["end_location"]["line"]
                        for e in (f["fix"] or {}).get("edits", [])
                    )
                ]
                assert _accounted_for(old, new, here, in_file), (name, number, old, new, here)


def _original_lines(before: list[str], after: list[str]) -> dict[int, int]:
    """{line of ``after``: the line of ``before`` it was made from} (1-based; inserted lines map to
    the line they were inserted before)."""
    out: dict[int, int] = {}
    for _tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        for k, j in enumerate(range(j1, j2)):
            out[j + 1] = min(i1 + k, max(i2 - 1, i1)) + 1
    return out


@pytest.mark.parametrize("corpus", [".", "v2", "cross_module"], ids=["main", "v2", "cross_module"])
def test_shared_corpus_passes_exactly(corpus, tmp_path):
    needs_shared(CORPUS / "check.py")
    needs_shared(CORPUS / corpus / "cases")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "check.py"), "--cmd", cmd, "--corpus", str(CORPUS / corpus)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert re.search(r"missing=0 unexpected=0 fixdiff=\d+$", last), proc.stdout + proc.stderr
    assert "NOT-IDEMPOTENT" not in proc.stdout, proc.stdout
    _differs_by_policy_forms_only(CORPUS / corpus, re.findall(r"^FIXDIFF (\S+)", proc.stdout, re.M), tmp_path)


def test_v3_corpus_runs_fixed_code():
    """Corpus v3: findings exact, and every fixed program still works, at real and simulated high addresses."""
    needs_shared(CORPUS / "v3" / "execcheck.py")
    pytest.importorskip("torch")
    cmd = shlex.join([sys.executable, "-m", "ptrlint"])
    proc = subprocess.run(
        [sys.executable, str(CORPUS / "v3" / "execcheck.py"), "--cmd", cmd, "--python", sys.executable],
        capture_output=True,
        text=True,
        timeout=900,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing=0 unexpected=0 broken=0 unfixed=0 not_idempotent=0" in last
