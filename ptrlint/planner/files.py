"""One file on disk: read it, answer from the cache or the prefilter when that is enough, lint it
through the engine, and write the fix atomically or show it. Notebooks are linted by their code
cells, with findings reported per cell."""

from __future__ import annotations

import ast
import hashlib
import os
from dataclasses import replace
from typing import TYPE_CHECKING

from ..cache import Cache
from ..findings import DECODE_ERROR, INTERNAL_ERROR, IO_ERROR, SYNTAX_ERROR, FileError, FileResult, Finding, Fix
from ..notebook import Notebook, NotebookError
from ..prefilter import prefilter
from ..rewrite.apply import FileChangedError, write_atomic
from ..settings import Settings
from ..sources import read_bytes, read_source, unified_diff

if TYPE_CHECKING:
    from ..engine import ProjectLink


def quick_result(path: str, settings: Settings) -> FileResult | None:
    """The answer without parsing, when there is one: read errors, prefiltered files, cache hits."""
    if path.endswith(".ipynb"):
        return None  # notebooks: see lint_notebook
    read = read_source(path)
    if isinstance(read, FileResult):
        return read
    _real, data, text, _encoding = read
    if settings.prefilter and not prefilter(text, settings.config, settings.enabled):
        return FileResult(path=path)
    if settings.cache_dir:
        cached = Cache(settings.cache_dir).get(Cache.key(data, settings), path)
        if cached is not None and not (settings.fixing and any(settings.applies(f) for f in cached)):
            if settings.render_edits:
                from .. import engine  # libcst renders the edits

                cached = engine.render_fixes(text, cached)
            return FileResult(path=path, findings=cached)
    return None


def source_digest(text: str) -> str:
    """What tells one text from another (a fix reuses the index's findings only for the text they came from)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def process_file(path: str, settings: Settings) -> FileResult:
    """Read, lint, and fix or diff one file. Errors become a FileError; never raises."""
    quick = quick_result(path, settings)
    return quick if quick is not None else lint_file(path, settings)


def lint_file(
    path: str,
    settings: Settings,
    link: ProjectLink | None = None,
    text_override: str | None = None,
    tree: ast.Module | None = None,
    findings: list[Finding] | None = None,
    findings_digest: str = "",
) -> FileResult:
    """The parsing path of process_file (the caller has tried quick_result already): lint, then
    write the fix atomically (``--fix``) or show it (``--diff``). ``link``: the file's place in an
    index run (its results are cached by the run, not here). ``tree``: ``text_override`` parsed
    already (planner/workers.py parses ahead); without the text it came from, it is not used.
    ``findings``: the file analysed already by the index run, from a text of ``findings_digest``
    (only its fixes are left to do)."""
    if path.endswith(".ipynb"):
        return lint_notebook(path, settings)
    read = read_source(path)
    if isinstance(read, FileResult):
        return read
    real, data, text, encoding = read
    if text_override is not None:
        text = text_override
    digest = source_digest(text) if link is not None else ""
    if findings is not None and digest != findings_digest:
        findings = None  # the file changed since the index analysed it: analyse it again
    from .. import engine  # the analysis and the rules: imported when a module is analysed

    result = engine.process_text(
        text,
        path,
        replace(settings, prefilter=False, project_index=link is not None),
        link,
        tree if text_override is not None else None,
        findings,
    )
    result.source_digest = digest
    if result.error is None and result.new_text is not None:
        if settings.diff:
            result.diff = unified_diff(path, text, result.new_text)
        elif settings.fix:  # a preview (--diff) never writes
            _keep_if_unwritten(result, _write_fixed(path, real, result.new_text.encode(encoding), data, settings))
    if settings.cache_dir and result.error is None and result.new_text is None and link is None:
        Cache(settings.cache_dir).put(Cache.key(data, settings), result.findings)
    return result


def lint_notebook(path: str, settings: Settings) -> FileResult:
    """A notebook: its code cells analysed as one module (without the project index), findings
    reported per cell, fixes written back into the cells' JSON strings only. Never raises: a notebook
    ptrlint cannot handle is one error result, and the others are linted."""
    try:
        return _lint_notebook(path, settings)
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run
        return FileResult(
            path=path,
            error=FileError(
                path,
                f"internal error on this notebook: {type(exc).__name__}: {exc}; please report it",
                code=INTERNAL_ERROR,
            ),
        )


def _lint_notebook(path: str, settings: Settings) -> FileResult:
    try:
        real = os.path.realpath(path)
        data = read_bytes(real)
        notebook = Notebook(data.decode("utf-8"))
    except OSError as exc:
        return FileResult(path=path, error=FileError(path, f"cannot read file: {exc.strerror or exc}", code=IO_ERROR))
    except (UnicodeDecodeError, NotebookError) as exc:
        return FileResult(
            path=path,
            error=FileError(path, str(exc), code=SYNTAX_ERROR)
            if isinstance(exc, NotebookError)
            else FileError(path, f"cannot decode notebook: {exc}", code=DECODE_ERROR),
        )
    if not notebook.python or (settings.prefilter and not prefilter(notebook.text, settings.config, settings.enabled)):
        return FileResult(path=path)
    key = Cache.key(data, settings, "notebook") if settings.cache_dir else ""
    if key:
        cached = Cache(settings.cache_dir).get(key, path)  # type: ignore[arg-type]
        unrendered = settings.render_edits and any(f.fix is not None and not f.fix.edits for f in cached or ())
        if cached is not None and not unrendered and not (settings.fixing and any(settings.applies(f) for f in cached)):
            return FileResult(path=path, findings=cached)  # (a text run caches fixes without their edits)
    from .. import engine  # the analysis and the rules: imported when a module is analysed

    result = engine.process_text(notebook.text, path, replace(settings, prefilter=False, project_index=False))
    if result.error is not None:
        cell, line = notebook.locate(result.error.line) if result.error.line else (None, 0)
        message = f"{result.error.message} (cell {cell})" if cell is not None else result.error.message
        result.error = FileError(path, message, line, result.error.column, result.error.code)
        return result
    result.findings = [to_cells(f, notebook) for f in result.findings]
    result.applied = [to_cells(f, notebook) for f in result.applied]  # the fix summaries name cells too
    if result.new_text is not None:
        new_raw = notebook.rewritten(result.new_text)
        result.new_text = new_raw
        if settings.diff:
            result.diff = notebook.diff(path, new_raw)
        elif settings.fix:  # a preview (--diff) never writes
            _keep_if_unwritten(result, _write_fixed(path, real, new_raw.encode("utf-8"), data, settings))
    elif key:
        Cache(settings.cache_dir).put(key, result.findings)  # type: ignore[arg-type]
    return result


def _keep_if_unwritten(result: FileResult, error: FileError | None) -> None:
    """A fix that could not be written fixed nothing: its findings stay in the report, beside the reason."""
    if error is None:
        return
    result.error = error
    result.findings = sorted([*result.applied, *result.findings], key=Finding.sort_key)
    result.applied, result.fixed, result.new_text = [], 0, None


def _write_fixed(path: str, real: str, new: bytes, original: bytes, settings: Settings) -> FileError | None:
    """Write a fixed file atomically; the error to report instead (E902) when it cannot be."""
    if not settings.may_write(real):
        return FileError(
            path,
            f"not fixed: the file resolves to {real}, outside the folders given (a symbolic link "
            "out of the tree); ptrlint writes only inside them",
            code=IO_ERROR,
        )
    try:
        write_atomic(real, new, original)
    except FileChangedError as exc:
        return FileError(path, str(exc), code=IO_ERROR)
    except OSError as exc:
        return FileError(path, f"cannot write fixed file: {exc.strerror or exc}", code=IO_ERROR)
    return None


def to_cells(finding: Finding, notebook: object) -> Finding:
    """A finding on the notebook's joined text, with lines counted within its cell."""
    locate = notebook.locate  # type: ignore[attr-defined]
    cell, line = locate(finding.line)
    _end_cell, end_line = locate(finding.end_line)
    related = tuple(
        replace(r, cell=locate(r.line)[0], line=locate(r.line)[1]) if r.path is None else r for r in finding.related
    )

    def in_cells(fix: Fix) -> Fix:
        return replace(
            fix,
            edits=tuple(
                replace(
                    e,
                    location=(locate(e.location[0])[1], e.location[1]),
                    end_location=(locate(e.end_location[0])[1], e.end_location[1]),
                )
                for e in fix.edits
            ),
            alternatives=tuple(in_cells(a) for a in fix.alternatives),
        )

    fix = in_cells(finding.fix) if finding.fix is not None else None
    raw_line = notebook.raw_line(cell, line)  # type: ignore[attr-defined]
    return replace(finding, line=line, end_line=end_line, cell=cell, related=related, fix=fix, raw_line=raw_line)
