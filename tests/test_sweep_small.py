"""A small, fast version of benchmarks/sweep.py: the same invariants over a few hundred real files."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from .conftest import CORPUS, REPO


def _load_sweep():
    spec = importlib.util.spec_from_file_location("ptrlint_sweep", REPO / "benchmarks" / "sweep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_small_sweep_keeps_every_invariant(tmp_path):
    sweep = _load_sweep()
    root = tmp_path / "tree"
    shutil.copytree(REPO / "examples", root / "examples")
    if (CORPUS / "cases").is_dir():
        shutil.copytree(CORPUS / "cases", root / "corpus")
    numpy_spec = importlib.util.find_spec("numpy")
    if numpy_spec is not None and numpy_spec.submodule_search_locations:
        numpy_root = Path(next(iter(numpy_spec.submodule_search_locations)))
        for path in sorted(numpy_root.rglob("*.py"))[::10]:
            dest = root / "numpy" / path.relative_to(numpy_root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    (root / "broken.py").write_text("src_ptrs = (\n")  # must be reported and skipped, not crash
    result = sweep.sweep([root], jobs=2)
    assert result["ok"], result["problems"]
    assert result["internal_errors"] == 0 and result["unparsable_files"] >= 1
    assert result["files_changed_by_fix"] >= 30  # the corpus and examples really get fixed
    assert result["findings"] >= 60
