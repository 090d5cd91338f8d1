"""A cache found in the tree is trusted only if this user's ptrlint wrote it, and follows the code that
computed it (issues 56 and 59: one design, ptrlint/cache.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..conftest import REPO

BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nprint(ptrs.tolist())\n"


def _run(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def _json(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    return json.loads(proc.stdout)


def test_a_committed_cache_cannot_hide_findings(tmp_path: Path) -> None:
    """The attack of issue 59: lint once, empty the entry's findings, commit the cache; a fresh clone (here:
    another user, with another key) must still report the finding."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text(BUGGY)
    author = {"PTRLINT_SECRET_DIR": str(tmp_path / "author-key")}
    assert _run(repo, "--output-format", "json", ".", env=author).returncode == 1
    entries = [p for p in (repo / ".ptrlint_cache").rglob("*.json") if p.parent.name != "manifest"]
    assert entries
    for entry in entries:  # planted: the findings emptied, the tag left as it was (or dropped)
        record = json.loads(entry.read_text())
        body = json.loads(record["body"])
        body["findings"] = []
        entry.write_text(json.dumps({"tag": record["tag"], "body": json.dumps(body)}))
    victim = {"PTRLINT_SECRET_DIR": str(tmp_path / "ci-key")}
    proc = _run(repo, "--output-format", "sarif", ".", env=victim)
    assert proc.returncode == 1 and len(json.loads(proc.stdout)["runs"][0]["results"]) == 1, proc.stdout
    assert "did not write" in proc.stderr  # reported (the entries are then written again, with this user's key)
    assert [f["code"] for f in _json(_run(repo, "--output-format", "json", ".", env=victim))] == ["PTR001"]
    # the author's own doctored entry is refused too: its tag no longer matches its body
    assert [f["code"] for f in _json(_run(repo, "--output-format", "json", ".", env=author))] == ["PTR001"]


def test_a_cache_folder_that_is_a_link_out_of_the_tree_is_not_used(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (repo / "m.py").write_text(BUGGY)
    (repo / ".ptrlint_cache").symlink_to(outside, target_is_directory=True)
    proc = _run(repo, "--output-format", "json", ".")
    assert [f["code"] for f in _json(proc)] == ["PTR001"]
    assert "symbolic link" in proc.stderr
    assert list(outside.iterdir()) == []  # nothing written where the link points


def test_the_cache_follows_the_code_that_computed_it(tmp_path: Path) -> None:
    """A rule's message changed in a copy of the package: a warm run with the copy serves the new message,
    not the one cached by the original (the version string is the same)."""
    package = tmp_path / "pkg"
    shutil.copytree(REPO / "ptrlint", package / "ptrlint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "runtime", package / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "m.py").write_text(BUGGY)
    env = {"PYTHONPATH": str(package)}
    first = _json(_run(tree, "--output-format", "json", ".", env=env))
    assert "holds memory addresses" in first[0]["message"]
    rule = package / "ptrlint" / "rules" / "signed_pointer_dtype.py"
    rule.write_text(rule.read_text().replace("holds memory addresses but", "stores device addresses but"))
    second = _json(_run(tree, "--output-format", "json", ".", env=env))
    assert "stores device addresses" in second[0]["message"], second
