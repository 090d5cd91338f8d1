"""The README's runtime examples run as written (on the CPU here; on a GPU where one is present)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

README = Path(__file__).resolve().parents[2] / "README.md"


def _runtime_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Runtime guard") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)


def test_the_runtime_section_has_its_examples():
    blocks = _runtime_examples()
    assert len(blocks) >= 2 and any("MambaCopyBuffers.create" in b for b in blocks)


@pytest.mark.parametrize("index", range(len(_runtime_examples())))
def test_a_runtime_example_runs_as_written(index, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(_runtime_examples()[index])
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "TRITON_INTERPRET": "1", "PYTHONPATH": ""},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_file_the_readme_names_exists():
    """Links and backticked paths into the repository (`benchmarks/results/x.md`, `docs/...`) exist
    (the git-ignored download cache aside)."""
    root = README.parent
    text = README.read_text(encoding="utf-8")
    tops = {p.name for p in root.iterdir() if not p.name.startswith(".")} | {".pre-commit-hooks.yaml", ".ci"}
    named = set(re.findall(r"\]\(([^)#\s]+)\)", text)) | set(re.findall(r"`([\w./-]+/[\w./-]*)`", text))
    named |= {f"benchmarks/results/{m}" for m in re.findall(r"`(\w+\.(?:md|json|png))`", text)}
    missing = sorted(
        p
        for p in named
        if not p.startswith(("http", "/", "~"))
        and p.split("/")[0] in tops
        and "*" not in p
        and ".cache" not in p
        and not (root / p.rstrip("/")).exists()
    )
    assert not missing, missing
