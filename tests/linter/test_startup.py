"""What a run imports (issue 56: a run imports only what it uses). Start-up is most of a small run
(pre-commit on one file, an editor's save): a process pool, the ignore-file matcher and the rules
are loaded only when the run needs them. Checked on sys.modules after a real run, in a fresh
interpreter; times are measured by benchmarks/small_runs.py, never here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_SOURCE = "import torch\nx = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"
_CLEAN = "def f(x):\n    return x + 1\n"


def _imported_after(tmp_path, source: str, *args: str) -> set[str]:
    (tmp_path / "a.py").write_text(source)
    code = textwrap.dedent("""
        import sys
        from ptrlint.cli import main
        try:
            main(sys.argv[1:])
        except SystemExit:
            pass
        print("\\n".join(sorted(sys.modules)), file=sys.stderr)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code, "--exit-zero", *args], cwd=tmp_path, capture_output=True, text=True
    )
    return set(proc.stderr.split())


@pytest.mark.parametrize(
    "source, args, absent",
    [
        (_SOURCE, ("--no-cache", "a.py"), ("concurrent.futures.process", "multiprocessing", "pathspec", "libcst")),
        (
            _SOURCE,
            ("--isolated", "--no-cache", "--no-project-index", "a.py"),
            ("concurrent.futures.process", "pathspec"),
        ),
        (_CLEAN, ("--no-cache", "a.py"), ("concurrent.futures.process", "pathspec", "ptrlint.rules", "libcst")),
    ],
)
def test_a_run_on_one_file_imports_only_what_it_uses(tmp_path, source, args, absent):
    modules = _imported_after(tmp_path, source, *args)
    assert "ptrlint.cli" in modules  # the run happened
    loaded = sorted(m for m in absent if m in modules)
    assert not loaded, f"a run on one file imported {loaded}"


def test_a_folder_run_reads_ignore_files(tmp_path):
    """The matcher is loaded where it is needed: a folder is walked and its .gitignore read."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("skipped.py\n")
    (tmp_path / "skipped.py").write_text(_SOURCE)
    modules = _imported_after(tmp_path, _SOURCE, "--no-cache", ".")
    assert "pathspec" in modules
