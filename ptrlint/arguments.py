"""The command line's options: the parser, the combinations it refuses, and the settings a
configuration gets with the options on top. The commands that act on them are :mod:`.cli`'s."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from . import __version__

if TYPE_CHECKING:
    from .config import Config
    from .settings import Settings

OUTPUT_FORMATS = ("full", "concise", "json", "github", "sarif")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ptrlint",
        usage="ptrlint [check] [options] [PATHS ...]\n       ptrlint rule CODE|--all\n       ptrlint clean\n"
        "       ptrlint lsp [--stdio]",
        description="Find memory addresses stored in signed, narrow or implicit-dtype tensors and arrays.",
        epilog="Commands: `ptrlint check [PATHS]` (the same as `ptrlint [PATHS]`), `ptrlint rule CODE|--all`, "
        "`ptrlint clean`, `ptrlint lsp` (the language server on stdio; needs the `lsp` extra).",
    )
    _add_checking(p)
    _add_run(p)
    _add_views(p)
    return p


def _add_checking(p: argparse.ArgumentParser) -> None:
    """What to check and fix, and which rules."""
    p.add_argument("paths", nargs="*", help="files, folders or notebooks to check (default: .); '-' reads stdin")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply (with --fix/--diff) or show unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print fixes as a unified diff, change nothing; exit 1 if any")
    p.add_argument(
        "--add-noqa",
        action="store_true",
        help="append `# noqa: CODE` to every line with a finding (a baseline for adopting ptrlint)",
    )
    p.add_argument(
        "--select", type=_csv, default=None, metavar="CODES", help="rule codes or prefixes to enable (ALL, PTR, PTR001)"
    )
    p.add_argument("--extend-select", type=_csv, default=None, metavar="CODES", help="add codes to the selection")
    p.add_argument("--ignore", type=_csv, default=None, metavar="CODES", help="codes or prefixes to disable")


def _add_run(p: argparse.ArgumentParser) -> None:
    """The output, the configuration, and how the run goes (jobs, cache, files)."""
    p.add_argument(
        "--output-format",
        "--format",
        dest="output_format",
        default=None,
        choices=(*OUTPUT_FORMATS, "text"),
        metavar="{full,concise,json,github,sarif}",
        help="full (source and fix; the default on a terminal), concise (one line per finding; the "
        "default otherwise; `text` is the same), json, github, sarif",
    )
    p.add_argument(
        "--config",
        action="append",
        default=None,
        metavar="FILE|KEY=VALUE",
        help="read [tool.ptrlint] from this pyproject.toml, or override one setting with a TOML "
        "`key = value` pair (repeatable: one file and any number of pairs)",
    )
    p.add_argument("--isolated", action="store_true", help="ignore all configuration files")
    p.add_argument("--exit-zero", "-e", action="store_true", help="exit 0 even when findings remain")
    p.add_argument("--stdin-filename", default=None, metavar="PATH", help="name to report for '-' (stdin)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--no-cache", "-n", action="store_true", help="do not read or write .ptrlint_cache/")
    p.add_argument(
        "--cache-dir",
        default=None,
        metavar="DIR",
        help="the cache's folder (default: .ptrlint_cache beside the configuration) [env: PTRLINT_CACHE_DIR]",
    )
    p.add_argument(
        "--output-file", "-o", default=None, metavar="PATH", help="write the report to this file, not stdout"
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print findings, and nothing else")
    p.add_argument(
        "--silent", "-s", action="store_true", help="print nothing (the exit status still says whether findings remain)"
    )
    p.add_argument(
        "--exit-non-zero-on-fix",
        action="store_true",
        help="exit 1 when --fix changed a file, even if no finding remains",
    )
    p.add_argument(
        "--no-project-index",
        action="store_true",
        help="analyse each file alone (no evidence from the other modules of its project)",
    )
    p.add_argument(
        "--force-exclude",
        dest="force_exclude",
        action="store_true",
        default=None,
        help="apply the excludes (and .gitignore) to files named on the command line too (pre-commit)",
    )
    p.add_argument("--no-force-exclude", dest="force_exclude", action="store_false", help=argparse.SUPPRESS)
    p.add_argument(
        "--respect-gitignore",
        dest="respect_gitignore",
        action="store_true",
        default=None,
        help="skip what git ignores (.gitignore, .git/info/exclude, global excludes; the default)",
    )
    p.add_argument(
        "--no-respect-gitignore", dest="respect_gitignore", action="store_false", help="lint files git ignores too"
    )


def _add_views(p: argparse.ArgumentParser) -> None:
    """What else a run may show instead of, or beside, its findings (and the rules' documentation)."""
    p.add_argument(
        "--watch",
        "-w",
        action="store_true",
        help="lint again whenever a Python file, notebook or pyproject.toml changes (the `watch` extra)",
    )
    p.add_argument("--show-files", action="store_true", help="print the files that would be checked, and exit")
    p.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings used for the first file that would be checked, and exit",
    )
    p.add_argument("--verbose", "-v", action="store_true", help="say which named files are skipped and why")
    p.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per code instead of the findings (JSON with --output-format json)",
    )
    p.add_argument(
        "--fix-only",
        action="store_true",
        help="apply fixes, and do not report or fail on the findings left (implies --fix)",
    )
    p.add_argument(
        "--show-fixes",
        action="store_true",
        help="list the fixes --fix applied, by file and code, each with the reader that chose its form",
    )
    p.add_argument("--show-evidence", action="store_true", help="print the evidence under each finding (text formats)")
    p.add_argument("--version", action="version", version=f"ptrlint {__version__}")
    p.add_argument("--list-rules", action="store_true", help="list the rules and exit")
    p.add_argument("--explain", metavar="CODE", default=None, help="print the documentation of a rule and exit")


def conflicting_arguments(args: argparse.Namespace, paths: list[str], use_stdin: bool) -> str | None:
    for option in ("select", "extend_select", "ignore"):
        given = getattr(args, option)
        if given is not None and not given:
            return f"--{option.replace('_', '-')} needs at least one code or prefix (ALL, PTR, PTR001)"
    if "-" in paths and not use_stdin:
        return "'-' (stdin) cannot be combined with other paths"
    if args.jobs is not None and args.jobs < 1:
        return "--jobs must be at least 1"
    if args.add_noqa and args.fix:
        return "--add-noqa cannot be combined with --fix"
    return None


def run_settings(config: Config, args: argparse.Namespace, output: str, use_stdin: bool) -> Settings:
    """One configuration's settings: its selection, with the command line's on top."""
    from .cache import CACHE_DIRNAME
    from .settings import Settings, expand_selector, select_codes

    select = args.select if args.select is not None else list(config.select)
    extend = list(config.extend_select) + (args.extend_select or [])
    ignore = list(config.ignore) + (args.ignore or [])
    enabled = select_codes(select, extend, ignore)
    for _glob, codes in config.per_file_ignores:
        for code in codes:
            expand_selector(code)
    chosen = args.cache_dir or os.environ.get("PTRLINT_CACHE_DIR")
    cache_dir = (
        None
        if args.no_cache or use_stdin
        else (os.path.abspath(chosen) if chosen else os.path.join(config.root, CACHE_DIRNAME))
    )
    return Settings(
        config=config,
        enabled=enabled,
        fix=args.fix and not args.diff,  # --diff is a preview: it writes nothing, whatever else is given (as ruff)
        unsafe_fixes=args.unsafe_fixes,
        diff=args.diff and not args.add_noqa,  # with --add-noqa, --diff shows the comments instead
        cache_dir=cache_dir,
        render_edits=output in ("json", "sarif", "full") and not args.add_noqa,  # these formats show each fix's edits
        project_index=not args.no_project_index,
        write_roots=write_roots(args.paths or ["."]),
    )


def write_roots(paths: list[str]) -> tuple[str, ...]:
    """Where fixes may be written: each folder given, resolved (a file given: its folder, resolved)."""
    roots = []
    for path in paths:
        if path == "-":
            continue
        folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        roots.append(os.path.realpath(folder))
    return tuple(sorted(set(roots)))
