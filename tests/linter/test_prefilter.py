"""The text prefilter is sound: with and without it, findings are identical."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ptrlint.config import Config
from ptrlint.engine import Settings, process_text, select_codes

from ..conftest import CORPUS, REPO

ALL = select_codes(["ALL"], [], [])


def _tree_files() -> list[Path]:
    files: list[Path] = []
    for name in ("numpy", "libcst"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            tree = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))
            # a fixed, spread-out sample of small and mid-size files keeps this under a minute
            files.extend([p for p in tree if p.stat().st_size < 40_000][::12])
    files.extend(sorted((REPO / "examples").rglob("*.py")))
    if (CORPUS / "cases").is_dir():
        files.extend(sorted((CORPUS / "cases").glob("*.py")))
    return files


def _findings(text: str, prefilter: bool) -> list[tuple]:
    settings = Settings(Config(), ALL, prefilter=prefilter)
    result = process_text(text, "f.py", settings)
    return [(f.line, f.column, f.code) for f in result.findings]


@pytest.mark.slow
def test_prefilter_changes_no_finding_over_real_trees():
    files = _tree_files()
    assert len(files) > 100
    skipped = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        with_filter = _findings(text, True)
        without = _findings(text, False)
        assert with_filter == without, path
        from ptrlint.engine import prefilter

        skipped += not prefilter(text, Config())
    assert skipped > 0  # the filter does skip work


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nSRC_PTRS_ = torch.empty(4, dtype=torch.int64)\n",
        "import torch\nself_addresses = torch.empty(4, dtype=torch.int64)\n",
        "import numpy as np\nimport ctypes as C\nt = np.array([C.addressof(x) for x in xs], dtype=np.int64)\n",
        "import numpy as np\nt = np.array([a.__array_interface__['data'][0] for a in xs], dtype=np.int64)\n",
    ],
)
def test_prefilter_keeps_every_evidence_kind(source):
    assert _findings(source, True) == _findings(source, False) != []
