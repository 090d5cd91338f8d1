"""One preview contract (issue 55): with ``--diff`` nothing is written, whatever else is given, and the exit
status is 1 when there is a diff; ``--fix`` alone writes; ``--fix-only`` writes and reports nothing else.
Checked on every preview flag set, for a Python file, a notebook and standard input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nprint(ptrs.tolist())\n"
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": SOURCE.splitlines(keepends=True),
        }
    ],
    "metadata": {"language_info": {"name": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}

PREVIEWS = [
    ["--diff"],
    ["--diff", "--unsafe-fixes"],
    ["--fix", "--diff"],
    ["--fix", "--diff", "--unsafe-fixes"],
    ["--fix-only", "--diff"],
    ["--fix", "--fix-only", "--diff"],
    ["--fix", "--diff", "--show-fixes"],
    ["--fix-only", "--diff", "--unsafe-fixes"],
    ["--diff", "--exit-zero"],
    ["--fix", "--diff", "--output-format", "json"],
]


def _tree(root: Path) -> dict[str, str]:
    (root / "a.py").write_text(SOURCE)
    (root / "b.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    return _digests(root)


def _digests(root: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir()) if p.is_file()}


def _run(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", *args], cwd=root, input=stdin, capture_output=True, text=True
    )


@pytest.mark.parametrize("flags", PREVIEWS, ids=lambda f: " ".join(f))
def test_a_preview_never_writes(flags: list[str], tmp_path: Path) -> None:
    before = _tree(tmp_path)
    proc = _run(tmp_path, *flags, ".")
    assert _digests(tmp_path) == before, proc.stdout  # not a byte changed, notebooks included
    if "--exit-zero" not in flags:
        assert proc.returncode == 1, proc.stderr  # there is a diff
    assert (
        "+ptrs = torch.tensor" in proc.stdout or '+    \\"ptrs = torch.tensor' in proc.stdout or "uint64" in proc.stdout
    )


@pytest.mark.parametrize("flags", PREVIEWS, ids=lambda f: " ".join(f))
def test_a_preview_of_stdin_prints_a_diff_not_the_fixed_text(flags: list[str], tmp_path: Path) -> None:
    proc = _run(tmp_path, *flags, "--stdin-filename", "a.py", "-", stdin=SOURCE)
    assert "---" in proc.stdout and "+++" in proc.stdout, proc.stdout
    assert not list(tmp_path.iterdir())  # nothing written beside it either


def test_fix_alone_writes_and_fix_only_reports_nothing_else(tmp_path: Path) -> None:
    before = _tree(tmp_path)
    proc = _run(tmp_path, "--fix-only", ".")
    after = _digests(tmp_path)
    assert after["a.py"] != before["a.py"] and after["b.ipynb"] != before["b.ipynb"]
    assert proc.returncode == 0 and "PTR001" not in proc.stdout
    _tree(tmp_path)
    proc = _run(tmp_path, "--fix", ".")
    assert _digests(tmp_path)["a.py"] != before["a.py"]
