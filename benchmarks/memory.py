"""Peak memory of ptrlint on the real trees: the largest process (GNU time's maximum RSS) and all
its processes together (the planner and its workers: summed PSS, sampled from /proc), cold
(``--no-cache``) and warm, with the project index on (the default), on copies of the trees of
``lint_speed.py``. Writes ``benchmarks/results/memory.{json,md}``.

    python benchmarks/memory.py [--tree torch --tree sglang ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_speed import RESULTS, peak_rss, torch_tree, tree_rss, wheel_tree  # noqa: E402


def _not_python(folder: str, names: list[str]) -> list[str]:
    """Everything but Python files and folders (torch's tree holds a gigabyte of libraries)."""
    return [n for n in names if not n.endswith(".py") and not os.path.isdir(os.path.join(folder, n))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", choices=("torch", "sglang", "flashinfer"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    ptrlint = [sys.executable, "-P", "-m", "ptrlint", "--isolated", "--exit-zero", "--jobs", str(args.jobs)]
    rows = []
    for name in args.tree or ["torch", "sglang", "flashinfer"]:
        tree = torch_tree() if name == "torch" else wheel_tree(name)
        with tempfile.TemporaryDirectory(prefix="ptrlint-memory-") as tmp:
            root = Path(tmp)
            shutil.copytree(tree, root / tree.name, ignore=_not_python)
            time.sleep(2.5)  # older than the manifest's settling window
            subprocess.run([*ptrlint, "."], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cold, warm = [*ptrlint, "--no-cache", "."], [*ptrlint, "."]
            row = {
                "tree": name,
                "files": sum(1 for _ in (root / tree.name).rglob("*.py")),
                "largest_process_kib": {"cold": peak_rss(cold, root), "warm": peak_rss(warm, root)},
                "all_processes_kib": {"cold": tree_rss(cold, root), "warm": tree_rss(warm, root)},
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"cpus": os.cpu_count(), "jobs": args.jobs, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"Peak memory, {result['cpus']} CPUs, --jobs {result['jobs']}, project index on; {result['date']}.",
        "",
        "| tree | files | largest process cold / warm | all processes (PSS) cold / warm |",
        "|---|---|---|---|",
    ]
    for row in rows:
        big, every = row["largest_process_kib"], row["all_processes_kib"]
        lines.append(
            f"| {row['tree']} | {row['files']:,} | {big['cold'] // 1024} / {big['warm'] // 1024} MB | "
            f"{every['cold'] // 1024} / {every['warm'] // 1024} MB |"
        )
    (args.out / "memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
