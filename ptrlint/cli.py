"""Command line: the commands, exit codes, printing and writing (its options: :mod:`.arguments`). No lint logic here."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .arguments import build_parser, conflicting_arguments, run_settings, write_roots

if TYPE_CHECKING:
    from .config import Config
    from .findings import FileResult, Finding
    from .settings import Settings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _stderr_line(message: str) -> None:
    print(message, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        print("ptrlint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


def console() -> None:
    """The ``ptrlint`` command: run :func:`main`, flush, and leave without tearing the heap down.

    A cold run on a large tree ends holding hundreds of thousands of objects (module summaries,
    the project index); letting the interpreter free them one by one at exit cost 0.1-0.2 s on
    installed torch, for memory the operating system reclaims at once. Everything that must outlive
    the process (the cache, fixed files) is written before :func:`main` returns and the worker
    pools are shut down, so once the output is flushed ``os._exit`` loses nothing; mypy ends its
    command the same way. Library callers of :func:`main` (tests, the LSP, benchmarks) keep a
    normal return.
    """
    signal.signal(signal.SIGTERM, _terminated)  # unwind: worker pools shut, plan folders removed
    code = main()
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "closed", False):  # closed on purpose (the language server closes stdout at exit)
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left (`ptrlint . | head`): nothing more to say
            pass
        except (OSError, ValueError):  # a closed or failing stream: the exit code still counts
            code = code or EXIT_ERROR
    os._exit(code)


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def use_color(stream: object) -> bool:
    """Colour only on a terminal; ``NO_COLOR`` turns it off and ``FORCE_COLOR`` on (no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def _command(argv: list[str]) -> int | None:
    """``ptrlint lsp``, ``ptrlint rule`` and ``ptrlint clean``: their exit status (None: a lint run)."""
    # commands come first, as ruff's do; a folder of that name is `./check`, `./lsp`
    if argv[:1] == ["lsp"]:  # `ptrlint lsp [--stdio]`: the language server
        if any(a in ("-h", "--help") for a in argv[1:]):
            print(
                "usage: ptrlint lsp [--stdio]\n\nThe language server on standard input and output (needs the `lsp` "
                "extra: pip install 'ptrlint[lsp]'). Configure your editor's LSP client to run it."
            )
            return EXIT_CLEAN
        from .lsp import main as lsp_main

        return lsp_main()
    if argv[:1] == ["rule"]:
        from .commands import rule_command

        return rule_command(argv[1:])
    if argv[:1] == ["clean"]:
        from .commands import clean_command

        return clean_command(argv[1:])
    return None


def _main(argv: list[str]) -> int:
    command = _command(argv)
    if command is not None:
        return command
    if argv[:1] == ["check"]:
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    if args.watch:
        from .commands import watch

        return watch(args, [a for a in argv if a not in ("--watch", "-w")], _main)
    if args.silent:
        args.quiet = True
    if args.fix_only:
        args.fix = True
    if args.list_rules or args.explain:
        return _rule_documentation(args)
    paths = args.paths or ["."]
    use_stdin = paths == ["-"]
    problem = conflicting_arguments(args, paths, use_stdin)
    if problem is not None:
        print(f"ptrlint: {problem}", file=sys.stderr)
        return EXIT_ERROR
    output = args.output_format or ("full" if sys.stdout.isatty() else "concise")
    output = "concise" if output == "text" else output
    resolved = _resolve_files(args, paths, use_stdin, output)
    if isinstance(resolved, int):
        return resolved
    files, groups, settings_of = resolved
    texts: dict[str, str] = {}
    if use_stdin:
        linted = _lint_stdin(args, files[0], next(iter(settings_of.values())), texts)
        if isinstance(linted, int):
            return linted
        results, out = linted
    else:
        from . import planner

        jobs = args.jobs or os.cpu_count() or 1
        results = [
            r
            for config, group in groups.items()
            if config in settings_of
            for r in planner.run(group, settings_of[config], jobs)
        ]
        results += _unconfigured(groups)
        out = sys.stdout
    if args.silent:
        out = open(os.devnull, "w", encoding="utf-8")
    elif args.output_file and out is sys.stdout:
        try:
            out = open(args.output_file, "w", encoding="utf-8")
        except OSError as exc:
            print(f"ptrlint: cannot write {args.output_file}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
    try:
        if args.add_noqa:
            return _add_noqa(results, args, out)
        if args.diff:
            return _report_diff(results, output, out, args.quiet)
        return _report(results, args, output, out, texts)
    finally:
        if out is not sys.stdout and out is not sys.stderr:
            out.close()


def _rule_documentation(args: argparse.Namespace) -> int:
    """``--list-rules`` and ``--explain CODE``."""
    from .rules import ALL_RULES, RULES_BY_CODE

    if args.list_rules:
        for rule in ALL_RULES:
            print(f"{rule.code}  {rule.name:<26} fix: {rule.fix_availability.split(' ')[0]:<9} {rule.summary}")
        return EXIT_CLEAN
    code = args.explain.strip().upper()
    rule_cls = RULES_BY_CODE.get(code)
    if rule_cls is None:
        print(f"ptrlint: unknown rule {args.explain!r}; see --list-rules", file=sys.stderr)
        return EXIT_ERROR
    print(rule_cls.explain(), end="")
    return EXIT_CLEAN


def _resolve_files(
    args: argparse.Namespace, paths: list[str], use_stdin: bool, output: str
) -> int | tuple[list[str], dict[Config, list[str]], dict[Config, Settings]]:
    """The files to lint, grouped by configuration, and each configuration's settings (or an exit status)."""
    from .config import ConfigError, ConfigResolver, parse_override
    from .discovery import discover
    from .settings import SelectionError

    try:
        files_given = [
            Path(v) for v in args.config or () if Path(v).is_file() or ("=" not in v and v.endswith(".toml"))
        ]
        if len(files_given) > 1:
            raise ConfigError("--config: give at most one configuration file (and any number of KEY=VALUE pairs)")
        overrides: dict[str, Any] = {}
        for value in args.config or ():
            if not any(Path(value) == f for f in files_given):
                overrides.update(parse_override(value))
        resolver = ConfigResolver(files_given[0] if files_given else None, args.isolated, overrides)
        if use_stdin:
            start = Path(args.stdin_filename) if args.stdin_filename else Path(".")
            files = [args.stdin_filename or "-"]
            configs = {files[0]: resolver.for_path(start if start.parent.exists() else Path("."))}
        else:
            files = discover(
                paths,
                resolver.for_path,
                args.force_exclude,
                args.respect_gitignore,
                _stderr_line if args.verbose else None,
            )
            configs = {f: resolver.for_path(f) for f in files}
            if args.show_files:
                for f in files:
                    print(f)
                return EXIT_CLEAN
            if args.show_settings:
                if not files:
                    print("ptrlint: no file to show the settings of", file=sys.stderr)
                    return EXIT_ERROR
                from .commands import settings_text

                print(settings_text(files[0], run_settings(configs[files[0]], args, output, use_stdin)), end="")
                return EXIT_CLEAN
        groups: dict[Config, list[str]] = {}
        for f in files:
            groups.setdefault(configs[f], []).append(f)
        settings_of = {
            config: run_settings(config, args, output, use_stdin)
            for config in groups
            if getattr(config, "error", None) is None
        }
    except (ConfigError, SelectionError) as exc:
        print(f"ptrlint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return files, groups, settings_of


def _lint_stdin(
    args: argparse.Namespace, name: str, settings: Settings, texts: dict[str, str]
) -> int | tuple[list[FileResult], TextIO]:
    """Standard input: its result, and where the report goes (stderr when the fixed text goes to stdout)."""
    from . import planner
    from .sources import decode, unified_diff

    data = sys.stdin.buffer.read()
    try:
        text, _encoding = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        print(f"{name}: E903 cannot decode stdin: {exc}", file=sys.stderr)
        return EXIT_ERROR
    result = planner.lint_text(text, name, settings)
    texts[name] = text
    if args.fix and not args.diff and result.error is None:  # --diff previews: a diff, not the fixed text
        sys.stdout.write(result.new_text if result.new_text is not None else text)
        sys.stdout.flush()
        return [result], sys.stderr
    if args.diff and result.new_text is not None:
        result.diff = unified_diff(name, text, result.new_text)
    return [result], sys.stdout


def _report_diff(results: list[FileResult], output: str, out: TextIO, quiet: bool = False) -> int:
    """``--diff``: the diffs, and on stderr which fix each change is."""
    from . import report

    errors = [r.error for r in results if r.error is not None]
    diffs = [r.diff for r in results if r.diff]
    for d in diffs:
        out.write(d)
    if output in ("full", "concise") and not quiet:
        for r in results:  # which fix each change is, and the consumer that chose it
            for f in r.applied:
                title = f.fix.title if f.fix is not None else ""
                print(f"{report.location(f.path, f.cell, f.line, f.column)}: {f.code} {title}", file=sys.stderr)
        n = sum(r.fixed for r in results)
        print(f"Would fix {n} finding{'s' if n != 1 else ''}." if n else "No fixes available.", file=sys.stderr)
        for e in errors:
            print(report.text([], [e]), end="", file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if diffs else EXIT_CLEAN


def _report(
    results: list[FileResult], args: argparse.Namespace, output: str, out: TextIO, texts: dict[str, str]
) -> int:
    """The findings and errors in the chosen format (or, with --statistics, their counts; with
    --fix-only, what was fixed), and the exit status."""
    from . import report

    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key())
    errors = [r.error for r in results if r.error is not None]
    fixed = sum(r.fixed for r in results if r.error is None and args.fix)
    if args.fix_only:
        findings_shown: list[Finding] = []
    else:
        findings_shown = findings
    if args.statistics:
        if output == "json":
            out.write(report.statistics_json(findings_shown))
        else:
            out.write(report.statistics(findings_shown))
            for e in errors:
                print(report.text([], [e]), end="", file=sys.stderr)
    elif output in ("full", "concise"):
        if output == "full":
            out.write(
                report.full(
                    findings_shown,
                    errors,
                    report.SourceLines(texts),
                    use_color(out),
                    args.show_evidence,
                    args.unsafe_fixes,
                )
            )
        else:
            out.write(report.text(findings_shown, errors, args.show_evidence, args.unsafe_fixes))
    else:
        formatter = {"json": report.as_json, "github": report.github, "sarif": report.sarif}[output]
        out.write(formatter(findings_shown, errors))
        for e in errors:
            if output == "json" and not args.silent:
                print(report.text([], [e]), end="", file=sys.stderr)
    text_like = output in ("full", "concise") or (args.statistics and output != "json")
    if args.show_fixes and fixed and text_like:
        out.write(report.fixes_applied([f for r in results for f in r.applied]))
    if text_like and not args.quiet:
        if args.fix_only:
            out.write(f"Fixed {fixed} finding{'s' if fixed != 1 else ''}.\n" if fixed else "No fixes applied.\n")
        else:
            out.write(report.summary(findings, errors, fixed, args.unsafe_fixes))
    out.flush()
    if errors:
        return EXIT_ERROR
    failures = [f for f in findings if f.severity != "note"]  # a note is a doubt, never a reason to fail
    if failures and not args.exit_zero and not args.fix_only:
        return EXIT_FINDINGS
    if fixed and args.exit_non_zero_on_fix:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _unconfigured(groups: dict[Config, list[str]]) -> list[FileResult]:
    """The files governed by a configuration file that could not be read: one E904 result each."""
    from .findings import CONFIG_ERROR, FileError, FileResult

    broken = [config for config in groups if getattr(config, "error", None)]
    for config in broken:  # said once each on stderr too, as ruff does; the other files are still checked
        print(f"ptrlint: {config.error}", file=sys.stderr)
    return [
        FileResult(path=f, error=FileError(f, f"not checked: {config.error}", code=CONFIG_ERROR))
        for config in broken
        for f in groups[config]
    ]


def _add_noqa(results: list[FileResult], args: argparse.Namespace, out: TextIO) -> int:
    """Write (or with --diff, show) a ``# noqa`` for every finding; report what could not be added."""
    from . import report
    from .noqa import add_noqa

    added = 0
    errors = [r.error for r in results if r.error is not None]
    for result in results:
        if result.error is not None or not result.findings:
            continue
        outcome = add_noqa(result.path, result.findings, write=not args.diff, roots=write_roots(args.paths or ["."]))
        added += outcome.added
        if args.diff and outcome.diff:
            out.write(outcome.diff)
        for line, reason in outcome.skipped:
            print(f"{result.path}:{line}: cannot add a noqa comment ({reason})", file=sys.stderr)
        if outcome.error:
            errors.append(outcome.error)
    verb = "Would add" if args.diff else "Added"
    print(f"{verb} {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    for e in errors:
        print(report.text([], [e]), end="", file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if args.diff and added else EXIT_CLEAN
