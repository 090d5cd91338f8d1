"""``python -m ptrlint.runtime [--offset N] (-m module | script.py) [args...]``.

Runs a script or module with simulated high addresses (data_ptr() returns real + 2**63), the
way ``coverage run`` runs one under coverage; failures get the simulation's note.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from ._env import ENV_VAR
from .simulate import DEFAULT_OFFSET, offset_from_environment, simulate_high_addresses, validate_offset


def main(argv: list[str] | None = None) -> int:
    """Run a script or module under the mode, the way ``coverage run`` runs one under coverage."""
    parser = argparse.ArgumentParser(
        prog="python -m ptrlint.runtime",
        description="Run a Python script or module with data_ptr() returning addresses >= 2**63.",
    )
    parser.add_argument(
        "--offset",
        type=lambda v: int(v, 0),
        default=None,
        help=f"the shift (default ${ENV_VAR} if it is a number, else 2**63)",
    )
    parser.add_argument("-m", dest="module", help="run a library module as a script")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="script.py [args...] (or args for -m)")
    args = parser.parse_args(argv)
    if not args.module and not args.target:
        parser.error("give a script or -m module")
    try:
        offset = validate_offset(
            args.offset if args.offset is not None else offset_from_environment() or DEFAULT_OFFSET
        )
    except ValueError as exc:
        parser.error(str(exc))
    with simulate_high_addresses(offset):
        if args.module:
            sys.argv = [args.module, *args.target]
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args.target)
            sys.path[0] = os.path.dirname(os.path.abspath(args.target[0]))  # as `python script.py` would
            runpy.run_path(args.target[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
