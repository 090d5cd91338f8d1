"""Discovery the way ruff users expect: git's ignore rules, and --force-exclude for named files.

Every test builds a real git repository (``git init`` in a temporary folder) and runs the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, env=full_env
    )


def _files(*args: str, cwd: Path, env: dict | None = None) -> set[str]:
    proc = _cli("--show-files", *args, cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel in (
        "src/app.py",
        "src/gen/out.py",
        "generated/a.py",
        "generated/keep.py",
        "vendor/lib.py",
        "pkg/sub/local_only.py",
        "pkg/sub/kept.py",
        "pkg/sub/deep/x.py",
        "logs/run.py",
        "notes.py",
        "build_tools/b.py",
    ):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BUGGY)
    (root / ".gitignore").write_text("# generated code\ngenerated/\n/notes.py\nsrc/**/gen/\n*.log\n\\#literal\n")
    (root / "pkg" / ".gitignore").write_text("sub/local_only.py\n!/sub/kept.py\nsub/deep\n")
    (root / "pyproject.toml").write_text('[tool.ptrlint]\nextend-exclude = ["vendor"]\n')
    _git("init", "-q", cwd=root)
    (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("logs/\n")
    return root


def test_folders_skip_what_git_ignores(repo):
    assert _files(".", cwd=repo) == {"src/app.py", "pkg/sub/kept.py", "build_tools/b.py"}
    everything = _files("--no-respect-gitignore", ".", cwd=repo)
    assert "generated/a.py" in everything and "logs/run.py" in everything and "vendor/lib.py" not in everything


def test_negation_cannot_reinclude_below_an_ignored_folder(repo):
    (repo / ".gitignore").write_text("generated/\n!generated/keep.py\n")
    assert "generated/keep.py" not in _files(".", cwd=repo)
    (repo / ".gitignore").write_text("generated/*\n!generated/keep.py\n")  # the files, not the folder
    found = _files(".", cwd=repo)
    assert "generated/keep.py" in found and "generated/a.py" not in found


def test_global_excludes_file(repo, tmp_path):
    (tmp_path / "global-ignore").write_text("build_tools/\n")
    (tmp_path / "gitconfig").write_text(f"[core]\n\texcludesFile = {tmp_path / 'global-ignore'}\n")
    assert "build_tools/b.py" not in _files(".", cwd=repo, env={"GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")})


def test_named_files_are_linted_unless_force_exclude(repo):
    named = ["generated/a.py", "vendor/lib.py", "src/app.py"]
    assert _files(*named, cwd=repo) == set(named)
    assert _files("--force-exclude", *named, cwd=repo) == {"src/app.py"}
    proc = _cli("--force-exclude", "--verbose", "--show-files", *named, cwd=repo)
    assert "skipped generated/a.py (ignored by git" in proc.stderr
    assert "skipped vendor/lib.py (excluded by 'vendor'" in proc.stderr


def test_config_keys(repo):
    (repo / "pyproject.toml").write_text(
        '[tool.ptrlint]\nextend-exclude = ["vendor"]\nrespect-gitignore = false\nforce-exclude = true\n'
    )
    found = _files(".", cwd=repo)
    assert "generated/a.py" in found and "vendor/lib.py" not in found
    assert _files("vendor/lib.py", "generated/a.py", cwd=repo) == {"generated/a.py"}
    assert _files("--respect-gitignore", "vendor/lib.py", "generated/a.py", cwd=repo) == set()
    (repo / "pyproject.toml").write_text('[tool.ptrlint]\nforce-exclude = "yes"\n')
    proc = _cli(".", cwd=repo)
    assert proc.returncode == 2 and "force-exclude" in proc.stderr


def test_fix_never_rewrites_a_force_excluded_file(repo):
    proc = _cli("--fix", "--force-exclude", "vendor/lib.py", "generated/a.py", "src/app.py", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "vendor" / "lib.py").read_text() == BUGGY and (repo / "generated" / "a.py").read_text() == BUGGY
    assert "uint64" in (repo / "src" / "app.py").read_text()


def test_outside_a_repository_nothing_changes(tmp_path):
    (tmp_path / ".gitignore").write_text("a.py\n")  # not a repository: this file means nothing
    (tmp_path / "a.py").write_text(BUGGY)
    assert _files(".", cwd=tmp_path) == {"a.py"}


def test_bad_input_is_reported_once_and_does_not_stop_discovery(repo):
    (repo / "pkg" / ".gitignore").unlink()
    (repo / "pkg" / ".gitignore").mkdir()  # unreadable as a file
    (repo / "src" / ".gitignore").write_text("***/[\n!\n")  # patterns git rejects
    proc = _cli("--show-files", ".", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("cannot read") == 1 and "pkg/.gitignore" in proc.stderr
    assert "src/app.py" in proc.stdout and "pkg/sub/local_only.py" in proc.stdout


def test_flake8_plugin_and_language_server_skip_excluded_files(repo):
    pytest.importorskip("flake8")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}

    def run(*paths: str) -> str:
        command = [sys.executable, "-m", "flake8", "--select", "PTR", *paths]
        return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env).stdout

    assert "src/app.py:2" in run("src/app.py")
    assert run("vendor/lib.py", "generated/a.py") == ""
    from ptrlint.config import load_file
    from ptrlint.discovery import excluded_reason

    config = load_file(repo / "pyproject.toml")
    assert excluded_reason(str(repo / "vendor" / "lib.py"), config) == "excluded by 'vendor'"
    assert excluded_reason(str(repo / "generated" / "a.py"), config) == "ignored by git"
    assert excluded_reason(str(repo / "src" / "app.py"), config) is None
