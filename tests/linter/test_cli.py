"""The CLI contract (DESIGN.md section 4): exit codes, formats, fix/diff, stdin, errors."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ..conftest import run_cli

BUGGY = """import torch


ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
copy_kernel[(1,)](ptrs)
"""
FIXED = BUGGY.replace("torch.int64", "torch.uint64")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    return tmp_path


def test_reports_finding_on_line_4_and_exits_1(ptrlint, tree):
    result = ptrlint("--no-cache", str(tree / "buggy.py"))
    assert result.code == 1
    line = result.out.splitlines()[0]
    assert line.startswith(f"{tree / 'buggy.py'}:4:")
    assert " PTR001 " in line and line.endswith("[*]")


def test_clean_tree_exits_0(ptrlint, tree):
    (tree / "buggy.py").unlink()
    result = ptrlint("--no-cache", str(tree))
    assert result.code == 0
    assert "All checks passed!" in result.out


def test_fix_rewrites_only_the_dtype_and_exits_0(ptrlint, tree):
    result = ptrlint("--no-cache", "--fix", str(tree))
    assert result.code == 0, result.out
    assert (tree / "buggy.py").read_text() == FIXED
    assert "1 fixed, 0 remaining" in result.out


def test_diff_prints_and_changes_nothing(ptrlint, tree):
    result = ptrlint("--no-cache", "--diff", str(tree))
    assert result.code == 1
    assert "-ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)" in result.out
    assert "+ptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)" in result.out
    assert (tree / "buggy.py").read_text() == BUGGY


def test_diff_without_fixes_exits_0(ptrlint, tree):
    (tree / "buggy.py").write_text(FIXED)
    assert ptrlint("--no-cache", "--diff", str(tree)).code == 0


def test_json_output_fields(ptrlint, tree, monkeypatch):
    monkeypatch.chdir(tree)
    result = ptrlint("--no-cache", "--format", "json", ".")
    data = json.loads(result.out)
    assert result.code == 1 and len(data) == 1
    item = data[0]
    assert set(item) == {
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "code",
        "name",
        "message",
        "fix",
        "related",
        "severity",
        "failure",
    }
    assert item["severity"] == "error" and "enters it at creation" in item["failure"]
    assert item["path"] == "buggy.py" and item["line"] == 4 and item["code"] == "PTR001"
    assert item["fix"]["safe"] is True and item["fix"]["edits"][0]["text"] == "uint64"
    assert item["related"][0]["message"].startswith("pointer value")


def test_github_annotations(ptrlint, tree):
    result = ptrlint("--no-cache", "--format", "github", str(tree / "buggy.py"))
    assert result.out.startswith(f"::error file={tree / 'buggy.py'},line=4,col=")
    assert "title=PTR001 signed-pointer-dtype::PTR001 " in result.out


def test_syntax_error_is_exit_2_named_and_does_not_hide_other_findings(ptrlint, tree):
    broken = tree / "broken.py"
    broken.write_text("def f(:\n    data_ptr = torch.zeros(1)\n")  # evidence and a site: it reaches the parser
    before = broken.read_bytes()
    result = ptrlint("--no-cache", "--fix", str(tree))
    assert result.code == 2
    assert "broken.py" in result.out and "syntax error" in result.out
    assert broken.read_bytes() == before
    assert (tree / "buggy.py").read_text() == FIXED  # the other file was still fixed


def test_syntax_error_still_reports_other_findings(ptrlint, tree):
    (tree / "broken.py").write_text("src_ptrs = torch.zeros(\n")
    result = ptrlint("--no-cache", str(tree))
    assert result.code == 2
    assert "PTR001" in result.out and "broken.py" in result.out


def test_crlf_and_bom_are_kept(ptrlint, tmp_path):
    path = tmp_path / "win.py"
    path.write_bytes(b"\xef\xbb\xbf" + BUGGY.replace("\n", "\r\n").encode())
    assert ptrlint("--no-cache", "--fix", str(path)).code == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode()


def test_latin1_file_keeps_its_encoding(ptrlint, tmp_path):
    path = tmp_path / "legacy.py"
    source = "# -*- coding: latin-1 -*-\n# café\n" + BUGGY
    path.write_bytes(source.encode("latin-1"))
    assert ptrlint("--no-cache", "--fix", str(path)).code == 0
    assert path.read_bytes() == ("# -*- coding: latin-1 -*-\n# café\n" + FIXED).encode("latin-1")


def test_file_mode_is_kept(ptrlint, tree):
    path = tree / "buggy.py"
    os.chmod(path, 0o751)
    ptrlint("--no-cache", "--fix", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.read_text() == FIXED


@pytest.mark.parametrize(
    "comment", ["# noqa: PTR001", "# noqa", "# ptrlint: ignore[PTR001]", "# ptrlint: ignore[PTR002, PTR001]"]
)
def test_suppression_comments(ptrlint, tmp_path, comment):
    path = tmp_path / "s.py"
    path.write_text(BUGGY.replace("dtype=torch.int64)", f"dtype=torch.int64)  {comment}"))
    result = ptrlint("--no-cache", "--fix", str(path))
    assert result.code == 0
    assert "torch.int64" in path.read_text()  # suppressed findings are never fixed


def test_suppression_of_another_code_does_not_apply(ptrlint, tmp_path):
    path = tmp_path / "s.py"
    path.write_text(BUGGY.replace("dtype=torch.int64)", "dtype=torch.int64)  # noqa: PTR002"))
    assert ptrlint("--no-cache", str(path)).code == 1


def test_stdin(ptrlint):
    result = ptrlint("--no-cache", "--stdin-filename", "pkg/mod.py", "-", stdin=BUGGY.encode())
    assert result.code == 1
    assert result.out.startswith("pkg/mod.py:4:")


def test_stdin_fix_prints_fixed_source(ptrlint):
    result = ptrlint("--no-cache", "--fix", "-", stdin=BUGGY.encode())
    assert result.out == FIXED
    assert result.code == 0


def test_select_ignore_and_unknown_codes(ptrlint, tree):
    assert ptrlint("--no-cache", "--ignore", "PTR001", str(tree)).code == 0
    assert ptrlint("--no-cache", "--select", "PTR002", str(tree)).code == 0
    assert ptrlint("--no-cache", "--select", "PTR0", str(tree)).code == 1
    assert ptrlint("--no-cache", "--select", "ALL", "--ignore", "PTR00", str(tree)).code == 0
    assert ptrlint("--no-cache", "--select", "PTR002", "--extend-select", "PTR001", str(tree)).code == 1
    bad = ptrlint("--no-cache", "--select", "PTR999", str(tree))
    assert bad.code == 2 and "PTR999" in bad.err
    assert ptrlint("--no-cache", "--ignore", "XYZ", str(tree)).code == 2


def test_exit_zero(ptrlint, tree):
    result = ptrlint("--no-cache", "--exit-zero", str(tree))
    assert result.code == 0 and "PTR001" in result.out


def test_statistics(ptrlint, tree):
    result = ptrlint("--no-cache", "--statistics", str(tree))
    assert "1\tPTR001\t[*] signed-pointer-dtype" in result.out


def test_show_evidence(ptrlint, tree):
    result = ptrlint("--no-cache", "--show-evidence", str(tree / "buggy.py"))
    assert "pointer value: `data_ptr()`" in result.out


def test_unsafe_fix_needs_flag(ptrlint, tmp_path):
    path = tmp_path / "u.py"
    source = BUGGY + "shifted = ptrs + 8\n"
    path.write_text(source)
    result = ptrlint("--no-cache", "--fix", str(path))
    assert result.code == 1 and path.read_text() == source
    assert "--unsafe-fixes" in result.out
    assert ptrlint("--no-cache", "--fix", "--unsafe-fixes", str(path)).code == 0
    assert "torch.uint64" in path.read_text()


def test_missing_path_and_broken_symlink_are_errors_but_others_still_linted(ptrlint, tree):
    """Named on the command line, a broken link is an error (E902) and the others are still linted;
    found by walking a folder, it is skipped with a warning (issue 43: one link failed whole runs)."""
    os.symlink(tree / "nowhere.py", tree / "dangling.py")
    result = ptrlint("--no-cache", str(tree / "dangling.py"), str(tree / "buggy.py"))
    assert result.code == 2
    assert "dangling.py: E902" in result.out and "broken symbolic link" in result.out
    assert "PTR001" in result.out
    walked = ptrlint("--no-cache", str(tree))
    assert walked.code == 1 and "PTR001" in walked.out and "broken symbolic link" in walked.err


def test_default_excludes(ptrlint, tree):
    for folder in (".venv", "build", "__pycache__", "node_modules", ".tox", "dist", "venv", ".git"):
        (tree / folder).mkdir()
        (tree / folder / "buggy.py").write_text(BUGGY)
    result = ptrlint("--no-cache", "--format", "json", str(tree))
    assert len(json.loads(result.out)) == 1


def test_jobs_parallel_output_is_sorted_and_equal_to_serial(tmp_path):
    for i in range(20):
        (tmp_path / f"m{i:02d}.py").write_text(BUGGY)
    serial = run_cli("--no-cache", "--jobs", "1", "--format", "json", ".", cwd=tmp_path)
    parallel = run_cli("--no-cache", "--jobs", "2", "--format", "json", ".", cwd=tmp_path)
    assert serial.returncode == parallel.returncode == 1
    assert serial.stdout == parallel.stdout
    paths = [f["path"] for f in json.loads(parallel.stdout)]
    assert paths == sorted(paths) and len(paths) == 20


def test_python_dash_m_and_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and b"ptrlint" in proc.stdout


def test_default_path_is_cwd(tree):
    proc = run_cli("--no-cache", cwd=tree)
    assert proc.returncode == 1 and b"buggy.py:4:" in proc.stdout


def test_examples_folder_shows_real_findings():
    from ..conftest import REPO

    proc = run_cli("--no-cache", "--isolated", "examples/", cwd=REPO)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    for code in ("PTR001", "PTR002", "PTR003", "PTR004", "PTR005", "PTR006"):
        assert code in out


def test_console_delivers_all_output_through_a_pipe_and_keeps_the_cache(tmp_path):
    """The command leaves with os._exit after main(): block-buffered output and the cache must survive."""
    for i in range(300):
        (tmp_path / f"m{i:03d}.py").write_text(BUGGY)
    proc = run_cli("--jobs", "1", "--format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1 and len(proc.stdout) > 64 * 1024  # more than one pipe buffer
    assert len(json.loads(proc.stdout)) == 300
    assert any((tmp_path / ".ptrlint_cache").rglob("*")), "the cache is written before the hard exit"
    warm = run_cli("--jobs", "1", "--format", "json", ".", cwd=tmp_path)
    assert warm.returncode == 1 and warm.stdout == proc.stdout


def test_console_reader_leaving_early_is_not_an_error(tmp_path):
    import subprocess
    import sys

    for i in range(300):
        (tmp_path / f"m{i:03d}.py").write_text(BUGGY)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--jobs", "1", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(100)
    proc.stdout.close()  # like `ptrlint . | head -1`
    err = proc.stderr.read()
    assert proc.wait(timeout=120) in (0, 1)
    assert b"Traceback" not in err and b"Exception ignored" not in err
