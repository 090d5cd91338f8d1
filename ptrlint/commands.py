"""ptrlint's commands beside the lint run, as ruff's: ``rule``, ``clean``, ``--watch`` and
``--show-settings`` (the command line parses, this module does)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Callable, cast

if TYPE_CHECKING:
    from .rules.base import Rule
    from .settings import Settings

EXIT_CLEAN, EXIT_ERROR = 0, 2  # as the command line says them (ptrlint/cli.py)


def watch(args: argparse.Namespace, argv: list[str], lint: Callable[[list[str]], int]) -> int:
    """``--watch``: one run, then one more whenever a file that may change the answer changes (the
    file events come from watchfiles, as ruff's from notify; a burst of changes is one run)."""
    try:
        import watchfiles
    except ImportError:
        print("ptrlint: --watch needs watchfiles: pip install 'ptrlint[watch]'", file=sys.stderr)
        return EXIT_ERROR
    if args.fix or args.diff or args.add_noqa or args.paths == ["-"]:
        print("ptrlint: --watch reports only: without --fix, --diff, --add-noqa or stdin", file=sys.stderr)
        return EXIT_ERROR
    watched = [p for p in (args.paths or ["."]) if os.path.exists(p)]

    def relevant(_change: object, path: str) -> bool:
        return path.endswith((".py", ".pyi", ".ipynb")) or os.path.basename(path) == "pyproject.toml"

    print("Watching for file changes.", file=sys.stderr, flush=True)
    lint(argv)
    sys.stdout.flush()
    for _changes in watchfiles.watch(*watched, watch_filter=relevant, raise_interrupt=False):
        print("File change detected...", file=sys.stderr, flush=True)
        lint(argv)
        sys.stdout.flush()
    return EXIT_CLEAN


def rule_command(argv: list[str]) -> int:
    """``ptrlint rule CODE`` / ``ptrlint rule --all``: a rule's documentation (text or JSON), as ``ruff rule``."""
    from .rules import ALL_RULES, RULES_BY_CODE

    parser = argparse.ArgumentParser(prog="ptrlint rule", description="Print a rule's documentation.")
    parser.add_argument("code", nargs="?", help="the rule's code (PTR001)")
    parser.add_argument("--all", action="store_true", help="every rule")
    parser.add_argument("--output-format", default="text", choices=("text", "json"))
    args = parser.parse_args(argv)
    if args.all == bool(args.code):
        print("ptrlint rule: give a rule's code or --all", file=sys.stderr)
        return EXIT_ERROR
    rules = list(ALL_RULES) if args.all else [RULES_BY_CODE.get(args.code.strip().upper())]
    if rules[0] is None:
        print(f"ptrlint: unknown rule {args.code!r}; see `ptrlint rule --all`", file=sys.stderr)
        return EXIT_ERROR
    if args.output_format == "json":
        docs = [
            {
                "code": r.code,
                "name": r.name,
                "summary": r.summary,
                "fix": r.fix_availability,
                "explanation": r.explain(),
            }
            for r in cast("list[type[Rule]]", rules)
        ]  # None: returned above
        print(json.dumps(docs if args.all else docs[0], indent=2))
    else:
        print("\n".join(r.explain().rstrip("\n") for r in cast("list[type[Rule]]", rules)))
    return EXIT_CLEAN


def clean_command(argv: list[str]) -> int:
    """``ptrlint clean``: remove the caches under the current folder (and ``PTRLINT_CACHE_DIR``), as
    ``ruff clean`` does. Only folders that carry the cache's ``CACHEDIR.TAG`` are removed."""
    import shutil

    from .cache import CACHE_DIRNAME, is_cache_dir

    parser = argparse.ArgumentParser(prog="ptrlint clean", description="Remove ptrlint's caches under this folder.")
    parser.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args(argv)
    found = []
    for folder, subfolders, _files in os.walk("."):
        if CACHE_DIRNAME in subfolders:
            found.append(os.path.join(folder, CACHE_DIRNAME))
        subfolders[:] = [d for d in subfolders if d not in (CACHE_DIRNAME, ".git")]
    configured = os.environ.get("PTRLINT_CACHE_DIR")
    if configured:
        found.append(configured)
    for folder in dict.fromkeys(found):
        if is_cache_dir(folder):
            shutil.rmtree(folder, ignore_errors=True)
            if not args.quiet:
                print(f"Removing cache at: {folder}", file=sys.stderr)
    return EXIT_CLEAN


def settings_text(path: str, settings: Settings) -> str:
    """``--show-settings``: what applies to ``path``, configuration keys as TOML (as ``ruff check --show-settings``)."""
    from dataclasses import fields

    from .config import CONFIG_KEYS

    config = settings.config
    lines = [
        f"Resolved settings for: {path}",
        f"Settings path: {config.source or '(defaults)'}",
        f"Project root: {config.root}",
        "",
    ]
    by_attr = {key.replace("-", "_"): key for key in CONFIG_KEYS}
    for f in fields(config):
        if f.name in by_attr:
            value = getattr(config, f.name)
            shown = (
                [list(v) for v in value]
                if f.name == "per_file_ignores"
                else (list(value) if isinstance(value, tuple) else value)
            )
            lines.append(f"{by_attr[f.name]} = {json.dumps(shown)}")
    lines += [
        "",
        f"enabled rules = {json.dumps(sorted(settings.enabled))}",
        f"cache = {json.dumps(settings.cache_dir)}",
        f"project index = {json.dumps(settings.project_index)}",
        f"fix = {json.dumps(settings.fix)}, unsafe fixes = {json.dumps(settings.unsafe_fixes)}",
    ]
    return "\n".join(lines) + "\n"
