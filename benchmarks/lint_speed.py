"""Lint speed of ptrlint against its anchors (ruff, semgrep) on real trees, side by side in one run.

Trees (``--tree``, repeatable; default: all three):
- ``torch``: the installed torch package, found without importing it;
- ``sglang``: the ``sglang/`` package of the sglang 0.5.23 wheel;
- ``flashinfer``: the ``flashinfer/`` package of the flashinfer-python 0.7.2.post1 wheel.
Wheels are fetched reproducibly with ``pip download --no-deps NAME==VERSION`` into the
git-ignored ``benchmarks/.cache/`` and unpacked there (nothing third-party is committed);
``--path DIR`` adds any other folder.

For each tree and each fraction (1/4, 1/2, all files, in sorted order: growth) a copy of the
subset is timed in alternating rounds: ``ruff check --no-cache --isolated`` (default rules),
ptrlint cold (``--no-cache``), ptrlint warm (cache filled), ptrlint cold with the project index
off (``--no-project-index``, when this ptrlint has it), and, on the whole tree only, semgrep
with the pointer rule set (``../shared/data/semgrep-ptr-rule.yaml`` or ``--semgrep-rules``).
The *parse floor* is CPython's ``ast.parse`` alone over the files ptrlint's prefilter passes,
with as many processes as ptrlint uses. Medians of ``--repeats`` rounds; peak RSS of the
largest process of each tool (GNU time), and for ptrlint the peak of all its processes together
(the planner and its workers, sampled from /proc). ptrlint's modules are compiled to bytecode
first, as ``pip install`` does. Writes ``benchmarks/results/lint_speed.{json,md}``.

    python benchmarks/lint_speed.py [--tree torch --tree sglang ...] [--repeats 3]
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
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CACHE = HERE / ".cache"
SHARED_RULES = HERE.parent.parent / "shared" / "data" / "semgrep-ptr-rule.yaml"
WHEELS = {
    "sglang": ("sglang==0.5.23", "sglang"),
    "flashinfer": ("flashinfer-python==0.7.2.post1", "flashinfer"),
}

PARSE_FLOOR = r"""
import ast, sys
from concurrent.futures import ProcessPoolExecutor
from ptrlint.config import Config
from ptrlint.prefilter import prefilter
from ptrlint.sources import decode

def parse(path):
    text, _ = decode(open(path, "rb").read())
    if not prefilter(text, Config()):
        return 0
    try:
        ast.parse(text)
    except Exception:
        pass
    return 1

files = [line.rstrip("\n") for line in open(sys.argv[1])]
with ProcessPoolExecutor(int(sys.argv[2])) as pool:
    print(sum(pool.map(parse, files, chunksize=4)))
"""


def torch_tree() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed (pip install torch==2.13.0)")
    return Path(next(iter(spec.submodule_search_locations)))


def wheel_tree(name: str) -> Path:
    """The package folder of a released wheel, downloaded and unpacked once into benchmarks/.cache/."""
    requirement, package = WHEELS[name]
    target = CACHE / requirement.replace("==", "-")
    if not (target / package).is_dir():
        downloads = CACHE / "wheels"
        downloads.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", requirement, "-d", str(downloads)], check=True
        )
        stem = requirement.split("==")[0].replace("-", "_")
        version = requirement.split("==")[1]
        wheel = next(downloads.glob(f"{stem}-{version}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(f"{package}/") and m.endswith(".py")]
            archive.extractall(target, members)
    return target / package


def timed(cmd: list[str], cwd: Path) -> float:
    """Seconds of one run, which must succeed (every benchmark passes --exit-zero): a run that crashed at
    start-up would otherwise be timed as a fast one."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} in {cwd}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return elapsed


def peak_rss(cmd: list[str], cwd: Path) -> int:
    """Peak RSS in KiB of the largest process of one run (GNU time reports the largest descendant)."""
    gnu_time = "/usr/bin/time"
    if not os.path.exists(gnu_time):
        return -1
    proc = subprocess.run(
        [gnu_time, "-f", "%M", *cmd], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        return int(proc.stderr.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return -1


def tree_rss(cmd: list[str], cwd: Path, interval: float = 0.05) -> int:
    """Peak memory (KiB) of a run's process and all its descendants together (the planner and its
    workers), sampled from /proc every ``interval`` seconds: the sum of their proportional set
    sizes (PSS), so pages the forked workers share with the planner count once, not once per
    process as a sum of RSS would; RSS where PSS is not reported; -1 where /proc is missing."""
    if not os.path.isdir("/proc/self"):
        return -1
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, sum(_memory_kib(pid) for pid in _descendants(proc.pid)))
        time.sleep(interval)
    return peak


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, []))
    return out


def _memory_kib(pid: int) -> int:
    for file, field in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(file, encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith(field):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return 0


def find_tool(name: str, explicit: str | None) -> str | None:
    if explicit:
        return explicit
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def has_flag(cmd: list[str], flag: str) -> bool:
    out = subprocess.run([*cmd, "--help"], capture_output=True, text=True)
    return flag in out.stdout


def bench_tree(label: str, tree: Path, args: argparse.Namespace, tools: dict) -> dict:
    files = sorted(str(p) for p in tree.rglob("*.py"))
    sizes = {f: os.path.getsize(f) for f in files}
    lines = {f: sum(1 for _ in open(f, "rb")) for f in files}
    ptrlint = [sys.executable, "-P", "-m", "ptrlint", "--isolated", "--exit-zero", "--jobs", str(args.jobs)]
    ruff, semgrep, rules = tools["ruff"], tools["semgrep"], tools["rules"]
    no_index = has_flag(ptrlint, "--no-project-index")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ptrlint-bench-") as tmp:
        work = Path(tmp)
        for fraction in [float(f) for f in args.fractions.split(",")]:
            subset = files[: max(1, int(len(files) * fraction))]
            # a copy keeps every tool on exactly the same files; the package keeps its name, so its
            # absolute imports (`from torch.x import y`) resolve for the project index as they do installed
            root = work / f"tree_{fraction}"
            for f in subset:
                dest = root / tree.name / Path(f).relative_to(tree)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, dest)
            time.sleep(2.5)  # older than the manifest's settling window, as a checkout would be
            listing = work / f"files_{fraction}.txt"
            listing.write_text("\n".join(str(root / tree.name / Path(f).relative_to(tree)) for f in subset) + "\n")
            filled = subprocess.run([*ptrlint, "."], cwd=root, capture_output=True, text=True)
            if filled.returncode not in (0, 2):
                sys.exit(f"ptrlint failed on {label}: {filled.stderr[-2000:]}")  # fills the cache, fails loudly
            commands: dict[str, list[str]] = {
                "ruff": [ruff, "check", "--no-cache", "--isolated", "--exit-zero", "-q", "."] if ruff else [],
                "ptrlint_cold": [*ptrlint, "--no-cache", "."],
                "ptrlint_warm": [*ptrlint, "."],
                "ptrlint_cold_no_index": [*ptrlint, "--no-cache", "--no-project-index", "."] if no_index else [],
                # an earlier revision of ptrlint side by side (--baseline): same files, same rounds
                "baseline_cold": [*tools["baseline"], "--no-cache", "."] if tools.get("baseline") else [],
                "baseline_warm": [*tools["baseline"], "."] if tools.get("baseline") else [],
                "parse_floor": [sys.executable, "-P", "-c", PARSE_FLOOR, str(listing), str(args.jobs)],
            }
            if semgrep and rules and fraction == 1.0:
                commands["semgrep"] = [
                    semgrep,
                    "--config",
                    str(rules),
                    "--metrics=off",
                    "--disable-version-check",
                    "--quiet",
                    "--json",
                    "-j",
                    str(args.jobs),
                    ".",
                ]
            commands = {k: v for k, v in commands.items() if v}
            # the baseline keeps its own copy (and so its own cache): runs of two revisions whose cache
            # formats differ would otherwise throw away each other's cache, and neither would be warm
            cwd = {k: root for k in commands}
            if tools.get("baseline"):
                base_root = work / f"tree_{fraction}_baseline"
                shutil.copytree(
                    root, base_root, ignore=shutil.ignore_patterns(".ptrlint_cache"), copy_function=shutil.copy2
                )
                subprocess.run(
                    [*tools["baseline"], "."], cwd=base_root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
                cwd.update({k: base_root for k in commands if k.startswith("baseline")})
            # a floor that fails would time an ImportError (it did, from issue 22's move of `decode`)
            subprocess.run(commands["parse_floor"], cwd=root, check=True, stdout=subprocess.DEVNULL)
            times: dict[str, list[float]] = {k: [] for k in commands}
            for round_ in range(args.repeats):
                for name, cmd in commands.items():
                    if name == "semgrep" and round_ >= args.semgrep_repeats:
                        continue
                    times[name].append(timed(cmd, cwd[name]))
            row = {
                "fraction": fraction,
                "files": len(subset),
                "bytes": sum(sizes[f] for f in subset),
                "lines": sum(lines[f] for f in subset),
                "findings": _findings(filled.stdout),
                "median_s": {k: statistics.median(v) for k, v in times.items() if v},
                "peak_rss_kib": {
                    k: peak_rss(cmd, root)
                    for k, cmd in commands.items()
                    if k in ("ruff", "ptrlint_cold", "ptrlint_warm", "semgrep")
                },
                "all_processes_rss_kib": {k: tree_rss(commands[k], root) for k in ("ptrlint_cold", "ptrlint_warm")},
            }
            if "ruff" in row["median_s"]:
                r = row["median_s"]["ruff"]
                row["ratio_to_ruff"] = {k: v / r for k, v in row["median_s"].items()}
            if "semgrep" in row["median_s"]:
                row["semgrep_over_ptrlint_cold"] = row["median_s"]["semgrep"] / row["median_s"]["ptrlint_cold"]
            rows.append(row)
            print(label, json.dumps(row), flush=True)
    return {"tree": label, "path": str(tree), "rows": rows}


def _findings(stdout: str) -> int:
    for line in stdout.splitlines():
        if line.startswith("Found "):
            return int(line.split()[1])
    return 0


def compile_bytecode(checkouts: list[Path]) -> None:
    """Compile ptrlint's modules (this one's and the baseline's) as ``pip install`` does, so that no
    round pays for compiling them: with PYTHONDONTWRITEBYTECODE set, or an editable install that
    has not run yet, every run would compile every module it imports again (0.1-0.2 s)."""
    spec = importlib.util.find_spec("ptrlint")
    folders = [Path(spec.origin).parent] if spec is not None and spec.origin else []
    folders += [c / "ptrlint" for c in checkouts]
    for folder in folders:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder)], check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", choices=("torch", "sglang", "flashinfer"))
    parser.add_argument("--path", type=Path, action="append", default=[], help="an extra folder to benchmark")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--semgrep-repeats", type=int, default=1, help="semgrep rounds (it is slow)")
    parser.add_argument("--fractions", default="0.25,0.5,1")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--ruff", default=None)
    parser.add_argument("--semgrep", default=None, help="semgrep executable (pip install semgrep)")
    parser.add_argument("--semgrep-rules", type=Path, default=SHARED_RULES if SHARED_RULES.is_file() else None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--baseline",
        default=None,
        help="also time this git revision of ptrlint (from a worktree), side by side in the same rounds",
    )
    parser.add_argument("--name", default="lint_speed", help="results file stem (benchmarks/results/NAME.{json,md})")
    args = parser.parse_args()

    tools = {
        "ruff": find_tool("ruff", args.ruff),
        "semgrep": find_tool("semgrep", args.semgrep),
        "rules": args.semgrep_rules,
    }
    worktree = None
    if args.baseline:
        worktree = Path(tempfile.mkdtemp(prefix="ptrlint-baseline-"))
        subprocess.run(
            ["git", "-C", str(HERE.parent), "worktree", "add", "--detach", str(worktree), args.baseline],
            check=True,
            capture_output=True,
        )
        code = f"import sys; sys.path.insert(0, {str(worktree)!r}); from ptrlint.cli import main; sys.exit(main())"
        tools["baseline"] = [sys.executable, "-P", "-c", code, "--isolated", "--exit-zero", "--jobs", str(args.jobs)]
    compile_bytecode([worktree] if worktree is not None else [])
    trees: list[tuple[str, Path]] = []
    for name in args.tree or ["torch", "sglang", "flashinfer"]:
        trees.append((name, torch_tree() if name == "torch" else wheel_tree(name)))
    trees += [(p.name, p.resolve()) for p in args.path]
    try:
        results = [bench_tree(label, path, args, tools) for label, path in trees]
    finally:
        if worktree is not None:
            subprocess.run(
                ["git", "-C", str(HERE.parent), "worktree", "remove", "--force", str(worktree)], capture_output=True
            )
    versions = {}
    for name in ("ruff", "semgrep"):
        if tools[name]:
            versions[name] = subprocess.run([tools[name], "--version"], capture_output=True, text=True).stdout.strip()
    result = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "jobs": args.jobs,
        "repeats": args.repeats,
        "semgrep_repeats": args.semgrep_repeats,
        "versions": versions,
        "date": time.strftime("%Y-%m-%d"),
        "baseline": args.baseline,
        "trees": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(markdown(result))
    print(markdown(result))
    return 0


def markdown(result: dict) -> str:
    v = result["versions"]
    out = [
        f"{result['cpus']} CPUs, --jobs {result['jobs']}, median of {result['repeats']} alternating rounds "
        f"(semgrep: {result['semgrep_repeats']}); {v.get('ruff', 'ruff not found')}; "
        f"semgrep {v.get('semgrep', 'not found')}; {result['date']}.",
        "",
        "| tree | files | lines | ruff | ptrlint cold | ptrlint warm | cold, no index | parse floor | semgrep "
        "| cold / ruff | warm / ruff | semgrep / cold | peak RSS cold / warm / ruff / semgrep "
        "| all ptrlint processes cold / warm |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    nan = float("nan")
    for tree in result["trees"]:
        for row in tree["rows"]:
            m, ratio, rss = row["median_s"], row.get("ratio_to_ruff", {}), row["peak_rss_kib"]

            def s(key: str, m: dict = m) -> str:
                return f"{m[key]:.2f} s" if key in m else "—"

            def mb(key: str, rss: dict = rss) -> str:
                return str(rss[key] // 1024) if rss.get(key, -1) >= 0 else "—"

            def total(key: str, row: dict = row) -> str:
                value = row.get("all_processes_rss_kib", {}).get(key, -1)
                return str(value // 1024) if value >= 0 else "—"

            semgrep_ratio = row.get("semgrep_over_ptrlint_cold")
            out.append(
                f"| {tree['tree']} ({row['fraction']:g}) | {row['files']:,} | {row['lines']:,} | {s('ruff')} | "
                f"{s('ptrlint_cold')} | {s('ptrlint_warm')} | {s('ptrlint_cold_no_index')} | {s('parse_floor')} | "
                f"{s('semgrep')} | {ratio.get('ptrlint_cold', nan):.2f}x | {ratio.get('ptrlint_warm', nan):.2f}x | "
                f"{f'{semgrep_ratio:.1f}x' if semgrep_ratio else '—'} | "
                f"{mb('ptrlint_cold')} / {mb('ptrlint_warm')} / {mb('ruff')} / {mb('semgrep')} MB | "
                f"{total('ptrlint_cold')} / {total('ptrlint_warm')} MB |"
            )
    if result.get("baseline"):
        out += [
            "",
            f"Side by side with `{result['baseline']}` (the baseline), same files and rounds:",
            "",
            "| tree | cold: baseline / this | warm: baseline / this | cold / ruff: baseline → this "
            "| warm / ruff: baseline → this |",
            "|---|---|---|---|---|",
        ]
        for tree in result["trees"]:
            for row in tree["rows"]:
                m, ratio = row["median_s"], row.get("ratio_to_ruff", {})
                if "baseline_cold" not in m:
                    continue
                out.append(
                    f"| {tree['tree']} ({row['fraction']:g}) | {m['baseline_cold']:.2f} / {m['ptrlint_cold']:.2f} s | "
                    f"{m['baseline_warm']:.2f} / {m['ptrlint_warm']:.2f} s | "
                    f"{ratio.get('baseline_cold', nan):.2f}x → {ratio.get('ptrlint_cold', nan):.2f}x | "
                    f"{ratio.get('baseline_warm', nan):.2f}x → {ratio.get('ptrlint_warm', nan):.2f}x |"
                )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
