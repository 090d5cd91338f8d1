"""A stranger's tree: one test per attack of issue 59 (docs/security.md lists each guarantee and its test).
Every test is bounded in time; each runs the real command line in a subprocess on a scratch tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nprint(ptrs.tolist())\n"


def _run(cwd: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def _codes(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return sorted(f"{f['path']}:{f['code']}" for f in json.loads(proc.stdout))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_like_a_module_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "a.py").write_text(BUGGY)
    proc = _run(tmp_path, "--output-format", "json", ".", timeout=60)
    assert _codes(proc) == ["a.py:PTR001"]
    assert "not a regular file" in proc.stderr
    proc = _run(tmp_path, "--output-format", "json", "x.py", "a.py", timeout=60)  # named on the command line too
    assert _codes(proc) == ["a.py:PTR001"]


def test_one_bad_notebook_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    notebooks = {
        "source_number.ipynb": {"cells": [{"cell_type": "code", "source": 5, "metadata": {}}], "metadata": {}},
        "null_cell.ipynb": {"cells": [None], "metadata": {}},
        "bad_metadata.ipynb": {"cells": [], "metadata": 7},
    }
    for name, content in notebooks.items():
        (tmp_path / name).write_text(json.dumps({**content, "nbformat": 4, "nbformat_minor": 5}))
    for fmt in ("json", "sarif"):
        proc = _run(tmp_path, "--exit-zero", "--output-format", fmt, ".")
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 2  # files could not be checked
        data = json.loads(proc.stdout)
        if fmt == "json":
            assert sorted(f["path"] for f in data) == [
                "a.py",
                "bad_metadata.ipynb",
                "null_cell.ipynb",
                "source_number.ipynb",
            ]
        else:
            assert len(data["runs"][0]["results"]) == 4


def test_a_malformed_pyproject_fails_only_its_files(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project\nname =")  # not TOML, and no [tool.ptrlint] anyway
    (sub / "b.py").write_text(BUGGY)
    proc = _run(tmp_path, "--output-format", "json", ".")
    data = json.loads(proc.stdout)
    assert sorted((f["path"], f["code"]) for f in data) == [("a.py", "PTR001"), ("sub/b.py", "E904")]


def test_a_catastrophic_pattern_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x_" * 40 + "y = torch.tensor(v, dtype=torch.int64)\n")
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\npointer-names = ["(\\\\w+_)*ptr"]\n')
    start = time.perf_counter()
    proc = _run(tmp_path, ".", timeout=60)
    assert proc.returncode == 2 and "E904" in proc.stdout and "exponential" in proc.stdout  # its files fail alone
    assert time.perf_counter() - start < 60


def test_a_setting_never_removes_address_api_evidence(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    proc = _run(
        tmp_path, "--isolated", "--config", 'pointer-names = ["\\\\w*_handles?"]', "--output-format", "json", "a.py"
    )
    assert _codes(proc) == ["a.py:PTR001"]


def test_a_long_sum_is_valid_python(tmp_path: Path) -> None:
    terms = " + ".join(f"a{i}" for i in range(3000))
    (tmp_path / "a.py").write_text(
        f"import torch\nptrs = torch.tensor([t.data_ptr() + {terms} for t in ts], "
        "dtype=torch.int64)\nprint(ptrs.tolist())\n"
    )
    proc = _run(tmp_path, "--output-format", "json", "a.py")
    assert _codes(proc) == ["a.py:PTR001"], proc.stdout


def test_fix_never_writes_through_a_link_out_of_the_tree(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "victim.py").write_text(BUGGY)
    (repo / "inside.py").symlink_to(Path("..") / "outside" / "victim.py")
    (repo / "own.py").write_text(BUGGY)
    proc = _run(repo, "--fix", "--output-format", "json", ".")
    assert (outside / "victim.py").read_text() == BUGGY  # not a byte changed outside
    assert "uint64" in (repo / "own.py").read_text()  # the tree's own file is fixed
    data = json.loads(proc.stdout)
    assert ("inside.py", "PTR001") in {(f["path"], f["code"]) for f in data}  # the finding stays, with the reason
    assert any(f["code"] == "E902" and "outside the folders given" in f["message"] for f in data)


def test_fix_keeps_mode_and_hard_links(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text(BUGGY.replace("print(ptrs.tolist())", "launch(ptrs)"))
    os.chmod(path, 0o640)
    twin = tmp_path / "twin.txt"
    os.link(path, twin)
    _run(tmp_path, "--fix", "a.py")
    assert "uint64" in path.read_text()
    assert twin.read_text() == path.read_text()  # the other link sees the fix: the same inode
    assert os.stat(path).st_ino == os.stat(twin).st_ino
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o640)
    single = tmp_path / "b.py"
    single.write_text(BUGGY.replace("print(ptrs.tolist())", "launch(ptrs)"))
    os.chmod(single, 0o604)
    owner = os.stat(single)
    _run(tmp_path, "--fix", "b.py")
    after = os.stat(single)
    assert "uint64" in single.read_text() and oct(after.st_mode & 0o777) == oct(0o604)
    assert (after.st_uid, after.st_gid) == (owner.st_uid, owner.st_gid)


def test_add_noqa_reports_what_it_wrote(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "victim.py").write_text(BUGGY)
    (repo / "inside.py").symlink_to(Path("..") / "outside" / "victim.py")
    proc = _run(repo, "--add-noqa", ".")
    assert "Added 0 noqa directives" in proc.stderr and (outside / "victim.py").read_text() == BUGGY


def test_no_control_character_reaches_the_output(tmp_path: Path) -> None:
    source = (
        'import torch\nregistry = {}\nregistry["x\\n::warning::injected\\n_ptrs"] = '
        "torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nprint(registry)\n"
    )
    (tmp_path / "a.py").write_text(source)
    try:
        weird = tmp_path / "b\n::error::pwned.py"
        weird.write_text(BUGGY)
    except OSError:
        weird = None
    for fmt in ("concise", "full", "github", "json", "sarif"):
        proc = _run(tmp_path, "--output-format", fmt, "--show-evidence", ".")
        for line in proc.stdout.splitlines():
            assert not line.startswith("::warning::") and not line.startswith("::error::pwned"), (fmt, line)
            if fmt == "github":
                assert line.startswith(("::error ", "::notice ")), line
        assert not any(ch in proc.stdout for ch in "\x1b\x00\u2028"), fmt
        if weird is not None and fmt in ("concise", "full"):
            assert "b\\n::error::pwned.py" in proc.stdout


def test_notebook_positions_point_into_the_file(tmp_path: Path) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["title"]},
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": BUGGY.splitlines(keepends=True),
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    raw_line = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "data_ptr" in line)
    github = _run(tmp_path, "--output-format", "github", "n.ipynb").stdout
    assert f"line={raw_line}," in github and "(cell 2, line 2)" in github
    sarif = json.loads(_run(tmp_path, "--output-format", "sarif", "n.ipynb").stdout)
    location = sarif["runs"][0]["results"][0]["locations"][0]
    assert location["physicalLocation"]["region"]["startLine"] == raw_line
    assert location["properties"] == {"cell": 2, "cellLine": 2, "cellColumn": location["properties"]["cellColumn"]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_workers_end_with_their_parent(tmp_path: Path) -> None:
    """SIGTERM unwinds the run (pools shut, plan folders removed); SIGKILL leaves the workers to the
    parent-death signal, and the next run removes the plan folder the killed one left."""
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(BUGGY * 30)
    temp = Path(tempfile.gettempdir())
    before = {p.name for p in temp.glob("ptrlint-plan-*")}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        proc = subprocess.Popen(
            [sys.executable, "-m", "ptrlint", "--no-cache", "--jobs", "2", "."],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(1.5)
        children = _children(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        deadline = time.time() + 20
        while time.time() < deadline and any(_alive(pid) for pid in children):
            time.sleep(0.2)
        assert not [pid for pid in children if _alive(pid)], sig
    subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--jobs", "2", "."],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    left = {p.name for p in temp.glob("ptrlint-plan-*")} - before
    assert not left


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
