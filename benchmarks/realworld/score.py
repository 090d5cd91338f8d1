"""Accuracy on released packages nobody taught ptrlint: materialise, lint, score against labels.

Two sets, each a list of pinned releases (``manifest.toml``) and labels read by hand:

- ``realworld``: the project's own set (``labels.tsv`` here): every finding read in context and every
  candidate site found by a search for address sources and sinks, labelled TP / FP / DOUBTFUL;
- ``fresh5``: five releases the team labelled blind (``../shared/data/fresh5/``: ``findings.tsv`` with
  a verdict per finding of an earlier ptrlint, ``misses.tsv`` with the real containers it missed).

Packages are downloaded with ``pip download --no-deps`` (an sdist straight from the package index
where a wheel's metadata step needs tooling), unpacked into ``benchmarks/.cache/`` (git-ignored) and
never installed; no third-party code is committed. Each tree is linted with
``ptrlint --no-cache --isolated --format json`` from its root.

Scoring, per package and per class: a finding on a labelled TP line is a true positive; on an FP or
DOUBTFUL line a false one; on no labelled line it is *unreviewed* and counted false until labelled.
A labelled TP line without a finding is a miss; a label of a site found missing by a reader (code
``-``) matches a finding up to two lines away (the reader marked the call, the rule reports the dtype
line). Precision counts DOUBTFUL as false, finding by finding; recall counts sites, labelled TP lines
found over all labelled TP lines (a call that passes three addresses wrongly is one site, however
many findings it gets). Findings come in
two severities (the harm model): *errors* name a failure ptrlint can reach, *notes* a doubt; the
headline figures count both, and the notes are listed apart as well.

    python benchmarks/realworld/score.py [--set realworld|fresh5|all] [--cache DIR] [--package NAME]

Writes ``benchmarks/results/<set>.json`` and ``.md``; the last line printed per set is
``<set>: packages=N sites=M precision=P recall=R unreviewed=U``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RESULTS = REPO / "benchmarks" / "results"
DEFAULT_CACHE = REPO / "benchmarks" / ".cache" / "realworld"
SHARED = REPO.parent / "shared" / "data" / "fresh5"
MISS_TOLERANCE = 2  # lines between a missed site's label and the finding that reports it


@dataclass(frozen=True)
class Package:
    set: str
    name: str
    version: str
    source: str = "wheel"  # "wheel" or "sdist"
    lint: tuple[str, ...] = (".",)  # paths inside the unpacked tree to lint


@dataclass
class Label:
    package: str
    path: str
    line: int
    code: str
    verdict: str  # TP, FP, DOUBTFUL
    cls: str = "-"
    reason: str = ""


@dataclass
class Score:
    package: str
    findings: list[dict] = field(default_factory=list)
    tp: list[tuple[dict, Label]] = field(default_factory=list)
    false: list[tuple[dict, Label]] = field(default_factory=list)
    unreviewed: list[dict] = field(default_factory=list)
    misses: list[Label] = field(default_factory=list)
    found: int = 0  # labelled TP sites with a finding (a call with three bad arguments is one site)
    seconds: float = 0.0

    @property
    def notes(self) -> list[dict]:
        return [f for f in self.findings if f.get("severity") == "note"]


def manifest() -> list[Package]:
    data = tomllib.loads((HERE / "manifest.toml").read_text())
    return [
        Package(
            set=p["set"],
            name=p["name"],
            version=p["version"],
            source=p.get("source", "wheel"),
            lint=tuple(p.get("lint", ["."])),
        )
        for p in data["package"]
    ]


# ----- materialise --------------------------------------------------------------------------------
# What ptrlint reads of a release: its Python, and the Cython declarations of its compiled modules (PTR008)
SOURCE_SUFFIXES = (".py", ".pyi", ".pxd", ".pyx")


def tree(package: Package, cache: Path) -> Path:
    """The unpacked release (downloaded once; unpacked again when the files kept change)."""
    target = cache / "trees" / f"{package.name}-{package.version}"
    marker = target / ".complete"
    if marker.exists() and marker.read_text().partition("\n")[2] == " ".join(SOURCE_SUFFIXES):
        return target
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = sdist(package, downloads) if package.source == "sdist" else wheel(package, downloads)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target, [m for m in zf.namelist() if m.endswith(SOURCE_SUFFIXES)])
    else:
        with tarfile.open(archive) as tf:
            root = os.path.commonpath(tf.getnames())
            members = [m for m in tf.getmembers() if m.isfile() and m.name.endswith(SOURCE_SUFFIXES)]
            for member in members:
                member.name = os.path.relpath(member.name, root)
            tf.extractall(target, members, filter="data")
    marker.write_text(archive.name + "\n" + " ".join(SOURCE_SUFFIXES))
    return target


def wheel(package: Package, downloads: Path) -> Path:
    stem = re.sub(r"[-_.]+", "_", package.name).lower()
    found = [p for p in downloads.glob("*.whl") if p.name.lower().startswith(f"{stem}-{package.version}-")]
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                f"{package.name}=={package.version}",
                "-d",
                str(downloads),
            ],
            check=True,
        )
        found = [p for p in downloads.glob("*.whl") if p.name.lower().startswith(f"{stem}-{package.version}-")]
    if not found:
        sys.exit(f"no wheel of {package.name}=={package.version} downloaded")
    return sorted(found)[0]


def sdist(package: Package, downloads: Path) -> Path:
    """The source archive straight from the index (its metadata step may need tooling we lack)."""
    stem = re.sub(r"[-_.]+", "_", package.name).lower()
    for candidate in downloads.glob("*.tar.gz"):
        if candidate.name.lower() in (f"{stem}-{package.version}.tar.gz", f"{package.name}-{package.version}.tar.gz"):
            return candidate
    index = f"https://pypi.org/simple/{package.name}/"
    with urllib.request.urlopen(index, timeout=120) as response:
        page = response.read().decode()
    for url in re.findall(r'href="([^"]+)"', page):
        name = url.split("#")[0].rsplit("/", 1)[-1]
        if name.lower() in (f"{stem}-{package.version}.tar.gz", f"{package.name.lower()}-{package.version}.tar.gz"):
            target = downloads / name
            with urllib.request.urlopen(url.split("#")[0], timeout=600) as response, open(target, "wb") as out:
                shutil.copyfileobj(response, out)
            return target
    sys.exit(f"no sdist of {package.name}=={package.version} on the index")


# ----- labels -------------------------------------------------------------------------------------
def labels(set_name: str) -> dict[str, list[Label]]:
    out: dict[str, list[Label]] = defaultdict(list)
    if set_name == "fresh5":
        if not SHARED.is_dir():
            sys.exit(f"the fresh5 labels are not here ({SHARED}): they live beside the checkout in ../shared")
        with open(SHARED / "findings.tsv") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                out[row["package"]].append(
                    Label(
                        row["package"],
                        row["path"],
                        int(row["line"]),
                        row["code"],
                        row["verdict"],
                        "-",
                        "labelled by the team",
                    )
                )
        with open(SHARED / "misses.tsv") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                out[row["package"]].append(
                    Label(row["package"], row["path"], int(row["line"]), "-", "TP", "miss", row["note"])
                )
        _read(HERE / "fresh5_labels.tsv", out)  # findings the team did not review, read since: ours
        return out
    _read(HERE / "labels.tsv", out)
    return out


def _read(path: Path, out: dict[str, list[Label]]) -> None:
    with open(path) as f:
        for row in csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t"):
            out[row["package"]].append(
                Label(
                    row["package"],
                    row["path"],
                    int(row["line"]),
                    row["code"],
                    row["verdict"],
                    row["class"],
                    row["reason"],
                )
            )


# ----- lint and score -----------------------------------------------------------------------------
def lint(root: Path, package: Package) -> tuple[list[dict], float]:
    cmd = [
        sys.executable,
        "-m",
        "ptrlint",
        "--no-cache",
        "--isolated",
        "--exit-zero",
        "--format",
        "json",
        *package.lint,
    ]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1, 2):
        sys.exit(f"ptrlint failed on {package.name}: {done.stderr[-2000:]}")
    data = json.loads(done.stdout or "[]")
    findings = [f for f in data if f["code"].startswith("PTR")]
    for f in findings:
        f["path"] = os.path.normpath(f["path"])
    return findings, seconds


def score(package: Package, findings: list[dict], package_labels: list[Label], seconds: float) -> Score:
    by_line: dict[tuple[str, int], list[Label]] = defaultdict(list)
    for label in package_labels:
        by_line[(os.path.normpath(label.path), label.line)].append(label)
    result = Score(package.name, findings, seconds=seconds)
    matched: set[int] = set()  # ids of the labels a finding landed on
    for finding in findings:
        key = (finding["path"], finding["line"])
        here = by_line.get(key) or _near_miss(by_line, key)
        if not here:
            result.unreviewed.append(finding)
            continue
        chosen = next((lb for lb in here if lb.code in (finding["code"], "-")), here[0])
        matched.add(id(chosen))
        (result.tp if chosen.verdict == "TP" else result.false).append((finding, chosen))
    for label in package_labels:
        if (
            label.verdict == "TP"
            and id(label) not in matched
            and not any(id(other) in matched for other in by_line.get((os.path.normpath(label.path), label.line), []))
        ):
            result.misses.append(label)
    result.found = sum(1 for label in package_labels if label.verdict == "TP") - len(result.misses)
    return result


def _near_miss(by_line: dict[tuple[str, int], list[Label]], key: tuple[str, int]) -> list[Label]:
    """A label of a missed site (code ``-``: written where a reader saw the container, not where a rule
    reports) matches a finding up to MISS_TOLERANCE lines away (a call's first line, its dtype line)."""
    path, line = key
    for distance in range(1, MISS_TOLERANCE + 1):
        for other in (line - distance, line + distance):
            found = [lb for lb in by_line.get((path, other), []) if lb.code == "-" and lb.verdict == "TP"]
            if found:
                return found
    return []


def ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def run(set_name: str, packages: list[Package], cache: Path) -> dict:
    all_labels = labels(set_name)
    scores: list[Score] = []
    for package in packages:
        root = tree(package, cache)
        findings, seconds = lint(root, package)
        scores.append(score(package, findings, all_labels.get(package.name, []), seconds))
    tp = sum(len(s.tp) for s in scores)
    false = sum(len(s.false) for s in scores)
    unreviewed = sum(len(s.unreviewed) for s in scores)
    misses = sum(len(s.misses) for s in scores)
    found = sum(s.found for s in scores)
    sites = sum(len(all_labels.get(p.name, [])) for p in packages)
    notes = [f for s in scores for f in s.notes]
    errors_tp = sum(1 for s in scores for f, _ in s.tp if f.get("severity") != "note")
    errors_all = sum(1 for s in scores for f in s.findings if f.get("severity") != "note")
    by_class: dict[str, Counter] = defaultdict(Counter)
    for s in scores:
        for _, label in s.tp:
            by_class[label.cls]["tp"] += 1
        for _, label in s.false:
            by_class[label.cls]["false"] += 1
        for label in s.misses:
            by_class[label.cls]["miss"] += 1
    return {
        "set": set_name,
        "packages": [
            {
                "name": s.package,
                "version": p.version,
                "findings": len(s.findings),
                "notes": len(s.notes),
                "tp": len(s.tp),
                "false": len(s.false),
                "unreviewed": len(s.unreviewed),
                "misses": len(s.misses),
                "precision": round(ratio(len(s.tp), len(s.tp) + len(s.false) + len(s.unreviewed)), 3),
                "found": s.found,
                "recall": round(ratio(s.found, s.found + len(s.misses)), 3),
                "seconds": round(s.seconds, 2),
                "false_findings": [
                    f"{f['path']}:{f['line']} {f['code']} ({lb.verdict}: {lb.reason})" for f, lb in s.false
                ],
                "unreviewed_findings": [
                    f"{f['path']}:{f['line']} {f['code']} {f.get('severity', 'error')}: {f['message']}"
                    for f in s.unreviewed
                ],
                "missed": [f"{lb.path}:{lb.line} {lb.code} [{lb.cls}] {lb.reason}" for lb in s.misses],
            }
            for s, p in zip(scores, packages)
        ],
        "by_class": {k: dict(v) for k, v in sorted(by_class.items())},
        "sites": sites,
        "tp": tp,
        "false": false,
        "unreviewed": unreviewed,
        "misses": misses,
        "notes": len(notes),
        "precision": round(ratio(tp, tp + false + unreviewed), 3),
        "found": found,
        "recall": round(ratio(found, found + misses), 3),
        "error_precision": round(ratio(errors_tp, errors_all), 3),
    }


def markdown(result: dict) -> str:
    lines = [
        f"# Accuracy on `{result['set']}`",
        "",
        "Produced by `python benchmarks/realworld/score.py --set " + result["set"] + "`. Precision counts "
        "DOUBTFUL and unreviewed findings as false; recall is over labelled TP sites (found plus missed).",
        "",
        "| package | version | findings | notes | TP | false | unreviewed | missed | precision | recall |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in result["packages"]:
        lines.append(
            f"| {p['name']} | {p['version']} | {p['findings']} | {p['notes']} | {p['tp']} | {p['false']} | "
            f"{p['unreviewed']} | {p['misses']} | {p['precision']:.2f} | {p['recall']:.2f} |"
        )
    lines += [
        "",
        f"**All: sites={result['sites']} findings TP={result['tp']} false={result['false']} "
        f"unreviewed={result['unreviewed']} missed={result['misses']} (notes: {result['notes']}); "
        f"precision {result['precision']:.3f}, recall {result['recall']:.3f}; precision of the errors alone "
        f"{result['error_precision']:.3f}.**",
        "",
        "## By class",
        "",
        "| class | TP | false | missed |",
        "|---|---|---|---|",
    ]
    for cls, counts in result["by_class"].items():
        lines.append(f"| {cls} | {counts.get('tp', 0)} | {counts.get('false', 0)} | {counts.get('miss', 0)} |")
    for p in result["packages"]:
        rows = [
            *(f"- false: {x}" for x in p["false_findings"]),
            *(f"- unreviewed: {x}" for x in p["unreviewed_findings"]),
            *(f"- missed: {x}" for x in p["missed"]),
        ]
        if rows:
            lines += ["", f"### {p['name']} {p['version']}", "", *rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=("realworld", "fresh5", "all"), default="all")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("PTRLINT_REALWORLD_CACHE", DEFAULT_CACHE)))
    parser.add_argument("--package", action="append", help="only these packages (by name)")
    parser.add_argument("--no-write", action="store_true", help="print, but do not write benchmarks/results/")
    args = parser.parse_args()
    sets = ("realworld", "fresh5") if args.set == "all" else (args.set,)
    status = 0
    for set_name in sets:
        packages = [p for p in manifest() if p.set == set_name and (not args.package or p.name in args.package)]
        result = run(set_name, packages, args.cache)
        for p in result["packages"]:
            print(
                f"{p['name']:32s} {p['version']:14s} findings={p['findings']:3d} notes={p['notes']:2d} tp={p['tp']:3d} "
                f"false={p['false']:2d} unreviewed={p['unreviewed']:2d} missed={p['misses']:2d}"
            )
            for row in (*p["false_findings"], *p["unreviewed_findings"], *p["missed"]):
                print(f"    {row}")
        if not args.no_write and not args.package:
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / f"{set_name}.json").write_text(json.dumps(result, indent=2) + "\n")
            (RESULTS / f"{set_name}.md").write_text(markdown(result))
        print(
            f"{set_name}: packages={len(packages)} sites={result['sites']} precision={result['precision']:.3f} "
            f"recall={result['recall']:.3f} unreviewed={result['unreviewed']} notes={result['notes']} "
            f"error_precision={result['error_precision']:.3f}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
