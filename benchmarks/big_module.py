"""How lint and fix time grow with one module's size: a generated module of 1, 2, 5 and 10 MB,
ptrlint and ruff side by side in one run, time and peak memory, with a plot.

Generated code (bindings, kernel tables, model configs) is where such files live. The module is
built from blocks cycling through five shapes, each a few kilobytes: an ordinary class with
methods and properties, a config dict literal, a binding-style class with a long ``__slots__``
and wrapper methods, a function with loops and comprehensions, and a pointer table of one of
four buggy shapes (``torch.tensor`` of ``data_ptr()`` values built as int64, ``np.array`` of
addresses as int64, a ``torch.zeros`` table filled by item assignment, a cast to int64). So the
5 MB module has thousands of ordinary definitions and some hundred pointer tables, and every
size has the same mix. Blocks are numbered, so no two share a name.

Each size is timed in alternating rounds: ``ruff check --no-cache --isolated`` (default rules),
``ruff check --fix`` on a fresh copy, ``ptrlint --no-cache`` on the module alone and on a package
whose ``__init__.py`` imports two of its names, and ``ptrlint --no-cache --fix`` on a fresh copy.
Peak memory is the largest process's RSS (GNU time). Medians of ``--repeats`` rounds. Writes
``benchmarks/results/big_module.{json,md,png}`` (the plot needs matplotlib).

    python benchmarks/big_module.py [--sizes 1,2,5,10] [--repeats 1]
"""

from __future__ import annotations

import argparse
import collections
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
from lint_speed import RESULTS, compile_bytecode, find_tool, peak_rss, timed  # noqa: E402

HEADER = '''"""Generated bindings and tables (benchmark input)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

'''


def _class(i: int) -> str:
    return f'''
@dataclass
class Config{i}:
    """Settings of layer {i}."""

    hidden_size: int = {1024 + i}
    num_heads: int = {8 + i % 8}
    head_dim: int = 128
    dropout: float = 0.{i % 10}
    names: list[str] = field(default_factory=list)

    def scaled(self, factor: float) -> "Config{i}":
        return Config{i}(int(self.hidden_size * factor), self.num_heads, self.head_dim, self.dropout, list(self.names))

    @property
    def total(self) -> int:
        return self.num_heads * self.head_dim

    def describe(self) -> str:
        parts = [f"{{k}}={{v}}" for k, v in sorted(vars(self).items()) if not k.startswith("_")]
        return "Config{i}(" + ", ".join(parts) + ")"

    def validate(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden size {{self.hidden_size}} not divisible by {{self.num_heads}}")
        for name in self.names:
            if not name.isidentifier():
                raise ValueError(name)
'''


def _dict(i: int) -> str:
    rows = ",\n".join(
        f'    "kernel_{i}_{j}": {{"block": {16 * (j + 1)}, "warps": {1 + j % 8}, "stages": {2 + j % 3}, '
        f'"dtype": "float16", "enabled": {j % 2 == 0}}}'
        for j in range(24)
    )
    return f"""
KERNELS_{i}: dict[str, dict[str, Any]] = {{
{rows},
}}


def lookup_{i}(name: str, default: Any = None) -> Any:
    entry = KERNELS_{i}.get(name)
    if entry is None:
        return default
    return {{**entry, "name": name}}
"""


def _binding(i: int) -> str:
    fields = [f"f{j}" for j in range(12)]
    slots = ", ".join(f'"_{f}"' for f in fields)
    methods = "\n".join(
        f"""
    def get_{f}(self) -> int:
        return self._{f}

    def set_{f}(self, value: int) -> None:
        self._{f} = int(value)
"""
        for f in fields
    )
    return f"""
class Binding{i}:
    __slots__ = ({slots},)

    def __init__(self) -> None:
{chr(10).join(f"        self._{f} = 0" for f in fields)}
{methods}
"""


def _function(i: int) -> str:
    return f"""
def transform_{i}(values: list[int], scale: int = {i % 7 + 1}) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {{}}
    for index, value in enumerate(values):
        bucket = (value * scale) % {i % 13 + 3}
        out.setdefault(bucket, []).append(index)
    totals = {{k: sum(v) for k, v in out.items()}}
    best = max(totals, key=totals.__getitem__) if totals else None
    while best is not None and totals[best] > {1000 + i}:
        totals[best] //= 2
        best = max(totals, key=totals.__getitem__)
    return {{k: sorted(v) for k, v in out.items() if k in totals}}
"""


def _table(i: int) -> str:
    shape = i % 4
    if shape == 0:
        return f"""
def pointer_table_{i}(tensors: list[torch.Tensor], device: str) -> torch.Tensor:
    return torch.tensor([t.data_ptr() for t in tensors], dtype=torch.int64, device=device)
"""
    if shape == 1:
        return f"""
def address_array_{i}(buffers: list[torch.Tensor]) -> np.ndarray:
    return np.array([b.data_ptr() for b in buffers], dtype=np.int64)
"""
    if shape == 2:
        return f"""
def filled_table_{i}(layers: list[torch.Tensor]) -> torch.Tensor:
    table = torch.zeros(len(layers), dtype=torch.int64)
    for n, layer in enumerate(layers):
        table[n] = layer.data_ptr()
    return table
"""
    return f"""
def cast_table_{i}(ptrs: list[int]) -> torch.Tensor:
    addresses = torch.tensor(ptrs, dtype=torch.uint64)
    return addresses.to(torch.int64)
"""


SHAPES = (
    _class,
    _dict,
    _binding,
    _function,
    _class,
    _dict,
    _binding,
    _function,
    _class,
    _dict,
    _binding,
    _function,
    _table,
)


def generate(size_bytes: int) -> str:
    """A module of at least ``size_bytes`` bytes."""
    parts = [HEADER]
    length = len(HEADER)
    i = 0
    while length < size_bytes:
        block = SHAPES[i % len(SHAPES)](i)
        parts.append(block)
        length += len(block)
        i += 1
    return "".join(parts)


def tables(text: str) -> int:
    return sum(text.count(f"def {name}_") for name in ("pointer_table", "address_array", "filled_table", "cast_table"))


def bench_size(mb: int, args: argparse.Namespace, tools: dict[str, str]) -> dict:
    text = generate(mb * 1_000_000)
    work = Path(tempfile.mkdtemp(prefix=f"ptrlint-big-{mb}-"))
    try:
        source = work / "generated.py"
        source.write_text(text)
        (work / "pyproject.toml").write_text("[project]\nname = 'generated'\n")
        scratch = work / "scratch"
        scratch.mkdir()
        target = scratch / "generated.py"

        package = work / "pkg"  # the module imported by its package, as generated bindings are (issue 56)
        package.mkdir()
        shutil.copyfile(source, package / "generated.py")
        (package / "__init__.py").write_text("from .generated import Config0, pointer_table_0\n")

        def fresh() -> None:
            shutil.copyfile(source, target)

        ruff = [tools["ruff"], "check", "--no-cache", "--isolated", "--exit-zero", "--quiet"]
        ptrlint = [sys.executable, "-m", "ptrlint", "--no-cache", "--exit-zero"]
        commands = {
            "ruff lint": (ruff + [str(source)], None),
            "ruff fix": (ruff + ["--fix", str(target)], fresh),
            "ptrlint lint": (ptrlint + [str(source)], None),
            "ptrlint lint imported": (ptrlint + [str(package)], None),
            "ptrlint fix": (ptrlint + ["--fix", str(target)], fresh),
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, (cmd, prepare) in commands.items():
                if prepare:
                    prepare()
                times[name].append(timed(cmd, work))
        memory = {}
        for name, (cmd, prepare) in commands.items():
            if prepare:
                prepare()
            memory[name] = peak_rss(cmd, work)
        fresh()
        findings = subprocess.run(
            ptrlint + ["--output-format", "json", str(source)], cwd=work, capture_output=True, text=True
        )
        fixed = subprocess.run(ptrlint + ["--fix", str(target)], cwd=work, capture_output=True, text=True)
        left = subprocess.run(
            ptrlint + ["--output-format", "json", str(target)], cwd=work, capture_output=True, text=True
        )
        left_findings = json.loads(left.stdout or "[]")
        fresh()  # and with the unsafe fixes too: what no fix reaches
        subprocess.run(ptrlint + ["--fix", "--unsafe-fixes", str(target)], cwd=work, capture_output=True, text=True)
        left_unsafe = subprocess.run(
            ptrlint + ["--output-format", "json", str(target)], cwd=work, capture_output=True, text=True
        )
        return {
            "mb": mb,
            "bytes": len(text.encode()),
            "lines": text.count("\n"),
            "tables": tables(text),
            "findings": len(json.loads(findings.stdout or "[]")),
            "left_after_fix": len(left_findings),
            "left_after_fix_by_code": dict(sorted(collections.Counter(f["code"] for f in left_findings).items())),
            "left_after_unsafe_fix": len(json.loads(left_unsafe.stdout or "[]")),
            "fix_rc": fixed.returncode,
            "seconds": {name: statistics.median(values) for name, values in times.items()},
            "peak_rss_mb": {name: (kib / 1024 if kib >= 0 else None) for name, kib in memory.items()},
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def markdown(result: dict) -> str:
    lines = [
        f"One generated module per size, {result['cpus']} CPUs, median of {result['repeats']} round(s); "
        f"{result['ruff']}; {result['date']}.",
        "",
        "| size | lines | pointer tables | findings | ruff lint | ptrlint lint | lint / ruff | lint, imported "
        "| imported / ruff | ptrlint fix | fix / lint | ruff fix | peak RSS lint | peak RSS imported | peak RSS fix "
        "| ruff peak RSS | left after fix | left after unsafe fixes too |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["sizes"]:
        s, m = row["seconds"], row["peak_rss_mb"]
        lines.append(
            f"| {row['mb']} MB | {row['lines']:,} | {row['tables']} | {row['findings']} | {s['ruff lint']:.2f} s "
            f"| {s['ptrlint lint']:.2f} s | {s['ptrlint lint'] / s['ruff lint']:.1f}x "
            f"| {s['ptrlint lint imported']:.2f} s | {s['ptrlint lint imported'] / s['ruff lint']:.1f}x "
            f"| {s['ptrlint fix']:.2f} s "
            f"| {s['ptrlint fix'] / s['ptrlint lint']:.2f}x | {s['ruff fix']:.2f} s | {m['ptrlint lint']:.0f} MB "
            f"| {m['ptrlint lint imported']:.0f} MB "
            f"| {m['ptrlint fix']:.0f} MB | {m['ruff lint']:.0f} MB | {row['left_after_fix']} {_codes(row)} "
            f"| {row['left_after_unsafe_fix']} |"
        )
    lines += [
        "",
        "Targets (issues 44, 56): on the 5 MB module, lint <= 5x ruff and <= 400 MB; fix <= 3x ptrlint's lint "
        'and <= 600 MB. "Imported": the module in a package whose `__init__.py` imports two of its names '
        "(the package linted): other modules read it, so its summary is kept, and it is still cut to its "
        "relevant statements unless another module asks for a name the cut left out (ptrlint/relevance.py).",
        "",
        "Left after fix: findings a second lint reports after `--fix` (safe fixes only), by code; the generated "
        "`cast_table_*` functions return `addresses.to(torch.int64)` to callers outside the project, whose PTR004 "
        "fix (convert to uint64) changes what those callers get, so it is unsafe by design and `--fix` leaves it. "
        "With `--unsafe-fixes` every table is fixed (the last column).",
        "",
        "![time and memory by module size](big_module.png)",
        "",
    ]
    return "\n".join(lines)


def _codes(row: dict) -> str:
    by_code = row.get("left_after_fix_by_code") or {}
    return "(" + ", ".join(f"{code} {n}" for code, n in by_code.items()) + ")" if by_code else ""


def plot(result: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    sizes = [row["mb"] for row in result["sizes"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in ("ruff lint", "ruff fix", "ptrlint lint", "ptrlint fix"):
        left.plot(sizes, [row["seconds"][name] for row in result["sizes"]], marker="o", label=name)
        right.plot(sizes, [row["peak_rss_mb"][name] for row in result["sizes"]], marker="o", label=name)
    left.set(xlabel="module size (MB)", ylabel="seconds", title="time")
    right.set(xlabel="module size (MB)", ylabel="peak RSS (MB)", title="memory")
    for axis in (left, right):
        axis.grid(alpha=0.3)
        axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,5,10", help="module sizes in MB, comma separated")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--ruff", default=None, help="the ruff executable (default: on PATH or beside Python)")
    parser.add_argument("--name", default="big_module", help="results file name under benchmarks/results")
    parser.add_argument("--write-module", metavar="PATH", help="only write the module of the first size to PATH")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.write_module:
        Path(args.write_module).write_text(generate(sizes[0] * 1_000_000))
        return 0
    ruff = find_tool("ruff", args.ruff)
    if ruff is None:
        print("ruff not found: pip install ruff", file=sys.stderr)
        return 2
    compile_bytecode([])
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
    result = {
        "date": __import__("datetime").date.today().isoformat(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "ruff": version,
        "repeats": args.repeats,
        "sizes": [],
    }
    for mb in sizes:
        row = bench_size(mb, args, {"ruff": ruff})
        print(json.dumps(row), flush=True)
        result["sizes"].append(row)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(result))
    plot(result, RESULTS / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
