"""Instruction counts of the per-file analysis, this checkout against a baseline revision.

Wall-clock times on a shared 2-core machine move by +-15% from run to run; a refactor's cost is
a few percent at most. ``valgrind --tool=callgrind`` counts the instructions one process
executes, and the count repeats exactly for the same inputs. Both checkouts analyse the same files
in one process each: the first ``--files`` files of the sglang 0.5.23 package that pass the
prefilter, with every rule, without the index. The count includes interpreter start and imports,
which are the same for both.

    python benchmarks/instructions.py --baseline d4cf09a [--files 60]

Results: ``benchmarks/results/instructions.md``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

WORKLOAD = r"""
import glob, sys
root, tree, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
from ptrlint.config import Config
from ptrlint.engine import analyse, select_codes
try:
    from ptrlint.prefilter import prefilter
except ImportError:  # before the planner/engine split
    from ptrlint.engine import prefilter
config, enabled = Config(), select_codes(["ALL"], [], [])
files = sorted(glob.glob(tree + "/**/*.py", recursive=True))
texts = [(f, t) for f in files for t in [open(f, encoding="utf-8", errors="replace").read()] if prefilter(t, config)]
for path, text in texts[:n]:
    try:
        analyse(text, path, config, enabled)
    except Exception:
        pass
"""


def instructions(checkout: Path, tree: Path, files: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                WORKLOAD,
                str(checkout),
                str(tree),
                str(files),
            ],
            check=True,
            capture_output=True,
        )
        totals = subprocess.run(["callgrind_annotate", str(out)], capture_output=True, text=True).stdout
    match = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", totals)
    if match is None:
        raise SystemExit("callgrind_annotate printed no PROGRAM TOTALS")
    return int(match.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "instructions.md")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import lint_speed  # the wheel fetcher (a git-ignored cache)

    tree = lint_speed.wheel_tree("sglang")
    worktree = Path(tempfile.mkdtemp(prefix="ptrlint-baseline-"))
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), args.baseline],
        check=True,
        capture_output=True,
    )
    try:
        before = instructions(worktree, tree, args.files)
        after = instructions(REPO, tree, args.files)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], capture_output=True)
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    text = (
        f"# Instructions: `{args.baseline}` (baseline) against `{head}`\n\n"
        f"callgrind, one process each, the first {args.files} sglang 0.5.23 files that pass the prefilter, every "
        f"rule, no index; {time.strftime('%Y-%m-%d')}.\n\n"
        "| checkout | instructions | ratio |\n|---|---|---|\n"
        f"| baseline `{args.baseline}` | {before:,} | 1.000 |\n| this `{head}` | {after:,} | {after / before:.3f} |\n"
    )
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
