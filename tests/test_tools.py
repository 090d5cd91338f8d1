"""The code held by the tools engineers use (issue 57): mypy in strict mode on the package and the
runtime, ruff's lint rules and ruff's formatter on the whole repository, each with the settings in
``pyproject.toml`` (``[tool.mypy]``, ``[tool.ruff]``) and run as a module of the interpreter that runs
the tests (both are pinned in the ``test`` extra), so a clone checks exactly what its CI checks.

To format after an edit: ``python -m ruff format .``; to fix what ruff can: ``python -m ruff check --fix .``."""

from __future__ import annotations

import subprocess
import sys

from .conftest import REPO


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True, timeout=1200)


def test_mypy_finds_no_error_in_the_package_or_the_runtime():
    done = _run("mypy")  # the files and the flags: [tool.mypy]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_check_finds_nothing():
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_format_changes_nothing():
    done = _run("ruff", "format", "--check", "--no-cache", ".")
    assert done.returncode == 0, "run `python -m ruff format .`:\n" + done.stdout[-6000:] + done.stderr[-2000:]
