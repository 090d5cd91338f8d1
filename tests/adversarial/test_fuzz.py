"""Bounded fuzzing of the command line on a scratch tree (issue 59): arbitrary file bytes, notebooks and
configuration values. Whatever the tree holds: no traceback, an exit status of 0, 1 or 2, and no byte
changed outside the tree (a file beside it, reachable through a symbolic link inside it)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

SEEDS = [
    b"import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nprint(ptrs.tolist())\n",
    b"import numpy as np\na = np.zeros(4, dtype=np.uint64)\na[0] = x.ctypes.data\n",
    b"import ctypes\nclass A(ctypes.Structure):\n    _fields_ = [('p', ctypes.c_int64)]\n",
]

source_bytes = st.one_of(
    st.binary(max_size=400),
    st.sampled_from(SEEDS).flatmap(lambda seed: st.integers(0, len(seed)).map(lambda n: seed[:n])),
    st.sampled_from(SEEDS).flatmap(lambda seed: st.binary(max_size=40).map(lambda junk: seed + junk)),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
notebooks = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "cells": st.lists(
                st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {
                            "cell_type": st.sampled_from(["code", "markdown", 3]),
                            "metadata": json_values,
                            "source": st.one_of(
                                st.text(max_size=60), st.lists(st.text(max_size=30), max_size=4), json_values
                            ),
                        }
                    ),
                ),
                max_size=4,
            ),
            "metadata": json_values,
            "nbformat": st.just(4),
            "nbformat_minor": st.just(5),
        }
    ),
)
config_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            '[tool.ptrlint]\nselect = ["PTR001"]\n',
            '[tool.ptrlint]\npointer-names = ["(a+)+"]\n',
            '[tool.ptrlint]\ntorch-version = "two"\n',
            '[tool.ptrlint]\nplatforms = ["cuda"]\n',
            "[tool.ptrlint]\nunknown = 1\n",
            "[tool.ptrlint\n",
        ]
    ),
)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _run(argv: list[str]) -> int:
    from ptrlint.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code


@settings(
    max_examples=int(os.environ.get("PTRLINT_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    source=source_bytes,
    notebook=notebooks,
    config=config_values,
    flags=st.sampled_from(
        [
            [],
            ["--fix"],
            ["--fix", "--unsafe-fixes"],
            ["--diff"],
            ["--add-noqa"],
            ["--output-format", "sarif"],
            ["--output-format", "github", "--show-evidence"],
        ]
    ),
)
def test_fuzzed_trees_never_crash_nor_write_outside(
    source: bytes, notebook: object, config: str, flags: list[str]
) -> None:
    root = Path(tempfile.mkdtemp(prefix="ptrlint-fuzz-"))
    try:
        tree, outside = root / "tree", root / "outside"
        tree.mkdir()
        outside.mkdir()
        (outside / "victim.py").write_bytes(SEEDS[0])
        (tree / "m.py").write_bytes(source)
        (tree / "n.ipynb").write_text(json.dumps(notebook))
        (tree / "pyproject.toml").write_text(config)
        (tree / "link.py").symlink_to(outside / "victim.py")
        before = _digest(outside)
        cwd = os.getcwd()
        os.chdir(tree)
        try:
            code = _run(["--jobs", "1", "--no-cache", *flags, "."])
        finally:
            os.chdir(cwd)
        assert code in (0, 1, 2)
        assert _digest(outside) == before
    finally:
        shutil.rmtree(root, ignore_errors=True)
