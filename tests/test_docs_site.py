"""The documentation site builds with `mkdocs build --strict` (a broken link or a missing page fails),
with the README as its home page and one page per rule from the rules' own metadata."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly_with_a_page_per_rule(tmp_path):
    pytest.importorskip("mkdocs")
    from ptrlint.rules import ALL_RULES

    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ptrlint" in (site / "index.html").read_text() and (site / "architecture" / "index.html").is_file()
    index = (site / "rules" / "index.html").read_text()
    for rule in ALL_RULES:
        page = (site / "rules" / rule.code / "index.html").read_text()
        assert rule.name in page and "Why is this bad?" in page and "Fix safety" in page
        assert f"{rule.code}/" in index
