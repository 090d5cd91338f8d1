"""What ``ptrlint --fix`` does on real trees: every fix, its kind, and the consumer that chose it.

For the released sglang, flashinfer-python and vLLM wheels (fetched with ``pip download
--no-deps`` into the git-ignored ``benchmarks/.cache/``), this lists each finding with its fix
kind (uint64, bit-preserving, store, or no safe fix) and the fix title (which names the deciding
consumer), and, given ``--baseline REV``, the findings added and removed against that revision of
ptrlint (run from a temporary git worktree). Results: ``benchmarks/results/fix_review.{json,md}``.

    python benchmarks/fix_review.py --baseline dbd5f73
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import lint_speed  # noqa: E402  (the wheel fetcher shared with the speed benchmark)

TREES = {**lint_speed.WHEELS, "vllm": ("vllm==0.33.0", "vllm")}


def findings(tree: Path, pythonpath: str | None = None) -> list[dict]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--exit-zero",
                           "--output-format", "json", "."], cwd=tree, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"ptrlint failed on {tree}: {proc.stderr[-500:]}")
    return json.loads(proc.stdout or "[]")


def kind(finding: dict) -> str:
    fix = finding["fix"]
    if fix is None:
        return "no fix"
    title = fix["title"]
    if not fix["safe"]:
        return "no safe fix"
    if title.startswith("Create the table unsigned"):
        return "bit-preserving"
    if title.startswith("Store a uint64"):
        return "store"
    return "uint64" if "dtype" in title else title


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
            subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.baseline], cwd=REPO, check=True,
                           capture_output=True)
        try:
            for name in args.trees:
                package = lint_speed.wheel_tree(name)
                tree = Path(tmp) / name  # a copy outside this repository (its pyproject.toml is not the tree's)
                shutil.copytree(package, tree / package.name)
                now = findings(tree)
                entry: dict = {"findings": [
                    {"where": f"{f['path']}:{f['line']}", "code": f["code"], "kind": kind(f),
                     "title": f["fix"]["title"] if f["fix"] else ""} for f in now]}
                if baseline is not None:
                    before = findings(tree, str(baseline))
                    key = lambda f: (f["path"], f["line"], f["code"])  # noqa: E731
                    old, new = {key(f) for f in before}, {key(f) for f in now}
                    entry["added"] = [f"{p}:{line} {c}" for p, line, c in sorted(new - old)]
                    entry["removed"] = [f"{p}:{line} {c}" for p, line, c in sorted(old - new)]
                    entry["baseline_count"] = len(before)
                report[name] = entry
        finally:
            if baseline is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=REPO, capture_output=True)
    out = HERE / "results"
    (out / "fix_review.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["# Fixes on real trees, by kind and deciding consumer", "",
             f"`python benchmarks/fix_review.py{' --baseline ' + args.baseline if args.baseline else ''}`", ""]
    for name, entry in report.items():
        counts: dict[str, int] = {}
        for f in entry["findings"]:
            counts[f["kind"]] = counts.get(f["kind"], 0) + 1
        lines += [f"## {TREES[name][0]}: {len(entry['findings'])} findings "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})", "",
                  "| where | code | fix | title (the consumer that chose it) |", "|---|---|---|---|"]
        lines += [f"| `{f['where']}` | {f['code']} | {f['kind']} | {f['title'].replace('|', '/')} |" for f in entry["findings"]]
        if "added" in entry:
            lines += ["", f"Against the baseline ({entry['baseline_count']} findings): added "
                      f"{len(entry['added'])}, removed {len(entry['removed'])}.", ""]
            lines += [f"- added `{a}`" for a in entry["added"]] + [f"- removed `{r}`" for r in entry["removed"]]
        lines.append("")
    (out / "fix_review.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
