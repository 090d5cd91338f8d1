"""Lint speed of ptrlint against its anchor (ruff) and its floor (a libcst parse of every file).

Default tree: the installed torch package, found without importing torch. For each fraction
of the tree (1/4, 1/2, all files, in sorted order) it times, alternating within each round:
ptrlint cold (--no-cache), ptrlint warm (cache filled), `ruff check --no-cache --isolated`
(default rules, if ruff is installed) and a libcst parse-only pass over the same files with as
many processes as ptrlint uses. Medians and minima of --repeats rounds, peak RSS of the whole
process tree. Writes benchmarks/results/lint_speed.json and lint_speed.md.

    python benchmarks/lint_speed.py [--tree PATH] [--repeats 3] [--fractions 0.25,0.5,1]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

PARSE_ONLY = r"""
import sys
from concurrent.futures import ProcessPoolExecutor
import libcst

def parse(path):
    try:
        libcst.parse_module(open(path, "rb").read())
        return 1
    except Exception:
        return 0

files = [line.rstrip("\n") for line in open(sys.argv[1])]
with ProcessPoolExecutor(int(sys.argv[2])) as pool:
    ok = sum(pool.map(parse, files, chunksize=8))
print(ok)
"""


def default_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed; pass --tree PATH")
    return Path(next(iter(spec.submodule_search_locations)))


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def peak_rss(cmd: list[str], cwd: Path) -> int:
    """Peak RSS in KiB of one run (GNU time if present: it reports the largest process)."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    if os.path.exists(gnu_time):
        proc = subprocess.run([gnu_time, "-f", "%M", *cmd], cwd=cwd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        try:
            return int(proc.stderr.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return -1
    return -1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fractions", default="0.25,0.5,1")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    tree = (args.tree or default_tree()).resolve()
    files = sorted(str(p) for p in tree.rglob("*.py"))
    lines = {f: sum(1 for _ in open(f, "rb")) for f in files}
    # -P: the linted tree is the working directory; it must not shadow the stdlib (torch has such folders)
    ptrlint = [sys.executable, "-P", "-m", "ptrlint", "--isolated", "--exit-zero", "--jobs", str(args.jobs)]
    ruff = shutil.which("ruff") or (str(Path(sys.executable).parent / "ruff") if (Path(sys.executable).parent / "ruff").exists() else None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ptrlint-bench-") as tmp:
        work = Path(tmp)
        for fraction in [float(f) for f in args.fractions.split(",")]:
            subset = files[: max(1, int(len(files) * fraction))]
            # a copy of the subset keeps ruff, ptrlint and the parse pass on exactly the same files
            root = work / f"tree_{fraction}"
            for f in subset:
                dest = root / Path(f).relative_to(tree)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
            listing = work / f"files_{fraction}.txt"
            listing.write_text("\n".join(str(root / Path(f).relative_to(tree)) for f in subset) + "\n")
            filled = subprocess.run([*ptrlint, "."], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if filled.returncode not in (0, 2):
                sys.exit(f"ptrlint failed on the tree: {filled.stderr[-2000:]}")  # fill the cache, and fail loudly
            times: dict[str, list[float]] = {"ptrlint_cold": [], "ptrlint_warm": [], "ruff": [], "libcst_parse_only": []}
            for _ in range(args.repeats):
                times["ptrlint_cold"].append(timed([*ptrlint, "--no-cache", "."], root))
                times["ptrlint_warm"].append(timed([*ptrlint, "."], root))
                if ruff:
                    times["ruff"].append(timed([ruff, "check", "--no-cache", "--isolated", "--exit-zero", "-q", "."], root))
                times["libcst_parse_only"].append(
                    timed([sys.executable, "-P", "-c", PARSE_ONLY, str(listing), str(args.jobs)], root)
                )
            row = {
                "fraction": fraction,
                "files": len(subset),
                "lines": sum(lines[f] for f in subset),
                "median_s": {k: statistics.median(v) for k, v in times.items() if v},
                "min_s": {k: min(v) for k, v in times.items() if v},
                "peak_rss_kib": {
                    "ptrlint_cold": peak_rss([*ptrlint, "--no-cache", "."], root),
                    "ptrlint_warm": peak_rss([*ptrlint, "."], root),
                    **({"ruff": peak_rss([ruff, "check", "--no-cache", "--isolated", "--exit-zero", "-q", "."], root)} if ruff else {}),
                },
            }
            if ruff:
                r = row["median_s"]["ruff"]
                row["ratio_to_ruff"] = {k: v / r for k, v in row["median_s"].items()}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {
        "tree": str(tree),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "jobs": args.jobs,
        "repeats": args.repeats,
        "ruff": subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip() if ruff else None,
        "date": time.strftime("%Y-%m-%d"),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lint_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "lint_speed.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(result: dict) -> str:
    out = [
        f"Tree: `{result['tree']}`; {result['cpus']} CPUs, --jobs {result['jobs']}, median of {result['repeats']} "
        f"alternating rounds; {result['ruff'] or 'ruff not installed'}; {result['date']}.",
        "",
        "| files | lines | ptrlint cold | ptrlint warm | ruff | libcst parse only | cold / ruff | warm / ruff | peak RSS cold / warm / ruff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        m, ratio, rss = row["median_s"], row.get("ratio_to_ruff", {}), row["peak_rss_kib"]
        out.append(
            f"| {row['files']} | {row['lines']:,} | {m['ptrlint_cold']:.2f} s | {m['ptrlint_warm']:.2f} s | "
            f"{m.get('ruff', float('nan')):.2f} s | {m['libcst_parse_only']:.2f} s | "
            f"{ratio.get('ptrlint_cold', float('nan')):.1f}x | {ratio.get('ptrlint_warm', float('nan')):.2f}x | "
            f"{rss['ptrlint_cold'] // 1024} / {rss['ptrlint_warm'] // 1024} / {rss.get('ruff', -1024) // 1024} MB |"
        )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
