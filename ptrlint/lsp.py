"""``ptrlint lsp``: a language server (stdio) with diagnostics and quick fixes. Needs pygls (extra ``lsp``).

Diagnostics are published on open, save and (debounced) change, using the same configuration
resolution as the CLI (the nearest pyproject.toml with [tool.ptrlint] above the file). The
evidence becomes related information; each fix is offered as a code action (safe fixes as
preferred quick fixes, unsafe ones labelled), and so is each unsafe alternative a fix offers.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer
    from pygls.uris import from_fs_path, to_fs_path
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise SystemExit("ptrlint lsp needs pygls: pip install 'ptrlint[lsp]'") from exc

if TYPE_CHECKING:
    from pygls.workspace import PositionCodec

from . import __version__
from .config import Config, ConfigError, resolve_config
from .discovery import excluded_reason
from .engine import render_fixes
from .findings import Finding
from .planner import lint_text
from .settings import Settings, select_codes

DEBOUNCE_SECONDS = 0.25
SOURCE = "ptrlint"


NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithNotebook(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        ),
    ],
    save=True,
)


class PtrlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ptrlint", __version__, notebook_document_sync=NOTEBOOK_SYNC)
        self.findings: dict[str, list[Finding]] = {}
        self.texts: dict[str, str] = {}  # the text each document's findings were computed on
        self.versions: dict[str, int] = {}
        self._configs: dict[str, tuple[Config, frozenset[str]]] = {}

    def settings_for(self, path: str) -> Settings:
        folder = str(Path(path).parent)
        if folder not in self._configs:
            config = resolve_config(None, False, Path(folder) if Path(folder).exists() else Path("."))
            enabled = select_codes(config.select, config.extend_select, config.ignore)
            self._configs[folder] = (config, enabled)
        config, enabled = self._configs[folder]
        return Settings(config=config, enabled=enabled)


server = PtrlintServer()


def _position(lines: Sequence[str], line: int, column: int, codec: PositionCodec) -> types.Position:
    """1-based (line, code-point column) -> LSP position in the client's units (UTF-16 by default)."""
    return codec.position_to_client_units(lines, types.Position(line=max(0, line - 1), character=max(0, column - 1)))


def _range(lines: Sequence[str], start: tuple[int, int], end: tuple[int, int], codec: PositionCodec) -> types.Range:
    return types.Range(start=_position(lines, *start, codec), end=_position(lines, *end, codec))


def _related_location(r: Any, uri: str, lines: Sequence[str], codec: PositionCodec) -> types.Location:
    """Evidence in this document, or in another module (found through the project index)."""
    if r.path is None:
        return types.Location(uri=uri, range=_range(lines, (r.line, r.column), (r.line, r.column), codec))
    point = types.Position(line=max(0, r.line - 1), character=max(0, r.column - 1))  # code points; close enough
    return types.Location(
        uri=from_fs_path(str(Path(r.path).resolve())) or r.path, range=types.Range(start=point, end=point)
    )


def diagnostics_for(ls: PtrlintServer, uri: str) -> list[types.Diagnostic] | None:
    """Lint one open document (remembering its findings for code actions); None on a config error."""
    document = ls.workspace.get_text_document(uri)
    path = to_fs_path(uri) or uri
    try:
        settings = ls.settings_for(path)
    except ConfigError as exc:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"ptrlint: {exc}"))
        return None
    if os.path.isfile(path) and excluded_reason(path, settings.config) is not None:
        ls.findings[uri] = []  # excluded or git-ignored: as the command line skips it, so does the editor
        return []
    result = lint_text(document.source, path, settings)
    findings = result.findings if result.error is None else []
    ls.findings[uri] = findings
    ls.texts[uri] = document.source
    lines = document.lines
    codec = document.position_codec
    diagnostics = [
        types.Diagnostic(
            range=_range(lines, (f.line, f.column), (f.end_line, f.end_column), codec),
            message=f.message,
            severity=_severity(f),  # as SARIF's level and GitHub's ::error / ::notice say
            code=f.code,
            source=SOURCE,
            data={"index": i},
            related_information=[
                types.DiagnosticRelatedInformation(location=_related_location(r, uri, lines, codec), message=r.message)
                for r in f.related
            ],
        )
        for i, f in enumerate(findings)
    ]
    if result.error is not None:
        diagnostics.append(
            types.Diagnostic(
                range=_range(
                    lines,
                    (max(1, result.error.line), max(1, result.error.column)),
                    (max(1, result.error.line), max(1, result.error.column)),
                    codec,
                ),
                message=result.error.message,
                severity=types.DiagnosticSeverity.Error,
                code=result.error.code,
                source=SOURCE,
            )
        )
    return diagnostics


def lint(ls: PtrlintServer, uri: str) -> None:
    """Push diagnostics (for clients that do not pull them)."""
    diagnostics = diagnostics_for(ls, uri)
    if diagnostics is None:
        return
    document = ls.workspace.get_text_document(uri)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version)
    )


@server.feature(
    types.TEXT_DOCUMENT_DIAGNOSTIC,
    types.DiagnosticOptions(identifier=SOURCE, inter_file_dependencies=True, workspace_diagnostics=False),
)
def pull_diagnostics(
    ls: PtrlintServer, params: types.DocumentDiagnosticParams
) -> types.RelatedFullDocumentDiagnosticReport:
    """``textDocument/diagnostic``: the client asks when it wants them (LSP 3.17 pull model)."""
    return types.RelatedFullDocumentDiagnosticReport(items=diagnostics_for(ls, params.text_document.uri) or [])


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files_changed(ls: PtrlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    """A ``pyproject.toml`` changed: read the configuration again and lint every open document."""
    if not any(change.uri.endswith("pyproject.toml") for change in params.changes):
        return
    ls._configs.clear()
    for uri in list(ls.workspace.text_documents):
        lint(ls, uri)


@server.feature(types.INITIALIZED)
def initialized(ls: PtrlintServer, params: types.InitializedParams) -> None:
    """Ask the client to tell us about pyproject.toml changes, where it can watch files for us."""
    capabilities = ls.client_capabilities.workspace
    watch = capabilities.did_change_watched_files if capabilities else None
    if watch is None or not watch.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
    )
    ls.client_register_capability(
        types.RegistrationParams(
            registrations=[
                types.Registration(
                    id="ptrlint-pyproject", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
                )
            ]
        )
    )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: PtrlintServer, params: types.DidOpenTextDocumentParams) -> None:
    lint(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: PtrlintServer, params: types.DidSaveTextDocumentParams) -> None:
    ls._configs.clear()  # a saved pyproject.toml may have changed the configuration
    lint(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: PtrlintServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    version = params.text_document.version
    ls.versions[uri] = version
    await asyncio.sleep(DEBOUNCE_SECONDS)
    if ls.versions.get(uri) == version:  # no newer edit arrived meanwhile
        lint(ls, uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: PtrlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.findings.pop(uri, None)
    ls.texts.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


FIX_ALL = "source.fixAll.ptrlint"


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False),
)
def code_action(ls: PtrlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    lines, codec = document.lines, document.position_codec
    actions: list[types.CodeAction] = []
    wanted = params.range
    only = params.context.only or []
    if any(FIX_ALL.startswith(kind) for kind in only if kind.startswith("source")):  # `source.fixAll` on save, too
        fix_all = _fix_all(ls, uri)
        return [fix_all] if fix_all is not None else []
    if only and not any(kind.startswith(types.CodeActionKind.QuickFix) for kind in only):
        return actions
    if ls.texts.get(uri) != document.source:
        return actions  # edited since the last lint: fresh diagnostics (and fixes) follow the debounce
    for diagnostic in params.context.diagnostics:
        if diagnostic.source != SOURCE or not isinstance(diagnostic.data, dict):
            continue
        findings = ls.findings.get(uri, [])
        index = diagnostic.data.get("index")
        if not isinstance(index, int) or index >= len(findings):
            continue
        finding = findings[index]
        if finding.fix is None or not _overlaps(diagnostic.range, wanted):
            continue
        finding = render_fixes(document.source, [finding])[0]  # the rewrite engine runs only here
        if finding.fix is None:
            continue
        for fix in (finding.fix, *finding.fix.alternatives):  # the fix, then the unsafe alternatives it offers
            edits = [
                types.TextEdit(range=_range(lines, e.location, e.end_location, codec), new_text=e.text)
                for e in fix.edits
            ]
            title = f"{finding.code}: {fix.title or 'apply fix'}" + ("" if fix.safe else " (unsafe)")
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=fix.safe and fix is finding.fix,
                    edit=types.WorkspaceEdit(changes={uri: edits}),
                )
            )
    return actions


def _fix_all(ls: PtrlintServer, uri: str) -> types.CodeAction | None:
    """Every safe fix of the document at once (``source.fixAll.ptrlint``): one edit over the text."""
    document = ls.workspace.get_text_document(uri)
    path = to_fs_path(uri) or uri
    try:
        settings = replace(ls.settings_for(path), diff=True)  # fixes computed, never written: the client applies them
    except ConfigError:
        return None
    if os.path.isfile(path) and excluded_reason(path, settings.config) is not None:
        return None
    result = lint_text(document.source, path, settings)
    if result.error is not None or result.new_text is None or result.new_text == document.source:
        return None
    lines, codec = document.lines, document.position_codec
    end_line = len(lines)
    whole = types.Range(
        start=types.Position(line=0, character=0),
        end=codec.position_to_client_units(lines, types.Position(line=end_line, character=0)),
    )
    return types.CodeAction(
        title=f"ptrlint: fix all safe fixes ({result.fixed})",
        kind=FIX_ALL,
        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=whole, new_text=result.new_text)]}),
    )


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: PtrlintServer, params: types.HoverParams) -> types.Hover | None:
    """Over a finding: its message and its rule's documentation (what ``ptrlint rule CODE`` prints)."""
    from .rules import RULES_BY_CODE

    uri = params.text_document.uri
    findings = ls.findings.get(uri)
    if not findings:
        return None
    document = ls.workspace.get_text_document(uri)
    lines, codec = document.lines, document.position_codec
    here = types.Range(start=params.position, end=params.position)
    parts: list[str] = []
    for f in findings:
        span = _range(lines, (f.line, f.column), (f.end_line, f.end_column), codec)
        rule = RULES_BY_CODE.get(f.code)
        if _overlaps(span, here) and rule is not None:
            parts.append(f"**{f.code}** ({rule.name}): {f.message}\n\n{rule.doc.strip()}")
    if not parts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))


def lint_notebook(ls: PtrlintServer, notebook_uri: str) -> None:
    """A notebook: its code cells linted as one module (as on the command line: magics skipped,
    `# noqa` in cells), each finding published on its cell's document."""
    import json

    from .notebook import Notebook
    from .planner.files import to_cells

    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if notebook is None:
        return
    cells = [c for c in notebook.cells if c.kind == types.NotebookCellKind.Code]
    sources = [ls.workspace.get_text_document(c.document).source for c in cells]
    data = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": text} for text in sources],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = to_fs_path(notebook_uri) or notebook_uri
    try:
        settings = ls.settings_for(path)
    except ConfigError as exc:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"ptrlint: {exc}"))
        return
    joined = Notebook(json.dumps(data))
    result = lint_text(joined.text, path, replace(settings, project_index=False))
    by_cell: dict[int, list[types.Diagnostic]] = {number: [] for number in range(1, len(cells) + 1)}
    for finding in (to_cells(f, joined) for f in result.findings):
        cell_number = finding.cell or 1
        document = ls.workspace.get_text_document(cells[cell_number - 1].document)
        by_cell[cell_number].append(
            types.Diagnostic(
                range=_range(
                    document.lines,
                    (finding.line, finding.column),
                    (finding.end_line, finding.end_column),
                    document.position_codec,
                ),
                message=finding.message,
                severity=_severity(finding),
                code=finding.code,
                source=SOURCE,
            )
        )
    for number, diagnostics in by_cell.items():
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cells[number - 1].document, diagnostics=diagnostics)
        )


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_opened(ls: PtrlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    lint_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_changed(ls: PtrlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    lint_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_saved(ls: PtrlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls._configs.clear()
    lint_notebook(ls, params.notebook_document.uri)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _severity(finding: Finding) -> types.DiagnosticSeverity:
    """A note (a doubt) is information; a failure ptrlint can name is an error."""
    return types.DiagnosticSeverity.Information if finding.severity == "note" else types.DiagnosticSeverity.Error


def main() -> int:
    server.start_io()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
