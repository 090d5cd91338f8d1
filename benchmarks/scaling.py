"""How lint time grows with the number of files: ptrlint and ruff on synthetic trees of 1k, 5k and
20k files built from real ones, side by side in one run, with a plot.

The file pool is the three real trees of ``lint_speed.py`` (the installed torch, the sglang 0.5.23
and flashinfer-python 0.7.2.post1 wheels), interleaved in sorted order so every prefix mixes the
three. A tree of N files takes the first N files of the pool, cycling through it again for the
copies beyond its size; copy ``k`` goes under ``copy_k/``, each keeping its package names, so each
copy is a project of its own whose absolute imports resolve within it (the project index sees
the same import structure as on the real trees).

Each size is timed in alternating rounds: ``ruff check --no-cache --isolated`` (default rules),
ptrlint cold (``--no-cache``), ptrlint warm (cache filled) and ptrlint cold without the index.
Medians of ``--repeats`` rounds; ptrlint's modules are compiled to bytecode first, as ``pip
install`` does. Writes ``benchmarks/results/scaling.{json,md,png}`` (the plot
needs matplotlib: ``pip install '.[bench]'``).

    python benchmarks/scaling.py [--sizes 1000,5000,20000] [--repeats 1]
"""

from __future__ import annotations

import argparse
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_speed import RESULTS, compile_bytecode, find_tool, peak_rss, timed, torch_tree, wheel_tree  # noqa: E402


def pool() -> list[tuple[Path, Path]]:
    """(tree, file) pairs of the three real trees, interleaved."""
    trees = [torch_tree(), wheel_tree("sglang"), wheel_tree("flashinfer")]
    lists = [[(tree, p) for p in sorted(tree.rglob("*.py"))] for tree in trees]
    out: list[tuple[Path, Path]] = []
    for i in range(max(len(x) for x in lists)):
        out.extend(x[i] for x in lists if i < len(x))
    return out


def build(files: list[tuple[Path, Path]], size: int, root: Path) -> None:
    for i in range(size):
        tree, path = files[i % len(files)]
        dest = root / f"copy_{i // len(files)}" / tree.name / path.relative_to(tree)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    for init in root.glob("copy_*/*"):  # every copy's top package is a package, as installed
        if not (init / "__init__.py").exists():
            (init / "__init__.py").touch()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--ruff", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    ruff = find_tool("ruff", args.ruff)
    ptrlint = [sys.executable, "-P", "-m", "ptrlint", "--isolated", "--exit-zero", "--jobs", str(args.jobs)]
    compile_bytecode([])
    files = pool()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="ptrlint-scaling-") as tmp:
            root = Path(tmp)
            build(files, size, root)
            time.sleep(2.5)  # older than the manifest's settling window, as a checkout would be
            subprocess.run([*ptrlint, "."], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            commands = {
                "ruff": [ruff, "check", "--no-cache", "--isolated", "--exit-zero", "-q", "."] if ruff else [],
                "ptrlint_cold": [*ptrlint, "--no-cache", "."],
                "ptrlint_warm": [*ptrlint, "."],
                "ptrlint_cold_no_index": [*ptrlint, "--no-cache", "--no-project-index", "."],
            }
            commands = {k: v for k, v in commands.items() if v}
            times: dict[str, list[float]] = {k: [] for k in commands}
            for _ in range(args.repeats):
                for name, cmd in commands.items():
                    times[name].append(timed(cmd, root))
            row = {
                "files": size,
                "bytes": sum(p.stat().st_size for p in root.rglob("*.py")),
                "median_s": {k: statistics.median(v) for k, v in times.items()},
                "peak_rss_kib": {k: peak_rss(commands[k], root) for k in ("ptrlint_cold", "ptrlint_warm")},
            }
            if "ruff" in row["median_s"]:
                row["ratio_to_ruff"] = {k: v / row["median_s"]["ruff"] for k, v in row["median_s"].items()}
            rows.append(row)
            print(json.dumps(row), flush=True)
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip() if ruff else "no ruff"
    result = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "jobs": args.jobs,
        "repeats": args.repeats,
        "ruff": version,
        "date": time.strftime("%Y-%m-%d"),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "scaling.md").write_text(markdown(result))
    if not plot(result, args.out / "scaling.png"):
        print("matplotlib not installed: no plot (pip install '.[bench]')", file=sys.stderr)
    print(markdown(result))
    return 0


LABELS = {
    "ruff": "ruff (default rules)",
    "ptrlint_cold": "ptrlint cold (index on)",
    "ptrlint_warm": "ptrlint warm (index on)",
    "ptrlint_cold_no_index": "ptrlint cold, no index",
}


def markdown(result: dict) -> str:
    out = [
        f"Synthetic trees of real files (torch, sglang, flashinfer), {result['cpus']} CPUs, --jobs {result['jobs']}, "
        f"median of {result['repeats']} round(s); {result['ruff']}; {result['date']}.",
        "",
        "| files | MB | " + " | ".join(LABELS.values()) + " | cold / ruff | warm / ruff | peak RSS cold |",
        "|---|---|" + "---|" * (len(LABELS) + 3),
    ]
    for row in result["rows"]:
        t, r = row["median_s"], row.get("ratio_to_ruff", {})
        cells = [f"{t[k]:.2f} s" if k in t else "-" for k in LABELS]
        ratios = [f"{r[k]:.2f}x" if k in r else "-" for k in ("ptrlint_cold", "ptrlint_warm")]
        out.append(
            f"| {row['files']:,} | {row['bytes'] / 1e6:.0f} | "
            + " | ".join(cells)
            + " | "
            + " | ".join(ratios)
            + f" | {row['peak_rss_kib']['ptrlint_cold'] / 1024:.0f} MB |"
        )
    return "\n".join(out) + "\n"


def plot(result: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for key, label in LABELS.items():
        if all(key in r["median_s"] for r in rows):
            ax.plot([r["files"] for r in rows], [r["median_s"][key] for r in rows], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("files in the tree")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"Lint time against tree size ({result['cpus']} CPUs)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


if __name__ == "__main__":
    sys.exit(main())
