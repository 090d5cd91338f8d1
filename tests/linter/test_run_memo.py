"""The run memo (ptrlint/planner/memo.py): a run answered whole when nothing it depended on changed,
and planned again the moment anything did. Each case is a real command-line run on a small project
whose files are dated in the past (a file changed within the timestamp granularity is never trusted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HOLDER = textwrap.dedent("""
    from dataclasses import dataclass

    import torch


    @dataclass
    class Holder:
        table: torch.Tensor

        @classmethod
        def empty(cls, n):
            return cls(torch.zeros(n, dtype=torch.int64))
""").lstrip()
WRITER = textwrap.dedent("""
    from pkg.holder import Holder


    def fill(h: Holder, xs):
        view = h.table.numpy()
        for i, x in enumerate(xs):
            view[i] = x.data_ptr()
""").lstrip()
PLAIN = "import torch\n\n\ndef ids(n):\n    return torch.zeros(n, dtype=torch.int64)\n"


def _age(root: Path) -> None:
    """Date every file and folder of the project 10 s back (older than the racy-timestamp window)."""
    past = time.time() - 10
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".ptrlint_cache"]
        for name in files:
            os.utime(os.path.join(folder, name), (past, past))
        os.utime(folder, (past, past))


def _project(tmp_path: Path, writer: bool = False) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "holder.py").write_text(HOLDER)
    (root / "pkg" / "plain.py").write_text(PLAIN)
    if writer:
        (root / "pkg" / "writer.py").write_text(WRITER)
    _age(root)
    return root


def _lint(root: Path, *args: str) -> tuple[list[dict], bool]:
    """The findings of one run, and whether it planned (imported the project run) or was answered."""
    code = textwrap.dedent("""
        import sys
        from ptrlint.cli import main
        try:
            main(sys.argv[1:])
        except SystemExit:
            pass
        print("PLANNED" if "ptrlint.planner.index" in sys.modules else "ANSWERED", file=sys.stderr)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code, "--exit-zero", "--output-format", "json", *args],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert proc.stderr.strip().endswith(("PLANNED", "ANSWERED")), proc.stderr
    output = json.loads(proc.stdout) if proc.stdout.lstrip().startswith("[") else proc.stdout  # --diff: a diff
    return output, proc.stderr.strip().endswith("PLANNED")


def test_an_unchanged_project_is_answered_with_what_a_cold_run_says(tmp_path):
    root = _project(tmp_path, writer=True)
    cold, _ = _lint(root, "--no-cache", "pkg")
    assert any(f["path"] == "pkg/holder.py" for f in cold)  # the writer's store makes the holder's table a finding
    first, planned = _lint(root, "pkg")
    assert planned and first == cold
    _age(root)  # the cache folder was just created in the root: its timestamp is not trusted yet
    _lint(root, "pkg")  # recorded
    again, planned = _lint(root, "pkg")
    assert not planned and again == cold
    one, planned = _lint(root, "pkg/holder.py")  # part of the tree: the whole-tree run's findings for it
    assert not planned and one == [f for f in cold if f["path"] == "pkg/holder.py"]
    alone, _ = _lint(root, "--no-cache", "pkg/holder.py")
    assert one == alone


@pytest.mark.parametrize("change", ["edit a dependency", "add an importer", "remove a module"])
def test_any_change_to_the_project_plans_again(tmp_path, change):
    root = _project(tmp_path, writer=change != "add an importer")
    _lint(root, "pkg")
    _age(root)
    _lint(root, "pkg")  # recorded
    assert not _lint(root, "pkg/holder.py")[1]
    if change == "edit a dependency":  # the writer stops storing addresses: the holder's finding goes
        (root / "pkg" / "writer.py").write_text(WRITER.replace("x.data_ptr()", "0"))
    elif change == "add an importer":  # a new module writes addresses into the holder's table
        (root / "pkg" / "writer.py").write_text(WRITER)
    else:
        (root / "pkg" / "writer.py").unlink()
    _age(root)  # even with old timestamps: the folder's and the file's signatures changed
    warm, planned = _lint(root, "pkg/holder.py")
    cold, _ = _lint(root, "--no-cache", "pkg/holder.py")
    assert planned and warm == cold
    assert bool(warm) is (change == "add an importer")


def test_fixes_previews_and_a_planted_memo_are_never_served(tmp_path):
    root = _project(tmp_path, writer=True)
    _lint(root, "pkg")
    _age(root)
    _lint(root, "pkg")
    assert not _lint(root, "pkg")[1]
    assert _lint(root, "--diff", "pkg")[1]  # a preview plans (it renders the fixes)
    for memo in (root / ".ptrlint_cache" / "memo").iterdir():  # a planted entry: findings emptied
        record = json.loads(memo.read_text())
        body = json.loads(record["body"])
        body["results"] = {k: [] for k in body["results"]}
        record["body"] = json.dumps(body)
        memo.write_text(json.dumps(record))
    findings, planned = _lint(root, "pkg")
    assert planned and findings


def test_a_file_changed_within_the_timestamp_window_is_not_trusted(tmp_path):
    root = _project(tmp_path, writer=True)
    _lint(root, "pkg")
    _age(root)
    (root / "pkg" / "plain.py").write_text(PLAIN + "\n")  # just now: its mtime may not tell a later edit
    _lint(root, "pkg")
    assert _lint(root, "pkg")[1]
