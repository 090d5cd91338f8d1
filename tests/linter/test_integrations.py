"""flake8 plugin, language server, vLLM plugin entry point and the CI recipes."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ..conftest import FAKE_VLLM_MAMBA_UTILS, REPO, make_fake_vllm

BUGGY = (
    "import torch\n\n\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"
)


# ----- flake8 ------------------------------------------------------------------------------------
def test_flake8_reports_what_ptrlint_reports():
    pytest.importorskip("flake8")
    examples = sorted(str(p.relative_to(REPO)) for p in (REPO / "examples").glob("*.py"))
    flake8 = subprocess.run(
        [
            sys.executable,
            "-m",
            "flake8",
            "--select",
            "PTR",
            "--format",
            "%(path)s:%(row)d:%(col)d: %(code)s",
            *examples,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    ptrlint = subprocess.run(
        [sys.executable, "-m", "ptrlint", "--no-cache", "--format", "json", *examples],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    from_flake8 = sorted(line.strip() for line in flake8.stdout.splitlines() if line.strip())
    from_ptrlint = sorted(f"{f['path']}:{f['line']}:{f['column']}: {f['code']}" for f in json.loads(ptrlint.stdout))
    assert from_flake8 == from_ptrlint and len(from_ptrlint) >= 6, flake8.stderr


# ----- language server -----------------------------------------------------------------------------
class LspClient:
    """A minimal JSON-RPC client over the server's stdio (Content-Length framing).

    A thread reads the server's messages into a queue, so a silent or dead server fails the test after
    ``SILENCE`` seconds with what the server wrote on stderr, instead of blocking on a read forever."""

    SILENCE = 20.0  # seconds without the message a test waits for

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ptrlint", "lsp"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0
        self.notifications: list[dict] = []
        self.messages: queue.Queue[dict | None] = queue.Queue()
        threading.Thread(target=self._read_all, daemon=True).start()

    def _read_all(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = 0
            while True:
                line = stdout.readline()
                if not line:
                    self.messages.put(None)  # the server closed its output
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value.strip())
            self.messages.put(json.loads(stdout.read(length)))

    def send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self, waiting_for: str) -> dict:
        try:
            message = self.messages.get(timeout=self.SILENCE)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(
                f"the server said nothing for {self.SILENCE} s while the test waited for "
                f"{waiting_for}; stderr: {self._stderr()}"
            ) from None
        if message is None:
            raise AssertionError(f"the server closed while the test waited for {waiting_for}; stderr: {self._stderr()}")
        return message

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.read(f"the answer to {method}")
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.notifications.append(message)

    def notify(self, method: str, params: dict) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def next_notification(self, method: str) -> dict:
        """The first notification (or server request) ``method`` not yet taken, in the order the server sent them."""
        while True:
            for i, message in enumerate(self.notifications):
                if message.get("method") == method:
                    return self.notifications.pop(i)
            self.notifications.append(self.read(method))

    def wait_diagnostics(self, uri: str) -> list[dict]:
        """The diagnostics of the next ``publishDiagnostics`` for ``uri``."""
        while True:
            message = self.next_notification("textDocument/publishDiagnostics")
            if message["params"]["uri"] == uri:
                return message["params"]["diagnostics"]


def _apply(text: str, edits: list[dict]) -> str:
    lines = text.splitlines(keepends=True)

    def offset(pos: dict) -> int:
        return sum(len(line) for line in lines[: pos["line"]]) + pos["character"]

    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:start] + edit["newText"] + text[end:]
    return text


def test_language_server_diagnoses_and_fixes(tmp_path):
    pytest.importorskip("pygls")
    path = tmp_path / "buggy.py"
    path.write_text(BUGGY)
    uri = path.as_uri()
    client = LspClient(tmp_path)
    try:
        init = client.request(
            "initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}}
        )
        assert init["result"]["capabilities"]["codeActionProvider"]
        client.notify("initialized", {})
        client.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}
        )
        diagnostics = client.wait_diagnostics(uri)
        assert [d["code"] for d in diagnostics] == ["PTR001"]
        diag = diagnostics[0]
        assert diag["range"]["start"]["line"] == 3 and diag["source"] == "ptrlint"
        assert diag["severity"] == 1  # Error, as SARIF and GitHub say
        shown = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": diag["range"]["start"]})
        assert shown["result"]["contents"]["kind"] == "markdown"
        assert shown["result"]["contents"]["value"].startswith("**PTR001** (signed-pointer-dtype)")
        assert "## Why is this bad?" in shown["result"]["contents"]["value"]
        elsewhere = client.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        )
        assert elsewhere["result"] is None
        assert diag["relatedInformation"][0]["message"].startswith("pointer value")
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diag["range"],
                "context": {"diagnostics": [diag]},
            },
        )["result"]
        assert len(actions) == 1 and actions[0]["isPreferred"] is True and actions[0]["kind"] == "quickfix"
        fixed = _apply(BUGGY, actions[0]["edit"]["changes"][uri])
        assert fixed == BUGGY.replace("torch.int64", "torch.uint64")
        client.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}
        )
        assert client.wait_diagnostics(uri) == []
        client.request("shutdown", {})
        client.notify("exit", {})
        assert client.proc.wait(timeout=30) == 0  # a clean shutdown and exit: status 0 (the LSP spec, ruff server)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


# ----- vLLM plugin entry point -------------------------------------------------------------------------
LOADER = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
from importlib.metadata import entry_points
plugins = [e for e in entry_points(group="vllm.general_plugins") if e.name == "ptrlint_guard"]
assert len(plugins) == 1, plugins
for _ in range(3):  # vLLM may load plugins several times
    plugins[0].load()()
from vllm.v1.worker import mamba_utils as mu
print("PATCHED" if getattr(mu, "_ptrlint_guard_installed", False) else "UNTOUCHED")
"""


@pytest.mark.parametrize(
    "guard, expected", [("fast", "PATCHED"), ("strict", "PATCHED"), ("", "UNTOUCHED"), ("off", "UNTOUCHED")]
)
def test_vllm_plugin_entry_point(tmp_path, guard, expected):
    pytest.importorskip("torch")
    make_fake_vllm(tmp_path, FAKE_VLLM_MAMBA_UTILS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PTRLINT_GUARD": guard}
    proc = subprocess.run(
        [sys.executable, "-c", LOADER], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == expected
    assert proc.stdout.count("ptrlint runtime guard installed") == (1 if expected == "PATCHED" else 0)


# ----- CI recipes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["github-actions.yml", "pre-commit-config.yaml"])
def test_ci_recipes_load_and_use_real_flags(name):
    yaml = pytest.importorskip("yaml")
    text = (REPO / "examples" / "ci" / name).read_text()
    data = yaml.safe_load(text)
    assert data
    from ptrlint.cli import build_parser

    parser = build_parser()
    known = {opt for action in parser._actions for opt in action.option_strings}
    for step in data.get("jobs", {}).get("ptrlint", {}).get("steps", []) if isinstance(data, dict) else []:
        for cmd in (
            [shlex.split(step["run"].split(">")[0])] if "run" in step and step["run"].startswith("ptrlint") else []
        ):
            flags = [a for a in cmd[1:] if a.startswith("-")]
            assert set(flags) <= known, flags
            parser.parse_args(cmd[1:])  # exits on an unknown value
    if name.startswith("pre-commit"):
        hooks = {h["id"] for repo in data["repos"] for h in repo["hooks"]}
        offered = set(re.findall(r"- id: (\S+)", (REPO / ".pre-commit-hooks.yaml").read_text()))
        assert hooks <= offered


def test_readme_embeds_the_ci_recipes():
    readme = (REPO / "README.md").read_text()
    for name in ("github-actions.yml", "pre-commit-config.yaml"):
        body = (REPO / "examples" / "ci" / name).read_text().strip()
        assert body in readme, f"README must carry examples/ci/{name} verbatim"


def test_language_server_fix_all_pull_diagnostics_and_config_reload(tmp_path):
    pytest.importorskip("pygls")
    two = BUGGY + "more = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](more)\n"
    path = tmp_path / "buggy.py"
    path.write_text(two)
    uri = path.as_uri()
    client = LspClient(tmp_path)
    try:
        init = client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": tmp_path.as_uri(),
                "capabilities": {
                    "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}},
                },
            },
        )
        capabilities = init["result"]["capabilities"]
        assert "source.fixAll.ptrlint" in capabilities["codeActionProvider"]["codeActionKinds"]
        assert capabilities["diagnosticProvider"]["identifier"] == "ptrlint"
        client.notify("initialized", {})
        client.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": two}}
        )
        assert [d["code"] for d in client.wait_diagnostics(uri)] == ["PTR001", "PTR001"]  # pushed on open
        pulled = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})["result"]
        assert pulled["kind"] == "full" and [d["code"] for d in pulled["items"]] == ["PTR001", "PTR001"]
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["source.fixAll"]},
            },
        )["result"]
        assert [a["kind"] for a in actions] == ["source.fixAll.ptrlint"]
        assert _apply(two, actions[0]["edit"]["changes"][uri]) == two.replace("torch.int64", "torch.uint64")
        assert path.read_text() == two  # the client applies the edit; the server writes nothing
        # the server asked to watch pyproject.toml; a new ignore takes effect without a restart
        registration = client.next_notification("client/registerCapability")
        client.send({"jsonrpc": "2.0", "id": registration["id"], "result": None})
        watchers = registration["params"]["registrations"][0]["registerOptions"]["watchers"]
        assert watchers[0]["globPattern"] == "**/pyproject.toml"
        (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
        client.notify(
            "workspace/didChangeWatchedFiles", {"changes": [{"uri": (tmp_path / "pyproject.toml").as_uri(), "type": 1}]}
        )
        assert client.wait_diagnostics(uri) == []  # the next push after the change: PTR001 is ignored now
        client.request("shutdown", {})
        client.notify("exit", {})
        client.proc.wait(timeout=30)
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


def test_language_server_checks_notebooks_cell_by_cell(tmp_path):
    """notebookDocument/didOpen (LSP 3.17 notebook sync): the code cells are linted as one module and
    each finding is published on its cell's document, at the cell's own line."""
    pytest.importorskip("pygls")
    notebook_uri = (tmp_path / "tables.ipynb").as_uri()
    cells = [f"{notebook_uri}#cell1", f"{notebook_uri}#cell2"]
    client = LspClient(tmp_path)
    try:
        init = client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": tmp_path.as_uri(),
                "capabilities": {"notebookDocument": {"synchronization": {}}},
            },
        )
        assert init["result"]["capabilities"]["notebookDocumentSync"]["notebookSelector"]
        client.notify("initialized", {})
        client.notify(
            "notebookDocument/didOpen",
            {
                "notebookDocument": {
                    "uri": notebook_uri,
                    "notebookType": "jupyter-notebook",
                    "version": 1,
                    "cells": [{"kind": 2, "document": cells[0]}, {"kind": 2, "document": cells[1]}],
                },
                "cellTextDocuments": [
                    {"uri": cells[0], "languageId": "python", "version": 1, "text": "import torch\n"},
                    {
                        "uri": cells[1],
                        "languageId": "python",
                        "version": 1,
                        "text": BUGGY.replace("import torch\n", ""),
                    },
                ],
            },
        )
        by_cell = {}
        while len(by_cell) < 2:
            message = client.next_notification("textDocument/publishDiagnostics")
            by_cell[message["params"]["uri"]] = message["params"]["diagnostics"]
        assert by_cell[cells[0]] == []
        assert [(d["code"], d["severity"]) for d in by_cell[cells[1]]] == [("PTR001", 1)]
        expected_line = (
            BUGGY.replace("import torch\n", "")
            .splitlines()
            .index(next(line for line in BUGGY.splitlines() if "int64" in line))
        )
        assert by_cell[cells[1]][0]["range"]["start"]["line"] == expected_line
        client.request("shutdown", {})
        client.notify("exit", {})
        assert client.proc.wait(timeout=30) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
