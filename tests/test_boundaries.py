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


def test_linting_never_imports_torch():
    mods = _modules_after("from ptrlint.cli import main\nmain(['--no-cache', '--exit-zero', '--jobs', '1', 'examples'])")
    assert "libcst" in mods
    assert "torch" not in mods and "numpy" not in mods


def test_runtime_never_imports_libcst():
    import pytest

    pytest.importorskip("torch")
    mods = _modules_after("import ptrlint.runtime")
    assert "torch" in mods
    assert "libcst" not in mods and "ptrlint.engine" not in mods
