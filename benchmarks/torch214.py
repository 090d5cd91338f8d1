"""The torch 2.14 direction of element stores (issue 62), measured in a venv of its own.

torch 2.13 converts a Python int stored into a tensor element through int64: a raw address >= 2**63
raises even on a uint64 tensor (PTR005), and a *wrapped* (negative) value is stored as its bits. torch
2.14.1 stores the raw address into uint64 exactly and rejects the negative one (PTR009). This script
builds ``benchmarks/.cache/venv-torch214`` with ``torch==2.14.1`` (a CUDA build, about 5.5 GB; pip on
Python 3.11 takes it from this machine's disk), installs this checkout into it without dependencies
beside libcst, pathspec and numpy, then:

1. measures each direction on that torch (and on the project's own venv, torch 2.13, for the side by
   side);
2. runs ``tests/linter/test_encodings.py`` there: every case linted, fixed, and run at real and simulated
   high addresses, the wrapped-into-uint64 store expected to fail before its fix on 2.14.

Writes ``benchmarks/results/torch214.md`` and ``.json``. Not part of the README's test command.

    python benchmarks/torch214.py [--venv DIR] [--skip-install]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
DEFAULT_VENV = REPO / "benchmarks" / ".cache" / "venv-torch214"

PROBE = r"""
import json, torch
raw, wrapped = 2**63 + 16, 2**63 + 16 - 2**64
out = {"torch": torch.__version__}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
def store(dtype, value):
    t = torch.zeros(2, dtype=dtype)
    t[0] = value
    bits = t.view(torch.uint64)[0].item() if dtype == torch.int64 else t[0].item()
    assert bits == raw, hex(bits)  # the address's 64 bits, whichever encoding went in
attempt("raw into uint64 element store", lambda: store(torch.uint64, raw))
attempt("wrapped into uint64 element store", lambda: store(torch.uint64, wrapped))
attempt("raw into int64 element store", lambda: store(torch.int64, raw))
attempt("wrapped into int64 element store", lambda: store(torch.int64, wrapped))
attempt("uint64 scalar tensor into int64 element store", lambda: store(torch.int64, torch.tensor(raw, dtype=torch.uint64)))
attempt("torch.tensor([raw], dtype=uint64)", lambda: torch.tensor([raw], dtype=torch.uint64))
attempt("torch.tensor([wrapped], dtype=uint64)", lambda: torch.tensor([wrapped], dtype=torch.uint64))
attempt("torch.tensor([raw], dtype=int64)", lambda: torch.tensor([raw], dtype=torch.int64))
print(json.dumps(out))
"""


def sh(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]


def build(venv: Path) -> float:
    start = time.perf_counter()
    if not (venv / "bin" / "python").exists():
        sh([sys.executable, "-m", "venv", str(venv)]).check_returncode()
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    sh([*pip, "torch==2.14.1", "numpy", "libcst>=1.9,<2", "pathspec", "pytest"]).check_returncode()
    sh([*pip, "--no-deps", "-e", str(REPO)]).check_returncode()
    return time.perf_counter() - start


def probe(python: str) -> dict:
    done = sh([python, "-c", PROBE])
    if done.returncode != 0:
        return {"error": done.stderr[-500:]}
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--skip-install", action="store_true")
    args = parser.parse_args()
    seconds = 0.0 if args.skip_install else build(args.venv)
    python = str(args.venv / "bin" / "python")
    new, old = probe(python), probe(sys.executable)
    tests = sh(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/linter/test_encodings.py"],
        cwd=REPO,
        env={"PATH": f"{args.venv / 'bin'}:/usr/bin:/bin", "HOME": str(Path.home())},
    )
    summary = tests.stdout.strip().splitlines()[-1] if tests.stdout.strip() else tests.stderr[-300:]
    result = {
        "torch_2_14": new,
        "torch_here": old,
        "tests": summary,
        "tests_rc": tests.returncode,
        "install_seconds": round(seconds, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "torch214.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = [f"| {key} | {old.get(key, '')} | {new.get(key, '')} |" for key in new if key != "torch"]
    (RESULTS / "torch214.md").write_text(
        "\n".join(
            [
                "# Element stores of addresses on two torch releases",
                "",
                "Produced by `python benchmarks/torch214.py` (torch 2.14.1 in its own venv, a CUDA build run on the CPU).",
                "raw = 2**63 + 16, wrapped = raw - 2**64.",
                "",
                f"| operation | torch {old.get('torch', '?')} | torch {new.get('torch', '?')} |",
                "|---|---|---|",
                *rows,
                "",
                f"`tests/linter/test_encodings.py` on torch {new.get('torch', '?')}: {summary} (exit {tests.returncode}).",
                "",
            ]
        )
    )
    print(json.dumps(result, indent=2))
    return 0 if tests.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
