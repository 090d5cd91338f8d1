"""What ``ptrlint --fix`` does on real trees: every fix, its kind, and the consumer that chose it.

For the released sglang 0.5.23, flashinfer-python 0.7.2.post1 and vLLM 0.34.0 wheels (fetched with
``pip download --no-deps`` into the git-ignored ``benchmarks/.cache/``), this lists each finding
with its fix kind (uint64, bit-preserving, store, uint64 compute, unsafe, or no fix) and the fix
title (which names the deciding consumer), and, given ``--baseline REV``, the counts by kind at
that revision of ptrlint (run from a temporary git worktree) beside today's, and the findings
added, removed and whose fix changed. Results: ``benchmarks/results/fix_review.{json,md}``.

    python benchmarks/fix_review.py --baseline dbd5f73
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import lint_speed  # noqa: E402  (the wheel fetcher shared with the speed benchmark)

TREES = {**lint_speed.WHEELS, "vllm": ("vllm==0.34.0", "vllm")}
KINDS = ("uint64", "bit-preserving", "store", "uint64 compute", "ctypes", "unsafe", "no fix")


def findings(tree: Path, pythonpath: str | None = None) -> list[dict]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--exit-zero", "--output-format", "json", "."],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"ptrlint failed on {tree}: {proc.stderr[-500:]}")
    return json.loads(proc.stdout or "[]")


def kind(finding: dict) -> str:
    """uint64, bit-preserving, store (PTR005), uint64 compute (PTR007), ctypes (PTR006), unsafe (no safe
    fix), no fix."""
    fix = finding["fix"]
    if fix is None:
        return "no fix"
    title = fix["title"]
    if not fix["safe"]:
        return "unsafe"
    if title.startswith("Create the table unsigned"):
        return "bit-preserving"
    if title.startswith("Store a uint64"):
        return "store"
    if title.startswith("Compute in uint64"):
        return "uint64 compute"
    if title.startswith("Use c_"):
        return "ctypes"
    return "uint64" if "dtype" in title else title


def counts(findings: list[dict]) -> dict[str, int]:
    out = {k: 0 for k in KINDS}
    for f in findings:
        out[kind(f)] = out.get(kind(f), 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="git revision of ptrlint to compare findings against")
    ap.add_argument("--trees", nargs="*", default=list(TREES))
    args = ap.parse_args()
    lint_speed.WHEELS.update(TREES)
    report: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        baseline = None
        if args.baseline:
            baseline = Path(tmp) / "baseline"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(baseline), args.baseline],
                cwd=REPO,
                check=True,
                capture_output=True,
            )
        try:
            for name in args.trees:
                package = lint_speed.wheel_tree(name)
                tree = Path(tmp) / name  # a copy outside this repository (its pyproject.toml is not the tree's)
                shutil.copytree(package, tree / package.name)
                now = findings(tree)
                entry: dict = {
                    "findings": [
                        {
                            "where": f"{f['path']}:{f['line']}",
                            "code": f["code"],
                            "kind": kind(f),
                            "title": f["fix"]["title"] if f["fix"] else "",
                        }
                        for f in now
                    ],
                    "counts": counts(now),
                }
                if baseline is not None:
                    before = findings(tree, str(baseline))
                    key = lambda f: (f["path"], f["line"], f["code"])  # noqa: E731
                    old, new = {key(f): kind(f) for f in before}, {key(f): kind(f) for f in now}
                    entry["added"] = [f"{p}:{line} {c}" for p, line, c in sorted(new.keys() - old.keys())]
                    entry["removed"] = [f"{p}:{line} {c}" for p, line, c in sorted(old.keys() - new.keys())]
                    entry["changed"] = [
                        f"{p}:{line} {c}: {old[(p, line, c)]} -> {new[(p, line, c)]}"
                        for p, line, c in sorted(old.keys() & new.keys())
                        if old[(p, line, c)] != new[(p, line, c)]
                    ]
                    entry["baseline_count"] = len(before)
                    entry["baseline_counts"] = counts(before)
                report[name] = entry
        finally:
            if baseline is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=REPO, capture_output=True)
    out = HERE / "results"
    (out / "fix_review.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        "# Fixes on real trees, by kind and deciding consumer",
        "",
        f"`python benchmarks/fix_review.py{' --baseline ' + args.baseline if args.baseline else ''}`",
        "",
    ]
    if args.baseline:
        lines += [
            f"Counts by fix kind, at the baseline {args.baseline} (before) and now (after):",
            "",
            "| tree | findings | " + " | ".join(KINDS) + " |",
            "|---|---|" + "---|" * len(KINDS),
        ]
        for name, entry in report.items():
            for label, found, total in (
                ("before", entry["baseline_counts"], entry["baseline_count"]),
                ("after", entry["counts"], len(entry["findings"])),
            ):
                lines.append(
                    f"| {TREES[name][0]} ({label}) | {total} | "
                    + " | ".join(str(found.get(k, 0)) for k in KINDS)
                    + " |"
                )
        lines.append("")
    for name, entry in report.items():
        found = entry["counts"]
        lines += [
            f"## {TREES[name][0]}: {len(entry['findings'])} findings "
            f"({', '.join(f'{k} {v}' for k, v in found.items() if v)})",
            "",
            "| where | code | fix | title (the consumer that chose it) |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{f['where']}` | {f['code']} | {f['kind']} | {f['title'].replace('|', '/')} |"
            for f in entry["findings"]
        ]
        if "added" in entry:
            lines += [
                "",
                f"Against the baseline ({entry['baseline_count']} findings): added "
                f"{len(entry['added'])}, removed {len(entry['removed'])}, fix changed {len(entry['changed'])}.",
                "",
            ]
            lines += [f"- added `{a}`" for a in entry["added"]] + [f"- removed `{r}`" for r in entry["removed"]]
            lines += [f"- changed `{c}`" for c in entry["changed"]]
        lines.append("")
    (out / "fix_review.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
