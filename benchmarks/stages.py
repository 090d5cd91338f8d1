"""Where a cold run's seconds go: each stage of the pipeline timed by a wrapper, in one process.

cProfile inflates every Python call and leaves C calls (CPython's parser) alone, so its shares
overstate the analysis and understate the parse. Here each stage is wrapped with a clock instead:
the parse (``engine.parse``), blanking kernel bodies, the one traversal with its finalize, the
flow index, the rules, the summaries the index keeps for importers, the planner's own steps
(classifying the files, closing the imports, the index rounds; the rounds' re-analyses are counted
in the stages too), and CPython's cyclic garbage collector (timed by ``gc.callbacks``, inside the
other stages). One process (``--jobs 1``), no cache, default settings (project index on).

    python benchmarks/stages.py                  # torch, sglang, flashinfer
    python benchmarks/stages.py --tree torch     # one of them

Results: ``benchmarks/results/stages.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lint_speed  # noqa: E402 - the trees are fetched the same way

RESULTS = HERE / "results"

# Runs in a child process inside the tree: wraps the stages, runs the CLI, prints JSON seconds.
_CHILD = r"""
import json, sys, time
import ptrlint.analysis.semantic.device as device
import ptrlint.analysis.values.facts as values
import ptrlint.engine as engine
import ptrlint.project.link as link
from ptrlint.planner import index

seconds = {}

def wrap(owner, name, label):
    inner = getattr(owner, name)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            seconds[label] = seconds.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, timed)

wrap(engine, "parse", "parse")
wrap(device, "blank_device_bodies", "blank kernel bodies")
wrap(values.FactCollector, "run", "traversal and finalize")
wrap(values.ModuleFacts, "__init__", "flow index")
wrap(engine, "analyse_facts", "rules")
wrap(link, "summarise", "summaries")
wrap(index.ProjectRun, "_classify_given", "planner: read and classify")
wrap(index.ProjectRun, "_close_dependencies", "planner: close imports")
wrap(index.ProjectRun, "_settle", "planner: index rounds (with re-analyses)")

import gc
_gc_start = []
def collector(phase, info):
    if phase == "start":
        _gc_start.append(time.perf_counter())
    elif _gc_start:
        seconds["cyclic garbage collector"] = seconds.get("cyclic garbage collector", 0.0) + time.perf_counter() - _gc_start.pop()
gc.callbacks.append(collector)
from ptrlint.cli import main
start = time.perf_counter()
try:
    main(["--no-cache", "--jobs", "1", "--exit-zero", "."])
except SystemExit:
    pass
seconds["total"] = time.perf_counter() - start
print(json.dumps(seconds))
"""


def stages(tree: Path) -> dict[str, float]:
    """The stage seconds of one cold run over a copy of ``tree``'s Python files (as lint_speed copies
    them: the package keeps its name, so its absolute imports resolve for the index)."""
    with tempfile.TemporaryDirectory(prefix="ptrlint-stages-") as tmp:
        root = Path(tmp)
        for f in tree.rglob("*.py"):
            dest = root / tree.name / f.relative_to(tree)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
        # -P: the copy is the working folder, and its modules (torch/types.py) must not shadow the stdlib
        done = subprocess.run(
            [sys.executable, "-P", "-c", _CHILD], cwd=root, capture_output=True, text=True, check=True
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def markdown(result: dict) -> str:
    trees = result["trees"]
    labels = [k for k in trees[0]["seconds"] if k != "total"]
    head = "| stage | " + " | ".join(f"{t['tree']} ({t['seconds']['total']:.1f} s)" for t in trees) + " |"
    lines = [
        f"One process (`--jobs 1`), `--no-cache`, project index on; {result['date']}. Stages are timed by "
        "wrappers; the index rounds include the re-analyses they start, which the analysis stages count "
        "as well, so the column does not add up to 100 %.",
        "",
        head,
        "|---|" + "---|" * len(trees),
    ]
    for label in sorted(labels, key=lambda k: -trees[-1]["seconds"].get(k, 0.0)):
        cells = []
        for t in trees:
            value = t["seconds"].get(label, 0.0)
            cells.append(f"{value:.2f} s ({100 * value / t['seconds']['total']:.1f} %)")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", choices=("torch", "sglang", "flashinfer"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    trees = []
    for name in args.tree or ["torch", "sglang", "flashinfer"]:
        path = lint_speed.torch_tree() if name == "torch" else lint_speed.wheel_tree(name)
        trees.append({"tree": name, "seconds": stages(path)})
        print(name, json.dumps(trees[-1]["seconds"]), flush=True)
    result = {"python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d"), "trees": trees}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "stages.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "stages.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
