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

# The key that authenticates cache entries (ptrlint/cache.py) lives in the user's cache directory; the
# tests keep their own, so that they neither need nor touch the user's.
if "PTRLINT_SECRET_DIR" not in os.environ:
    import tempfile

    os.environ["PTRLINT_SECRET_DIR"] = tempfile.mkdtemp(prefix="ptrlint-test-secret-")


def load_benchmark(name: str):  # type: ignore[no-untyped-def]
    """A script of benchmarks/ as a module (the benchmarks are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"ptrlint_benchmark_{name}", REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def needs_shared(path: Path) -> None:
    """Skip (naming the missing path) when ``path`` under ../shared is absent; fail instead under CI.

    A user's clone has no ../shared beside it; CI has, and sets PTRLINT_REQUIRE_SHARED=1 so that
    the corpus and schema tests can never be skipped there by accident.
    """
    if path.exists():
        return
    if os.environ.get("PTRLINT_REQUIRE_SHARED"):
        pytest.fail(f"{path} is missing, but PTRLINT_REQUIRE_SHARED is set")
    pytest.skip(f"{path} is not beside this checkout (the shared corpus and data live outside the repository)")


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


def run_cli(
    *args: str, cwd: Path | None = None, input: bytes | None = None, env: dict | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m ptrlint`` in a subprocess (real process boundaries)."""
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def write_pointer_package(root: Path, package: str = "pkg") -> list[str]:
    """A two-module package whose pointer table crosses a module: ``tables.pointer_table`` returns
    addresses, ``use.run`` stores them as int64 and adds to them. Returns the three files' paths."""
    (root / package).mkdir()
    (root / package / "__init__.py").write_text("")
    (root / package / "tables.py").write_text("def pointer_table(xs):\n    return [x.data_ptr() for x in xs]\n")
    (root / package / "use.py").write_text(
        f"import torch\nfrom {package}.tables import pointer_table\n\n\ndef run(xs):\n"
        "    t = torch.tensor(pointer_table(xs), dtype=torch.int64)\n    return t + 1\n"
    )
    return [str(root / package / name) for name in ("__init__.py", "tables.py", "use.py")]


def make_fake_vllm(root: Path, mamba_utils_source: str) -> Path:
    """A fake ``vllm`` package with vLLM's module path vllm/v1/worker/mamba_utils.py under ``root``."""
    import textwrap

    pkg = root / "vllm" / "v1" / "worker"
    pkg.mkdir(parents=True)
    for folder in (root / "vllm", root / "vllm" / "v1", pkg):
        (folder / "__init__.py").write_text("")
    (pkg / "mamba_utils.py").write_text(textwrap.dedent(mamba_utils_source))
    return root


# vLLM's old-layout mamba_utils (int64 pointer buffers, unguarded copy), for install() tests
FAKE_VLLM_MAMBA_UTILS = """
import dataclasses
import torch

CALLS = []


def batch_memcpy(src_ptrs, dst_ptrs, sizes):
    CALLS.append("unguarded")


@dataclasses.dataclass
class MambaCopyBuffers:
    src_ptrs: object
    dst_ptrs: object
    sizes: object
    mamba_group_ids: list
    mamba_spec: object
    offset: int = 0

    @classmethod
    def create(cls, max_num_reqs, kv_cache_config, copy_funcs, make_buffer):
        n = max_num_reqs * len(copy_funcs)
        return cls(make_buffer(n, dtype=torch.int64), make_buffer(n, dtype=torch.int64),
                   make_buffer(n, dtype=torch.int32), [0], None)


def collect_mamba_copy_meta(*args):
    raise AssertionError("original called")


def do_mamba_copy_block(copy_bufs):
    n = copy_bufs.offset
    if n:
        batch_memcpy(copy_bufs.src_ptrs.copy_to_gpu(n), copy_bufs.dst_ptrs.copy_to_gpu(n), copy_bufs.sizes.copy_to_gpu(n))
"""
