"""Same input, same output: a package's findings, fixes, messages and related locations do not
depend on the number of workers, on the order in which the planner and the workers take the
modules (``PTRLINT_TEST_PERMUTE`` shuffles every order the planner chooses and staggers the
workers), on the string hash seed, or on what the cache holds; and a file linted alone (as
pre-commit does) never gets a bolder fix than it gets in the whole tree.

The package has what made answers depend on timing: a function-level (deferred) import of a
project function that fills a table, a package ``__init__`` that re-exports it, consumers in
other modules (a dataclass field, a method's result, a tuple's items, a module a loader returns),
and enough modules that the runs use the worker pool.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_fix_classes import CASES, LAUNCHER, _write

FILLERS = 36  # modules with evidence besides the cases': more than the pool's threshold (32 files)


def _package(root: Path) -> None:
    files: dict[str, str] = {"app/launch.py": LAUNCHER}
    for name, case in sorted(CASES.items()):
        for path, text in case.files.items():  # each case in a subpackage of its own
            files[path.replace("app/", f"app/{name}/", 1)] = text.replace("from .launch", "from ..launch")
    files.update(_SHARED)
    for i in range(FILLERS):
        files[f"app/fill/m{i:02d}.py"] = f"""
            import torch

            from ..tuple_unpacked_result.plan import tables


            def table_{i}(blocks, kernel):
                ptrs = torch.tensor([b.data_ptr() + {i} for b in blocks], dtype=torch.int64)
                src, dst = tables([(b, b) for b in blocks])
                kernel[(1,)](ptrs, dst)
                return src
        """
    _write(root, files)
    (root / "pyproject.toml").write_text("[project]\nname = 'app'\n")


# A table read in many modules, a class written into by many: answers that several modules give,
# where only a fixed order makes the deciding consumer and the evidence the same from run to run.
_SHARED = {
    "app/shared/peers.py": """
        from dataclasses import dataclass

        import torch


        @dataclass
        class Peers:
            addresses: torch.Tensor
            slots: torch.Tensor

            @classmethod
            def create(cls, buffers, n):
                return cls(torch.tensor([b.data_ptr() for b in buffers], dtype=torch.int64),
                           torch.zeros(n, dtype=torch.int64))
    """,
    **{
        f"app/shared/reader{i}.py": f"""
        import intext

        from .peers import Peers


        def read{i}(peers: Peers, offset):
            head = peers.addresses + {i * 8}
            intext.gather(head)
            return intext.gather(peers.addresses[{i}:])
    """
        for i in range(4)
    },
    **{
        f"app/shared/writer{i}.py": f"""
        from .peers import Peers


        def write{i}(peers: Peers, buffers):
            view = peers.slots.numpy()
            view[{i}] = buffers[{i}].data_ptr() + {i * 64}
    """
        for i in range(4)
    },
}


def _lint(root: Path, *args: str, seed: int | None = None, hash_seed: str = "0") -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PTRLINT_TEST_PERMUTE"}
    env["PYTHONHASHSEED"] = hash_seed
    if seed is not None:
        env["PTRLINT_TEST_PERMUTE"] = str(seed)
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--output-format", "json", *args],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("determinism") / "project"
    _package(root)
    return root


@pytest.fixture(scope="module")
def reference(package) -> tuple[int, str]:
    return _lint(package, "--no-cache", "-j", "1", ".")


def test_the_package_has_findings_of_every_kind(reference):
    findings = json.loads(reference[1])
    titles = [f["fix"]["title"] for f in findings if f["fix"]]
    assert len(findings) >= FILLERS + 8
    assert any(t.startswith("Create the table unsigned") for t in titles)
    assert any(t.startswith("Use an unsigned") and "no use needs int64" in t for t in titles)
    assert any("loaded by" in t or "cannot type" in t for t in titles)


@pytest.mark.parametrize(
    "jobs, seed, hash_seed",
    [
        ("1", 1, "1"),
        ("2", None, "2"),
        ("2", 2, "3"),
        ("2", 3, "random"),
        ("4", 4, "4"),
        ("4", 5, "random"),
    ],
)
def test_cold_runs_give_the_same_bytes(package, reference, jobs, seed, hash_seed):
    assert _lint(package, "--no-cache", "-j", jobs, ".", seed=seed, hash_seed=hash_seed) == reference


def test_cold_warm_and_partly_warm_runs_give_the_same_bytes(package, reference):
    try:  # the cache lives next to the configuration (.ptrlint_cache/)
        assert _lint(package, "-j", "2", ".", seed=6) == reference  # cold, filling the cache
        assert _lint(package, "-j", "1", ".", seed=7, hash_seed="5") == reference  # warm
        stamp = time.time() - 30
        for path in sorted(package.rglob("*.py"))[::5]:  # a fifth of the files touched: re-read, re-analysed
            os.utime(path, (stamp, stamp))
        assert _lint(package, "-j", "2", ".", seed=8) == reference
    finally:
        shutil.rmtree(package / ".ptrlint_cache", ignore_errors=True)


_BOLDNESS = {"uint64": 2, "bit-preserving": 1, "unsafe": 0, "none": 0}


def _kind(finding: dict) -> str:
    fix = finding["fix"]
    if fix is None or not fix["safe"]:
        return "none" if fix is None else "unsafe"
    return "bit-preserving" if fix["title"].startswith("Create the table unsigned") else "uint64"


def test_a_file_alone_never_gets_a_bolder_fix_than_in_the_whole_tree(package, reference):
    whole = {(f["path"], f["line"], f["code"]): _kind(f) for f in json.loads(reference[1])}
    for path in sorted({p for p, _, _ in whole}):
        alone = {(f["path"], f["line"], f["code"]): _kind(f) for f in json.loads(_lint(package, "--no-cache", path)[1])}
        for key, kind in alone.items():
            assert key in whole, (key, "found alone, not in the whole tree")
            assert _BOLDNESS[kind] <= _BOLDNESS[whole[key]], (key, kind, whole[key])
