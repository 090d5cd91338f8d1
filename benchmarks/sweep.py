"""Reliability sweep: lint and fix every .py file of every installed package, check the invariants.

1. `ptrlint --format json --no-cache` over every package folder in site-packages (all rules).
2. A copy of those files gets `--fix --unsafe-fixes`, then a second `--fix --unsafe-fixes`.
Invariants (any violation is reported and makes the exit status 1):
- no internal error (a file that does not parse is reported with exit 2 and skipped: counted);
- every fixed file still parses (libcst and CPython's compile());
- every changed file differs only in dtype / ctypes tokens and the import names they need;
- the second --fix changes nothing; every file the first --fix did not change is byte-identical.
Writes benchmarks/results/sweep.json and sweep.md.

    python benchmarks/sweep.py [--root DIR ...] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path

from ptrlint.testing import only_dtype_edits

RESULTS = Path(__file__).resolve().parent / "results"


def site_package_dirs() -> list[Path]:
    seen: list[Path] = []
    for key in ("purelib", "platlib"):
        path = Path(sysconfig.get_paths()[key])
        if path.is_dir() and path not in seen:
            seen.append(path)
    return seen


def python_files(roots: list[Path], limit: int | None) -> list[tuple[Path, Path]]:
    files: list[tuple[Path, Path]] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.is_file() and not path.is_symlink():
                files.append((root, path))
    return files[:limit] if limit else files


def parses(source: bytes) -> str | None:
    import libcst

    try:
        libcst.parse_module(source)
        compile(source, "<fixed>", "exec", dont_inherit=True)
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return None


def run_ptrlint(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptrlint", "--isolated", *args], cwd=cwd, capture_output=True, text=True
    )


def sweep(roots: list[Path], limit: int | None = None, jobs: int | None = None) -> dict:
    start = time.time()
    files = python_files(roots, limit)
    jobs_args = ["--jobs", str(jobs)] if jobs else []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ptrlint-sweep-") as tmp:
        work = Path(tmp) / "tree"
        originals: dict[str, bytes] = {}
        for root, path in files:
            rel = f"root{roots.index(root)}/{path.relative_to(root)}"
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            originals[rel] = dest.read_bytes()
        lines = sum(data.count(b"\n") for data in originals.values())

        t0 = time.time()
        lint = run_ptrlint(["--no-cache", "--format", "json", *jobs_args, "."], work)
        lint_seconds = time.time() - t0
        try:
            findings = json.loads(lint.stdout)
        except json.JSONDecodeError:
            findings = []
            problems.append(f"lint did not print JSON (exit {lint.returncode}): {lint.stderr[-500:]}")
        errors = [line for line in lint.stderr.splitlines() if " E999 " in line]
        internal = [e for e in errors if "internal error" in e]
        problems.extend(f"internal error: {e}" for e in internal)

        t0 = time.time()
        fix = run_ptrlint(["--no-cache", "--fix", "--unsafe-fixes", "--format", "json", *jobs_args, "."], work)
        fix_seconds = time.time() - t0
        first = {rel: (work / rel).read_bytes() for rel in originals}
        run_ptrlint(["--no-cache", "--fix", "--unsafe-fixes", "--format", "json", *jobs_args, "."], work)
        second = {rel: (work / rel).read_bytes() for rel in originals}

        changed = [rel for rel in originals if first[rel] != originals[rel]]
        for rel in changed:
            reason = parses(first[rel])
            if reason:
                problems.append(f"{rel}: fixed file does not parse: {reason}")
            extra = only_dtype_edits(originals[rel], first[rel])
            if extra:
                problems.append(f"{rel}: fix changed more than dtype tokens: {extra}")
        for rel in originals:
            if first[rel] != second[rel]:
                problems.append(f"{rel}: second --fix changed the file again (not idempotent)")
        if fix.returncode not in (0, 1, 2):
            problems.append(f"--fix exited {fix.returncode}: {fix.stderr[-500:]}")

    by_code = Counter(f["code"] for f in findings)
    by_package = Counter(Path(f["path"]).parts[1] for f in findings)
    return {
        "roots": [str(r) for r in roots],
        "files": len(files),
        "lines": lines,
        "findings": len(findings),
        "findings_by_code": dict(sorted(by_code.items())),
        "findings_by_package": dict(by_package.most_common()),
        "unparsable_files": len(errors) - len(internal),
        "internal_errors": len(internal),
        "files_changed_by_fix": len(changed),
        "lint_seconds": round(lint_seconds, 1),
        "fix_seconds": round(fix_seconds, 1),
        "total_seconds": round(time.time() - start, 1),
        "problems": problems,
        "ok": not problems,
    }


def markdown(result: dict) -> str:
    rows = [
        ("files", f"{result['files']:,}"),
        ("lines", f"{result['lines']:,}"),
        (
            "findings",
            f"{result['findings']} ({', '.join(f'{k} {v}' for k, v in result['findings_by_code'].items()) or 'none'})",
        ),
        ("findings by package", ", ".join(f"{k} {v}" for k, v in result["findings_by_package"].items()) or "none"),
        ("unparsable files (exit 2, skipped)", str(result["unparsable_files"])),
        ("internal errors", str(result["internal_errors"])),
        ("files changed by --fix --unsafe-fixes", str(result["files_changed_by_fix"])),
        ("lint / fix seconds", f"{result['lint_seconds']} / {result['fix_seconds']}"),
        ("invariant violations", str(len(result["problems"]))),
    ]
    out = ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    if result["problems"]:
        out += ["", "Violations:", *(f"- {p}" for p in result["problems"][:50])]
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="folders to sweep (default: site-packages)")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = sweep(args.root or site_package_dirs(), args.limit, args.jobs)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweep.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "sweep.md").write_text(markdown(result))
    print(markdown(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
