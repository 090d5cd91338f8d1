"""Differential check: does a checkout of ptrlint say exactly what another one says?

For every tree, ptrlint runs twice with default settings (project index on, no cache): once with
``--output-format json --unsafe-fixes`` (findings, messages, related locations, fix titles, safety
and rendered edits) and once with ``--diff --unsafe-fixes`` (the text the fix loop produces). The
two outputs, split per file, are the tree's *snapshot*. Two checkouts behave identically on a
tree when their snapshots are byte-identical.

    python benchmarks/differential.py --baseline d4cf09a            # corpora, examples, fixtures
    python benchmarks/differential.py --baseline d4cf09a --real     # + sglang, flashinfer, vLLM

The baseline runs from a ``git worktree`` of the given revision with the same interpreter (the
dependencies do not change between revisions). Results: ``benchmarks/results/differential.md``.
``tests/linter/test_differential.py`` keeps per-file digests of the small trees under
``tests/snapshots/``, so any behaviour change of a refactor shows up in the README's test command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

# trees of this repository and of ../shared (relative names are what snapshots record)
SMALL_TREES = {
    "examples": REPO / "examples",
    "fixtures": REPO / "tests" / "fixtures" / "corpus" / "cases",
    "corpus": SHARED / "corpus" / "cases",
    "corpus-v2": SHARED / "corpus" / "v2",
    "corpus-v3": SHARED / "corpus" / "v3" / "cases",
    "cross_module": SHARED / "corpus" / "cross_module",
}
REAL_TREES = {
    "sglang": ("sglang==0.5.23", "sglang"),
    "flashinfer": ("flashinfer-python==0.7.2.post1", "flashinfer"),
    "vllm": ("vllm==0.33.0", "vllm"),
}


def command_for(checkout: Path) -> list[str]:
    """How to run the ptrlint of ``checkout`` (its own source first on the path)."""
    code = f"import sys; sys.path.insert(0, {str(checkout)!r}); from ptrlint.cli import main; sys.exit(main())"
    return [sys.executable, "-c", code]


def _run(cmd: list[str], tree: Path, *args: str) -> str:
    # run from the tree's parent with a relative name: the paths in the output do not depend on
    # where the tree lives; a copy outside any project keeps this repository's pyproject out of it
    proc = subprocess.run(
        [*cmd, "--no-cache", "--exit-zero", *args, tree.name],
        cwd=tree.parent,
        capture_output=True,
        text=True,
        timeout=3600,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} on {tree}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc.stdout


def snapshot(cmd: list[str], tree: Path) -> dict[str, str]:
    """{file: canonical text of what ptrlint says about it} for one tree."""
    per_file: dict[str, list[str]] = {}
    for finding in json.loads(_run(cmd, tree, "--output-format", "json", "--unsafe-fixes") or "[]"):
        per_file.setdefault(finding["path"], []).append(json.dumps(finding, sort_keys=True))
    diff = _run(cmd, tree, "--diff", "--unsafe-fixes")
    current = None
    for line in diff.splitlines(keepends=True):
        if line.startswith("--- a/"):
            current = line[len("--- a/") :].rstrip("\n")
        if current is not None:
            per_file.setdefault(current, []).append(line)
    return {
        path: "".join(x if x.endswith("\n") else x + "\n" for x in lines) for path, lines in sorted(per_file.items())
    }


def digests(snap: dict[str, str]) -> dict[str, str]:
    return {path: hashlib.sha256(text.encode()).hexdigest()[:16] for path, text in snap.items()}


def compare(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files whose snapshots differ (present in one only, or with different text)."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _worktree(revision: str) -> Path:
    where = Path(tempfile.mkdtemp(prefix="ptrlint-baseline-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), revision], check=True, capture_output=True
    )
    return where


def _real_tree(name: str) -> Path:
    sys.path.insert(0, str(REPO / "benchmarks"))
    import lint_speed  # the wheel fetcher shared with the speed benchmark (a git-ignored cache)

    lint_speed.WHEELS.setdefault(name, REAL_TREES[name])
    return Path(lint_speed.wheel_tree(name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare this checkout against")
    parser.add_argument("--real", action="store_true", help="also the sglang, flashinfer-python and vLLM packages")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "differential.md"))
    args = parser.parse_args(argv)
    trees = {name: path for name, path in SMALL_TREES.items() if path.is_dir()}
    scratch = Path(tempfile.mkdtemp(prefix="ptrlint-trees-"))
    if args.real:  # linted from a copy outside this repository, as a user would (no pyproject above it)
        for name in REAL_TREES:
            trees[name] = Path(shutil.copytree(_real_tree(name), scratch / name / REAL_TREES[name][1]))
    revision = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", args.baseline], capture_output=True, text=True, check=True
    ).stdout.strip()
    saved = Path(tempfile.gettempdir()) / "ptrlint-differential" / revision  # a baseline's snapshots never change
    saved.mkdir(parents=True, exist_ok=True)
    baseline = _worktree(revision)
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    rows, failed = [], False
    try:
        for name, tree in trees.items():
            started = time.perf_counter()
            stored = saved / f"{name}.json"
            if stored.is_file():
                before = json.loads(stored.read_text())
            else:
                before = snapshot(command_for(baseline), tree)
                stored.write_text(json.dumps(before))
            after = snapshot(command_for(REPO), tree)
            differing = compare(before, after)
            failed |= bool(differing)
            findings = sum(text.count('"code": ') for text in after.values())
            rows.append(
                f"| {name} | {len(after)} | {findings} | {'identical' if not differing else ', '.join(differing[:5])} "
                f"| {time.perf_counter() - started:.0f} s |"
            )
            print(rows[-1], flush=True)
            for path in differing[:3]:
                print(
                    f"--- {path} (baseline)\n{before.get(path, '')}\n+++ {path} (this checkout)\n{after.get(path, '')}"
                )
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    Path(args.out).write_text(
        f"# Differential check: {args.baseline} (baseline) against {head or 'this checkout'}\n\n"
        "Default settings (project index on), `--output-format json --unsafe-fixes` and `--diff --unsafe-fixes`, "
        "compared byte for byte per file (`benchmarks/differential.py`).\n\n"
        "| tree | files with output | findings | result | time |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
