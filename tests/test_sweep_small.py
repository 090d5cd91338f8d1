"""A small, fast version of benchmarks/sweep.py: the same invariants over the project's own trees.

Everything it sweeps comes from this repository (examples/, the labelled fixtures) or from torch,
which the README's test command installs (located with find_spec, never imported). The counts it
asserts come from the project's own fixtures only, never from how many files torch ships.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from ptrlint.testing import expected_markers

from .conftest import CORPUS, REPO, load_benchmark

FIXTURES = REPO / "tests" / "fixtures" / "corpus"


def _torch_sample(step: int) -> list[tuple[Path, Path]]:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    return [(root, p) for p in sorted(root.rglob("*.py"))[::step]]


@pytest.mark.slow
def test_small_sweep_keeps_every_invariant(tmp_path):
    sweep = load_benchmark("sweep")
    root = tmp_path / "tree"
    shutil.copytree(REPO / "examples", root / "examples")
    shutil.copytree(FIXTURES / "cases", root / "fixtures")
    if (CORPUS / "cases").is_dir():  # extra coverage in CI; nothing below counts on it
        shutil.copytree(CORPUS / "cases", root / "corpus")
    for base, path in _torch_sample(25):
        dest = root / "torch" / path.relative_to(base)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    (root / "broken.py").write_text("src_ptrs = torch.zeros(\n")  # must be reported and skipped, not crash
    result = sweep.sweep([root], jobs=2)
    assert result["ok"], result["problems"]
    assert result["internal_errors"] == 0 and result["unparsable_files"] >= 1
    own_fixed = len(list((FIXTURES / "fixed").rglob("*.py")))
    own_markers = sum(len(expected_markers(p.read_text())) for p in (FIXTURES / "cases").rglob("*.py"))
    assert own_fixed >= 8 and own_markers >= 20
    assert result["files_changed_by_fix"] >= own_fixed + len(list((REPO / "examples").glob("*.py")))
    assert result["findings"] >= own_markers
