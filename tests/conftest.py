from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def ptrlint(capsys, monkeypatch):
    """Run the CLI in-process: ptrlint("path", "--fix") -> Run(code, out, err)."""
    from ptrlint.cli import main

    def run(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        if stdin is not None:
            import io

            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        code = main(["--jobs", "1", *args])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def run_cli(*args: str, cwd: Path | None = None, input: bytes | None = None, env: dict | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m ptrlint`` in a subprocess (real process boundaries)."""
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def make_fake_vllm(root: Path, mamba_utils_source: str) -> Path:
    """A fake ``vllm`` package with vLLM's module path vllm/v1/worker/mamba_utils.py under ``root``."""
    import textwrap

    pkg = root / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    for folder in (root / "vllm", root / "vllm" / "v1", pkg):
        (folder / "__init__.py").write_text("")
    (pkg / "mamba_utils.py").write_text(textwrap.dedent(mamba_utils_source))
    return root
