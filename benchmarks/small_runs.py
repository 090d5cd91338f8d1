"""The latency users feel most: one file or one subfolder linted after the whole tree was, as a
pre-commit hook or an editor does, ptrlint and ruff side by side on a copy of the installed torch;
and one file cold (``--no-cache`` for both), alone in its folder and inside the torch copy.

The tree is copied to a temporary folder with a ``pyproject.toml`` (its own project root, so each
tool's cache lives in it). Both tools lint the whole tree once (cache filled), then, in
alternating rounds: the whole tree warm, each of a few single files warm (the largest module, and
modules of ``nn``, ``cuda`` and ``distributed``), and a subfolder (``torch/distributed``) warm; then
cold: the repository's ``examples/kv_offload.py`` alone in a folder of its own (a start-up and one
file: the planner finds no other module to read), and ``torch/cuda/__init__.py`` in the copy (its
imports and importers are read and analysed for their summaries, as a first pre-commit run does).
ruff runs with its default rules and its cache (``--isolated``); ptrlint with its cache. Medians
of ``--repeats`` rounds; ptrlint's modules are compiled to bytecode first, as ``pip install`` does.
Writes ``benchmarks/results/small_runs.{json,md}``.

    python benchmarks/small_runs.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_speed import RESULTS, compile_bytecode, find_tool, timed, torch_tree  # noqa: E402

FILES = ("torch/nn/functional.py", "torch/cuda/__init__.py", "torch/distributed/distributed_c10d.py")
FOLDER = "torch/distributed"
COLD_FILE = "kv_offload.py"  # of the repository's examples/


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ruff", default=None)
    parser.add_argument("--name", default="small_runs")
    args = parser.parse_args()
    ruff = find_tool("ruff", args.ruff)
    if ruff is None:
        print("ruff not found: pip install ruff", file=sys.stderr)
        return 2
    compile_bytecode([])
    work = Path(tempfile.mkdtemp(prefix="ptrlint-small-"))
    alone = Path(tempfile.mkdtemp(prefix="ptrlint-alone-"))  # outside the copy: a project of its own
    try:
        shutil.copytree(torch_tree(), work / "torch", ignore=shutil.ignore_patterns("*.so", "*.so.*", "*.a", "*.pyc"))
        (work / "pyproject.toml").write_text("[project]\nname = 'torch-copy'\n")
        largest = max((work / "torch").rglob("*.py"), key=lambda p: p.stat().st_size).relative_to(work).as_posix()
        files = (largest, *(f for f in FILES if (work / f).exists()))
        ptrlint = [sys.executable, "-m", "ptrlint", "--exit-zero"]
        ruff_cmd = [ruff, "check", "--isolated", "--exit-zero", "--quiet"]
        for cmd in (ptrlint, ruff_cmd):  # fill both caches
            timed(cmd + ["torch"], work)
        shutil.copyfile(Path(__file__).resolve().parents[1] / "examples" / COLD_FILE, alone / COLD_FILE)
        runs = {"whole tree": ["torch"], **{f"file {f}": [f] for f in files}, f"folder {FOLDER}": [FOLDER]}
        cold = {
            f"cold: {COLD_FILE} alone": (alone, [COLD_FILE]),
            "cold: file torch/cuda/__init__.py": (work, ["torch/cuda/__init__.py"]),
        }
        times: dict[str, dict[str, list[float]]] = {label: {"ptrlint": [], "ruff": []} for label in [*runs, *cold]}
        for _ in range(args.repeats):
            for label, targets in runs.items():
                times[label]["ptrlint"].append(timed(ptrlint + targets, work))
                times[label]["ruff"].append(timed(ruff_cmd + targets, work))
            for label, (where, targets) in cold.items():
                times[label]["ptrlint"].append(timed(ptrlint + ["--no-cache", *targets], where))
                times[label]["ruff"].append(timed(ruff_cmd + ["--no-cache", *targets], where))
        version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
        result = {
            "date": datetime.date.today().isoformat(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "ruff": version,
            "repeats": args.repeats,
            "files": len(list((work / "torch").rglob("*.py"))),
            "runs": {
                label: {tool: statistics.median(values) for tool, values in by_tool.items()}
                for label, by_tool in times.items()
            },
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(alone, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(result: dict) -> str:
    whole = result["runs"]["whole tree"]["ptrlint"]
    lines = [
        f"Warm runs on a copy of the installed torch ({result['files']:,} files), both caches filled by a "
        f"whole-tree run; {result['cpus']} CPUs, median of {result['repeats']} rounds; {result['ruff']}; "
        f"{result['date']}.",
        "",
        "| run | ptrlint | ruff | ptrlint / ruff | ptrlint / its warm whole tree |",
        "|---|---|---|---|---|",
    ]
    for label, row in result["runs"].items():
        lines.append(
            f"| {label} | {row['ptrlint']:.2f} s | {row['ruff']:.3f} s | {row['ptrlint'] / row['ruff']:.1f}x "
            f"| {row['ptrlint'] / whole:.2f}x |"
        )
    lines += [
        "",
        "Targets (issues 44, 56): one file warm <= 10x ruff; a subfolder's run <= 1.5x the warm whole tree; "
        "a cold single file <= 0.25 s (the `cold:` rows run both tools with `--no-cache`).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
