"""Same input, same output on real trees: byte-identical JSON whatever the workers and the order.

For the released sglang, flashinfer-python and vLLM wheels (fetched with ``pip download
--no-deps`` into the git-ignored ``benchmarks/.cache/``), this lints each tree:

- cold (``--no-cache``) with ``-j1``, ``-j2`` and ``-j4``, each under several
  ``PTRLINT_TEST_PERMUTE`` seeds (every order the planner chooses shuffled, the workers staggered)
  and string hash seeds;
- with the cache: filling it, warm, and partly warm (a tenth of the files touched);

and compares every output byte for byte with the first. Then it lints each file that has a
finding alone (as pre-commit does) and checks that none gets a bolder fix than in the whole tree
(plain uint64 alone where the tree gets the bit-preserving fix or none). Results:
``benchmarks/results/determinism.{json,md}``.

    python benchmarks/determinism.py [--trees sglang flashinfer vllm] [--seeds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import lint_speed  # noqa: E402  (the wheel fetcher shared with the speed benchmark)

TREES = {**lint_speed.WHEELS, "vllm": ("vllm==0.34.0", "vllm")}
BOLDNESS = {"uint64": 2, "bit-preserving": 1, "unsafe": 0, "none": 0}


def lint(tree: Path, *args: str, seed: int | None = None, hash_seed: str = "0") -> str:
    env = {k: v for k, v in os.environ.items() if k != "PTRLINT_TEST_PERMUTE"}
    env["PYTHONHASHSEED"] = hash_seed
    env["PYTHONPATH"] = str(REPO)
    if seed is not None:
        env["PTRLINT_TEST_PERMUTE"] = str(seed)
    proc = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", "--exit-zero", "--output-format", "json", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"ptrlint failed on {tree}: {proc.stderr[-800:]}")
    return proc.stdout


def kind(finding: dict) -> str:
    fix = finding["fix"]
    if fix is None or not fix["safe"]:
        return "none" if fix is None else "unsafe"
    return "bit-preserving" if fix["title"].startswith("Create the table unsigned") else "uint64"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_tree(name: str, seeds: int) -> dict:
    package = lint_speed.wheel_tree(name)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / name
        shutil.copytree(package, tree / package.name)
        runs: list[dict] = []
        start = time.perf_counter()
        reference = lint(tree, "--no-cache", "-j", "1", ".")
        runs.append({"run": "cold -j1", "digest": digest(reference), "same": True})
        for jobs in ("1", "2", "4"):
            for seed in range(1, seeds + 1):
                hash_seed = "random" if seed % 2 else str(seed)
                out = lint(tree, "--no-cache", "-j", jobs, ".", seed=seed, hash_seed=hash_seed)
                runs.append(
                    {
                        "run": f"cold -j{jobs}, permuted (seed {seed}), PYTHONHASHSEED={hash_seed}",
                        "digest": digest(out),
                        "same": out == reference,
                    }
                )
        for label, jobs, touch in (("cache filled", "2", False), ("warm", "1", False), ("partly warm", "2", True)):
            if touch:
                stamp = time.time() - 30
                for path in sorted(tree.rglob("*.py"))[::10]:
                    os.utime(path, (stamp, stamp))
            out = lint(tree, "-j", jobs, ".", seed=seeds + 1)
            runs.append({"run": f"{label} -j{jobs}", "digest": digest(out), "same": out == reference})
        shutil.rmtree(tree / ".ptrlint_cache", ignore_errors=True)
        findings = json.loads(reference)
        whole = {(f["path"], f["line"], f["code"]): kind(f) for f in findings}
        bolder: list[str] = []
        missing_alone = 0
        for path in sorted({f["path"] for f in findings}):
            alone = {(f["path"], f["line"], f["code"]): kind(f) for f in json.loads(lint(tree, "--no-cache", path))}
            for key, found in alone.items():
                if key not in whole:
                    bolder.append(f"{key[0]}:{key[1]} {key[2]}: found alone, not in the whole tree")
                elif BOLDNESS[found] > BOLDNESS[whole[key]]:
                    bolder.append(f"{key[0]}:{key[1]} {key[2]}: {found} alone, {whole[key]} in the tree")
            missing_alone += len([k for k in whole if k[0] == path and k not in alone])
        return {
            "requirement": TREES[name][0],
            "findings": len(findings),
            "runs": runs,
            "identical": all(r["same"] for r in runs),
            "files_alone": len({f["path"] for f in findings}),
            "bolder_alone": bolder,
            "found_only_in_the_tree": missing_alone,
            "seconds": round(time.perf_counter() - start, 1),
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", nargs="*", default=list(TREES))
    ap.add_argument("--seeds", type=int, default=3, help="permutation seeds per job count")
    args = ap.parse_args()
    lint_speed.WHEELS.update(TREES)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    report = {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "trees": {name: check_tree(name, args.seeds) for name in args.trees},
    }
    out = HERE / "results"
    (out / "determinism.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        "# Determinism on real trees",
        "",
        f"`python benchmarks/determinism.py` at {commit} ({report['date']}, {report['cpus']} CPUs). Every run's JSON "
        "is compared byte for byte with the first (cold, `-j1`); each file with a finding is then linted alone.",
        "",
        "| tree | findings | runs | identical | files linted alone | bolder fix alone | found only in the tree | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in report["trees"].values():
        lines.append(
            f"| {entry['requirement']} | {entry['findings']} | {len(entry['runs'])} | "
            f"{'yes' if entry['identical'] else '**no**'} | {entry['files_alone']} | {len(entry['bolder_alone'])} | "
            f"{entry['found_only_in_the_tree']} | {entry['seconds']} |"
        )
    for entry in report["trees"].values():
        lines += ["", f"## {entry['requirement']}", ""] + [
            f"- {r['run']}: `{r['digest']}`{'' if r['same'] else ' **differs**'}" for r in entry["runs"]
        ]
        lines += [f"- bolder alone: {b}" for b in entry["bolder_alone"]]
    (out / "determinism.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(e["identical"] and not e["bolder_alone"] for e in report["trees"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
