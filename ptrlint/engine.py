"""The pipeline, one plain function per stage: discover -> prefilter -> parse -> analyse -> report/fix.

Nothing here prints or parses command lines; :mod:`ptrlint.cli` does that.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import io
import os
import re
import tokenize
import traceback
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Iterable, Sequence

from .analysis.device import parse_host
from .analysis.names import analysis_options
from .analysis.source import SourceMap
from .analysis.facts import ModuleContext
from .analysis.values import Location, ModuleFacts, collect
from .cache import Cache
from .files import display_path
from .config import DEFAULT_POINTER_NAMES, Config
from .model import FileError, FileResult, Finding, Fix, Related
from .names import prefilter_regex, site_regex
from .rewrite.apply import FileChangedError, apply_fixes, write_atomic
from .rules import ALL_RULES, RULES_BY_CODE
from .rules.base import RuleContext
from .suppression import is_suppressed

MAX_FIX_ITERATIONS = 10
POOL_MIN_FILES = 4  # fewer files to parse than this: no process pool
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SelectionError(ValueError):
    """An unknown code or prefix in --select/--ignore (exit 2)."""


def expand_selector(selector: str) -> set[str]:
    selector = selector.strip().upper()
    if selector == "ALL":
        return set(RULES_BY_CODE)
    matched = {code for code in RULES_BY_CODE if code.startswith(selector)}
    if not selector or not matched:
        raise SelectionError(f"unknown rule selector {selector!r} (known codes: {', '.join(RULES_BY_CODE)}, or ALL)")
    return matched


def select_codes(select: Iterable[str], extend_select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    enabled: set[str] = set()
    for selector in [*select, *extend_select]:
        enabled |= expand_selector(selector)
    for selector in ignore:
        enabled -= expand_selector(selector)
    return frozenset(enabled)


@dataclass(frozen=True)
class Settings:
    """Everything a worker needs for one file; picklable."""

    config: Config
    enabled: frozenset[str]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    cache_dir: str | None = None
    prefilter: bool = True
    render_edits: bool = False  # fill in every fix's text edits (JSON/SARIF output, LSP): costs a libcst parse
    project_index: bool = True  # evidence across the modules of a project (ptrlint/project/)

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff


# ----- prefilter ---------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _prefilter_parts(config: Config) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...], tuple[str, ...], re.Pattern[str]]:
    extra = tuple(name.rpartition(".")[2].lower() for name in config.pointer_functions)
    custom_names = tuple(re.compile(p, re.IGNORECASE) for p in config.pointer_names if p not in DEFAULT_POINTER_NAMES)
    # every match of the regex contains one of these (lower-case) substrings
    literals = ("ptr", "pointer", "addr", "ctypes", "array_interface", "caching_allocator_alloc", *extra)
    sites = site_regex(tuple(f.rpartition(".")[2] for f in config.buffer_factories))
    return prefilter_regex(extra), custom_names, literals, sites


def prefilter(text: str, config: Config) -> bool:
    """False only when the file cannot hold a finding.

    Sound because every finding needs pointer evidence *and* a site, and both leave tokens in
    the text. Evidence: value evidence needs a pointer source (``data_ptr``, ``.ctypes.data``,
    ``ctypes.addressof``/``ctypes.cast`` (both spell ``ctypes`` at the call or in the import),
    ``__array_interface__``/``__cuda_array_interface__``, ``caching_allocator_alloc``, known
    address attributes such as ``buffer_ptrs``, or a configured pointer function, whose last name
    we search for); name evidence needs a name matching ``pointer-names``. Every name the default
    patterns match holds ``ptr(s)``, ``pointer(s)``, ``addr(s)``, ``address(es)`` or one of their
    abbreviations as a ``_``-separated word, which the search covers case-insensitively
    (``data_ptr`` and pointer-named getters too); configured patterns are tested against every
    identifier in the file. Sites: see ``names.site_regex``
    (creation calls, buffer factories, casts, ctypes wrappers, torch tensors for element writes).
    """
    return has_evidence(text, config) and has_site(text, config)


def has_evidence(text: str, config: Config) -> bool:
    """The text holds a pointer source or a pointer-named identifier (see :func:`prefilter`)."""
    regex, custom, literals, _sites = _prefilter_parts(config)
    return _has_evidence(text, regex, custom, literals)


def has_site(text: str, config: Config) -> bool:
    """The text holds a place where a finding can be reported (see :func:`prefilter`).

    With the project index, a file with a site but no evidence of its own is analysed when its
    imports reach evidence in other modules, or other modules write addresses into its classes.
    """
    return _prefilter_parts(config)[3].search(text) is not None


def _has_evidence(text: str, regex: re.Pattern[str], custom: tuple[re.Pattern[str], ...], literals: tuple[str, ...]) -> bool:
    lowered = text.lower()
    # substring tests run at memchr speed and rule out most files before the regex runs
    if any(token in lowered for token in literals) and regex.search(lowered):
        return True
    if custom:
        for ident in set(_IDENT.findall(text)):
            bare = ident.strip("_")
            if any(p.fullmatch(bare) for p in custom):
                return True
    return False


# ----- analysis ----------------------------------------------------------------------------------
class ParseError(Exception):
    """A file that CPython cannot parse (reported as E999, exit 2; never rewritten)."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def parse(text: str) -> ast.Module:
    """CPython's parser; pathological nesting (RecursionError/MemoryError) is a parse error too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are the file owner's business, not ours
            return ast.parse(text)
    except SyntaxError as exc:
        raise ParseError(f"syntax error: {exc.msg}", exc.lineno or 0, exc.offset or 0) from exc
    except (RecursionError, MemoryError) as exc:
        raise ParseError("too deeply nested for Python's parser") from exc
    except ValueError as exc:  # e.g. a NUL byte in the source
        raise ParseError(f"cannot parse: {exc}") from exc


def analyse(text: str, path: str, config: Config, enabled: frozenset[str], view: object | None = None) -> list[Finding]:
    """Findings of one decoded source text, with fix intents (raises ParseError).

    Kernel bodies (Triton, CuTe DSL, ...) are blanked before parsing when that checks out: they
    hold no host tensors, and they are most of a kernel-heavy file (analysis/device.py). ``view``
    (a ``project.view.ProjectView``) answers what other modules of the project say.
    """
    return analyse_module(text, path, config, enabled, view).findings


@dataclass
class Analysis:
    findings: list[Finding]
    summary: object | None = None  # project.summary.ModuleSummary
    consulted: dict[str, str] | None = None
    wanted: set[str] | None = None


def module_context(path: str, view: object | None) -> ModuleContext:
    """The module a file is (dotted name, for relative imports) and its view of the project."""
    if view is None or path in ("-", ""):
        return ModuleContext()
    from .project.layout import module_name, search_bases

    name, is_package = module_name(path)
    return ModuleContext(name, is_package, view.for_module(name, search_bases(path)))  # type: ignore[attr-defined]


def analyse_module(text: str, path: str, config: Config, enabled: frozenset[str], view: object | None = None,
                   summary: bool = False, only_summary: bool = False,
                   summary_names: frozenset[str] | None = None) -> Analysis:
    """Findings (unless ``only_summary``) and, with ``summary``, the module's summary for the index."""
    module = parse_host(text, parse)
    context = module_context(path, view)
    facts = collect(module, analysis_options(config), context)
    source = SourceMap(text)
    findings = [] if only_summary else analyse_facts(facts, module, source, path, config, enabled)
    result = Analysis(findings)
    if summary and context.view is not None:
        from .project.summary import summarise

        result.summary = summarise(facts, context.module, os.path.abspath(path), source, summary_names)
    if context.view is not None:
        result.consulted = dict(context.view.consulted)  # type: ignore[attr-defined]
        result.wanted = set(context.view.wanted)  # type: ignore[attr-defined]
    return result


def analyse_tree(module: ast.Module, text: str, path: str, config: Config, enabled: frozenset[str]) -> list[Finding]:
    """Findings of a parsed module, without the project index."""
    facts = collect(module, analysis_options(config))
    return analyse_facts(facts, module, SourceMap(text), path, config, enabled)


def analyse_facts(facts: ModuleFacts, module: ast.Module, source: SourceMap, path: str, config: Config,
                  enabled: frozenset[str]) -> list[Finding]:
    """One fact-collecting traversal is done; every enabled rule queries it."""
    ctx = RuleContext(module=module, facts=facts, source=source, config=config)
    ignored = per_file_ignored(path, config)
    findings: list[Finding] = []
    for rule_cls in ALL_RULES:
        if rule_cls.code not in enabled or rule_cls.code in ignored:
            continue
        for diag in rule_cls().check(ctx):
            start_line, start_column = source.line_column(diag.span[0])
            if is_suppressed(rule_cls.code, source.comments(start_line)):
                continue
            end_line, end_column = source.line_column(diag.span[1])
            fix = None
            if diag.intents is not None:
                intents = diag.intents()
                if intents:
                    fix = Fix(diag.safe, tuple(sorted(set(intents))), diag.fix_title)
            related = tuple(_related(source, node, message) for node, message in diag.evidence)
            findings.append(Finding(path, start_line, start_column, end_line, end_column, rule_cls.code,
                                    rule_cls.name, diag.message, fix, related))
    findings.sort(key=Finding.sort_key)
    return findings


def _related(source: SourceMap, node: object, message: str) -> Related:
    if isinstance(node, Location):  # evidence in another module of the project
        return Related(node.line, node.column, message, display_path(node.path))
    return Related(*source.line_column(source.start(node)), message)  # type: ignore[arg-type]


def render_fixes(text: str, findings: list[Finding]) -> list[Finding]:
    """Fill in the text edits of every fix through the rewrite engine (one libcst parse of ``text``).

    A fix whose intents libcst cannot apply is dropped (the finding stays, without a fix).
    """
    intents = {i for f in findings if f.fix is not None and not f.fix.edits for i in f.fix.intents}
    if not intents:
        return findings
    from .rewrite.render import render  # libcst is imported only by runs that apply or show fixes

    try:
        edits = render(text, intents)
    except Exception:  # noqa: BLE001 - libcst cannot parse what CPython accepted: no fixes for this file
        edits = {}
    out: list[Finding] = []
    for finding in findings:
        fix = finding.fix
        if fix is not None and not fix.edits:
            rendered = [edits.get(i) for i in fix.intents]
            if all(e is not None for e in rendered):
                fix = replace(fix, edits=tuple(sorted(set(rendered))))  # type: ignore[arg-type]
            else:
                fix = None
            finding = replace(finding, fix=fix)
        out.append(finding)
    return out


def per_file_ignored(path: str, config: Config) -> set[str]:
    if not config.per_file_ignores:
        return set()
    candidates = _match_candidates(path, config.root)
    ignored: set[str] = set()
    for pattern, codes in config.per_file_ignores:
        if any(fnmatch.fnmatch(c, pattern) for c in candidates):
            for code in codes:
                ignored |= expand_selector(code)  # validated when the config was loaded
    return ignored


def _match_candidates(path: str, root: str) -> list[str]:
    absolute = Path(path).resolve()
    out = [PurePosixPath(path).as_posix(), absolute.name]
    try:
        out.append(absolute.relative_to(Path(root).resolve()).as_posix())
    except ValueError:
        pass
    return out


# ----- one file ----------------------------------------------------------------------------------
def decode(data: bytes) -> tuple[str, str]:
    """Source bytes -> (text, encoding); honours a BOM and a PEP 263 coding cookie."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def process_text(text: str, path: str, settings: Settings, view: object | None = None,
                 summary: bool = False, summary_names: frozenset[str] | None = None) -> FileResult:
    """Lint (and with settings.fixing, fix) one decoded text; never raises.

    With the project index on and no ``view`` given, a text that belongs to a file of a project
    (the LSP's open document, ``--stdin-filename``, flake8) is analysed with what the project's
    other modules say, read from disk (``project.index.lint_text``).
    """
    if view is None and settings.project_index and os.path.isfile(path):
        from .project.index import lint_text

        return lint_text(text, path, settings)
    result = FileResult(path=path)
    try:
        if settings.prefilter and not prefilter(text, settings.config):
            return result
        analysis = analyse_module(text, path, settings.config, settings.enabled, view, summary=summary,
                                  summary_names=summary_names)
        findings = analysis.findings
        result.summary, result.consulted, result.wanted = analysis.summary, analysis.consulted, analysis.wanted
        final_text = text
        if settings.fixing and any(_applicable(f, settings) for f in findings):
            new_text, fixed, findings = fix_loop(text, path, settings, findings, view, result.applied)
            if new_text != text:
                result.new_text = final_text = new_text
                result.fixed = fixed
        if settings.render_edits:
            findings = render_fixes(final_text, findings)
        result.findings = findings
    except ParseError as exc:
        result.error = FileError(path, exc.message, exc.line, exc.column)
    except RecursionError:
        result.error = FileError(path, "too deeply nested to analyse (recursion limit); file skipped")
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        result.error = FileError(path, f"internal error: {type(exc).__name__}: {exc} ({tb}); please report it")
    return result


def _applicable(finding: Finding, settings: Settings) -> bool:
    return finding.fix is not None and (finding.fix.safe or settings.unsafe_fixes)


def fix_loop(text: str, path: str, settings: Settings, findings: list[Finding],
             view: object | None = None, applied_out: list[Finding] | None = None) -> tuple[str, int, list[Finding]]:
    """Apply fixes until none applies; every intermediate text must parse. Returns (text, fixed,
    remaining); the findings whose fixes were applied are appended to ``applied_out``."""
    fixed = 0
    for _ in range(MAX_FIX_ITERATIONS):
        applicable = [f for f in render_fixes(text, [f for f in findings if _applicable(f, settings)]) if f.fix]
        if not applicable:
            break
        new_text, chosen = apply_fixes(text, applicable)
        applied = len(chosen)
        if applied_out is not None:
            applied_out.extend(chosen)
        if applied == 0 or new_text == text:
            break
        try:
            parse(new_text)  # a fix that breaks the syntax is a bug: never write it
        except ParseError as exc:
            raise RuntimeError(f"a fix produced invalid Python ({exc.message}); nothing was written") from exc
        text = new_text
        fixed += applied
        findings = analyse(text, path, settings.config, settings.enabled, view)
    return text, fixed, findings


def _read(path: str) -> tuple[str, bytes, str, str] | FileResult:
    """(real path, bytes, text, encoding), or a FileResult carrying the error."""
    try:
        real = os.path.realpath(path)
        with open(real, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if os.path.islink(path) and not os.path.exists(path):
            reason = "broken symbolic link"
        return FileResult(path=path, error=FileError(path, f"cannot read file: {reason}"))
    try:
        text, encoding = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(path=path, error=FileError(path, f"cannot decode file: {exc}"))
    return real, data, text, encoding


def quick_result(path: str, settings: Settings) -> FileResult | None:
    """The answer without parsing, when there is one: read errors, prefiltered files, cache hits."""
    if path.endswith(".ipynb"):
        return None  # notebooks: see _lint_notebook
    read = _read(path)
    if isinstance(read, FileResult):
        return read
    _real, data, text, _encoding = read
    if settings.prefilter and not prefilter(text, settings.config):
        return FileResult(path=path)
    if settings.cache_dir:
        cached = Cache(settings.cache_dir).get(Cache.key(data, settings), path)
        if cached is not None and not (settings.fixing and any(_applicable(f, settings) for f in cached)):
            if settings.render_edits:
                cached = render_fixes(text, cached)
            return FileResult(path=path, findings=cached)
    return None


def process_file(path: str, settings: Settings) -> FileResult:
    """Read, lint, and fix or diff one file. Errors become a FileError; never raises."""
    quick = quick_result(path, settings)
    return quick if quick is not None else _lint_file(path, settings)


def _lint_file(path: str, settings: Settings, view: object | None = None, summary: bool = False,
               text_override: str | None = None, summary_names: frozenset[str] | None = None) -> FileResult:
    """The parsing path of process_file (the caller has tried quick_result already)."""
    if path.endswith(".ipynb"):
        return _lint_notebook(path, settings)
    read = _read(path)
    if isinstance(read, FileResult):
        return read
    real, data, text, encoding = read
    if text_override is not None:
        text = text_override
    result = process_text(text, path, replace(settings, prefilter=False, project_index=view is not None), view, summary,
                          summary_names)
    if result.error is None and result.new_text is not None:
        if settings.diff:
            result.diff = unified_diff(path, text, result.new_text)
        if settings.fix:
            try:
                write_atomic(real, result.new_text.encode(encoding), data)
            except FileChangedError as exc:
                result.error = FileError(path, str(exc))
            except OSError as exc:
                result.error = FileError(path, f"cannot write fixed file: {exc.strerror or exc}")
    if settings.cache_dir and result.error is None and result.new_text is None and view is None:
        Cache(settings.cache_dir).put(Cache.key(data, settings), result.findings)
    return result


def _lint_notebook(path: str, settings: Settings) -> FileResult:
    """A notebook: its code cells analysed as one module (without the project index), findings
    reported per cell, fixes written back into the cells' JSON strings only."""
    from .notebook import Notebook, NotebookError

    try:
        real = os.path.realpath(path)
        with open(real, "rb") as handle:
            data = handle.read()
        notebook = Notebook(data.decode("utf-8"))
    except OSError as exc:
        return FileResult(path=path, error=FileError(path, f"cannot read file: {exc.strerror or exc}"))
    except (UnicodeDecodeError, NotebookError) as exc:
        return FileResult(path=path, error=FileError(path, str(exc) if isinstance(exc, NotebookError)
                                                     else f"cannot decode notebook: {exc}"))
    if not notebook.python or (settings.prefilter and not prefilter(notebook.text, settings.config)):
        return FileResult(path=path)
    key = Cache.key(data, settings, "notebook") if settings.cache_dir else ""
    if key:
        cached = Cache(settings.cache_dir).get(key, path)  # type: ignore[arg-type]
        if cached is not None and not (settings.fixing and any(_applicable(f, settings) for f in cached)):
            return FileResult(path=path, findings=cached)
    result = process_text(notebook.text, path, replace(settings, prefilter=False, project_index=False))
    if result.error is not None:
        cell, line = notebook.locate(result.error.line) if result.error.line else (None, 0)
        message = f"{result.error.message} (cell {cell})" if cell is not None else result.error.message
        result.error = FileError(path, message, line, result.error.column)
        return result
    result.findings = [to_cells(f, notebook) for f in result.findings]
    if result.new_text is not None:
        new_raw = notebook.rewritten(result.new_text)
        result.new_text = new_raw
        if settings.diff:
            result.diff = notebook.diff(path, new_raw)
        if settings.fix:
            try:
                write_atomic(real, new_raw.encode("utf-8"), data)
            except FileChangedError as exc:
                result.error = FileError(path, str(exc))
            except OSError as exc:
                result.error = FileError(path, f"cannot write fixed file: {exc.strerror or exc}")
    elif key:
        Cache(settings.cache_dir).put(key, result.findings)  # type: ignore[arg-type]
    return result


def to_cells(finding: Finding, notebook: object) -> Finding:
    """A finding on the notebook's joined text, with lines counted within its cell."""
    locate = notebook.locate  # type: ignore[attr-defined]
    cell, line = locate(finding.line)
    _end_cell, end_line = locate(finding.end_line)
    related = tuple(replace(r, cell=locate(r.line)[0], line=locate(r.line)[1]) if r.path is None else r
                    for r in finding.related)
    fix = finding.fix
    if fix is not None and fix.edits:
        fix = replace(fix, edits=tuple(
            replace(e, location=(locate(e.location[0])[1], e.location[1]),
                    end_location=(locate(e.end_location[0])[1], e.end_location[1]))
            for e in fix.edits
        ))
    return replace(finding, line=line, end_line=end_line, cell=cell, related=related, fix=fix)


@dataclass
class NoqaOutcome:
    added: int = 0
    diff: str = ""
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why no comment could go there)
    error: FileError | None = None


_NOQA_CODES = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.IGNORECASE)


def add_noqa(path: str, findings: list[Finding], write: bool = True) -> NoqaOutcome:
    """Append ``# noqa: CODE`` to every line with a finding (merging into a ``# noqa: ...`` already
    there); lines that end inside a string or with a backslash continuation are left alone."""
    outcome = NoqaOutcome()
    notebook = None
    try:
        real = os.path.realpath(path)
        with open(real, "rb") as handle:
            data = handle.read()
        if path.endswith(".ipynb"):
            from .notebook import Notebook

            notebook = Notebook(data.decode("utf-8"))
            text, encoding = notebook.text, "utf-8"
        else:
            text, encoding = decode(data)
    except (OSError, ValueError, SyntaxError, LookupError) as exc:
        outcome.error = FileError(path, f"cannot add noqa comments: {exc}")
        return outcome
    codes_by_line: dict[int, set[str]] = {}
    for f in findings:
        line = f.line
        if notebook is not None and f.cell is not None:
            cell = next(c for c in notebook.cells if c.number == f.cell)
            line = cell.first_line + f.line - 1
        codes_by_line.setdefault(line, set()).add(f.code)
    blocked = _lines_without_room_for_a_comment(text)
    source = SourceMap(text)
    edits: list[tuple[int, int, str]] = []
    for line, codes in sorted(codes_by_line.items()):
        if line in blocked:
            outcome.skipped.append((line, blocked[line]))
            continue
        start = source.line_starts[line - 1]
        end = start + len(source.line_text(line))
        existing = _NOQA_CODES.search(text, start, end)
        if existing is not None:
            listed = {c.upper() for c in re.split(r"[\s,]+", existing.group(1)) if c}
            missing = sorted(codes - listed)
            if missing:
                edits.append((existing.end(1), existing.end(1), ", " + ", ".join(missing)))
                outcome.added += 1
            continue
        edits.append((end, end, "  # noqa: " + ", ".join(sorted(codes))))
        outcome.added += 1
    if not edits:
        return outcome
    new_text = text
    for start, end, insert in sorted(edits, reverse=True):
        new_text = new_text[:start] + insert + new_text[end:]
    if notebook is not None:
        new_raw = notebook.rewritten(new_text)
        outcome.diff = notebook.diff(path, new_raw)
        new_bytes = new_raw.encode("utf-8")
    else:
        outcome.diff = unified_diff(path, text, new_text)
        new_bytes = new_text.encode(encoding)
    if write:
        try:
            write_atomic(real, new_bytes, data)
        except (FileChangedError, OSError) as exc:
            outcome.error = FileError(path, f"cannot write noqa comments: {exc}")
    return outcome


def _lines_without_room_for_a_comment(text: str) -> dict[int, str]:
    """Lines where a trailing comment would change the code: inside or at the start of a
    multi-line string, or ending in a backslash continuation."""
    blocked: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                for line in range(tok.start[0], tok.end[0]):
                    blocked[line] = "the line ends inside a multi-line string"
            elif tok.type in (tokenize.FSTRING_START,) if hasattr(tokenize, "FSTRING_START") else ():
                pass
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(text.splitlines(), 1):
        if line.rstrip().endswith("\\") and number not in blocked:
            blocked[number] = "the line ends in a backslash continuation"
    return blocked


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


# ----- many files --------------------------------------------------------------------------------
def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _worker(args: tuple[str, Settings]) -> FileResult:
    return _lint_file(*args)


def run(paths: Sequence[str], settings: Settings, jobs: int) -> list[FileResult]:
    """Process files; results in the order of ``paths``.

    Files answered without parsing (prefiltered, cached, unreadable) are handled here; the rest go
    to a process pool as soon as they are found, largest first, so the workers parse while this
    process is still reading and prefiltering. A run with fewer than ``POOL_MIN_FILES`` files to
    parse (a warm run, one file from pre-commit) never starts a pool.
    """
    if settings.project_index:
        from .project.index import ProjectRun

        notebooks = [p for p in paths if p.endswith(".ipynb")]
        modules = [p for p in paths if not p.endswith(".ipynb")]
        done = {r.path: r for r in ProjectRun(modules, settings, jobs).run()} if modules else {}
        done.update({p: _lint_notebook(p, settings) for p in notebooks})
        return [done[p] for p in paths if p in done]
    results: list[FileResult | None] = [None] * len(paths)
    order = sorted(range(len(paths)), key=lambda i: -_size(paths[i]))
    pending: list[int] = []
    futures: dict[int, Future[FileResult]] = {}
    pool: ProcessPoolExecutor | None = None
    try:
        for i in order:
            quick = quick_result(paths[i], settings)
            if quick is not None:
                results[i] = quick
                continue
            pending.append(i)
            if pool is None and jobs > 1 and len(pending) >= POOL_MIN_FILES:
                pool = ProcessPoolExecutor(max_workers=jobs)
            if pool is not None:
                for j in pending:
                    futures[j] = pool.submit(_worker, (paths[j], settings))
                pending.clear()
        for i in pending:
            results[i] = _lint_file(paths[i], settings)
        for i, future in futures.items():
            results[i] = future.result()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return [r for r in results if r is not None]
