"""No dead code: vulture at 60 % confidence finds nothing beyond scripts/vulture_whitelist.py, which names
only what frameworks call by name (entry points, LSP handlers, libcst visitors, pytest hooks)."""

from __future__ import annotations

import ast
import subprocess
import sys

from .conftest import REPO

SCANNED = ("ptrlint", "runtime", "tests", "benchmarks", "scripts")
EXCLUDED = "tests/fixtures,*/fixtures/*,*/.cache/*"  # sample code to lint, and third-party trees


def test_vulture_finds_no_dead_code():
    proc = subprocess.run(
        [sys.executable, "-m", "vulture", *SCANNED, "--min-confidence", "60", "--exclude", EXCLUDED],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, (
        f"vulture reports dead code (remove it; list only framework entry points in "
        f"scripts/vulture_whitelist.py):\n{proc.stdout}{proc.stderr}"
    )


def test_the_whitelist_lists_only_live_names():
    """An entry whose code went away would hide a new dead name of the same spelling."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vulture",
            *SCANNED,
            "--min-confidence",
            "60",
            "--exclude",
            f"{EXCLUDED},scripts/vulture_whitelist.py",
            "--make-whitelist",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    reported = {line.split("  #")[0].strip() for line in proc.stdout.splitlines() if line.strip()}
    listed = set()
    whitelist = ast.parse((REPO / "scripts" / "vulture_whitelist.py").read_text())
    for statement in whitelist.body[1:]:  # after the docstring: one expression per entry (or a tuple of them)
        if isinstance(statement, ast.Expr):
            value = statement.value
            listed.update(ast.unparse(e) for e in (value.elts if isinstance(value, ast.Tuple) else [value]))
    assert listed and listed <= reported, f"whitelisted but no longer reported: {sorted(listed - reported)}"
