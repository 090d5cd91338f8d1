"""Package boundaries: the linter never imports torch; the runtime never imports libcst."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    script = code + "\nimport sys; sys.stderr.write('MODULES ' + ' '.join(sys.modules) + '\\n')"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    line = next(x for x in out.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


def test_import_ptrlint_is_light():
    mods = _modules_after("import ptrlint")
    assert "torch" not in mods and "libcst" not in mods and "numpy" not in mods


def test_linting_never_imports_torch_and_needs_libcst_only_for_fixes():
    lint = _modules_after(
        "from ptrlint.cli import main\nmain(['--no-cache', '--exit-zero', '--jobs', '1', 'examples'])"
    )
    assert "torch" not in lint and "numpy" not in lint
    assert "libcst" not in lint, "the analysis runs on ast; libcst is the rewrite engine only"
    diff = _modules_after("from ptrlint.cli import main\nmain(['--no-cache', '--diff', '--jobs', '1', 'examples'])")
    assert "libcst" in diff and "torch" not in diff


def test_runtime_never_imports_libcst():
    import pytest

    pytest.importorskip("torch")
    bare = _modules_after("import ptrlint.runtime")
    assert "torch" not in bare, "the package loads its parts lazily (the pytest plugin imports it everywhere)"
    mods = _modules_after("import ptrlint.runtime\nptrlint.runtime.batch_memcpy\nimport ptrlint.runtime.vllm")
    assert "torch" in mods
    assert "libcst" not in mods and "ptrlint.engine" not in mods


def test_built_wheel_ships_the_runtime_under_ptrlint(tmp_path):
    """The package-dir mapping must put runtime/ into the wheel as ptrlint/runtime/."""
    import zipfile
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(repo)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = next(tmp_path.glob("ptrlint-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "ptrlint/runtime/__init__.py",
        "ptrlint/runtime/guard.py",
        "ptrlint/runtime/_triton_kernel.py",
        "ptrlint/rules/signed_pointer_dtype.py",
        "ptrlint/cli.py",
        "ptrlint/analysis/semantic/collector.py",
        "ptrlint/rewrite/render.py",
        "ptrlint/planner/index.py",
        "ptrlint/notebook.py",
    ):
        assert required in names
    assert not any(n.startswith(("runtime/", "tests/", "benchmarks/")) for n in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "flake8.extension" in text and "vllm.general_plugins" in text and "ptrlint = ptrlint.cli:console" in text
