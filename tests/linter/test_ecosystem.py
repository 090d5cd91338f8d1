"""Notebooks, --add-noqa, per-folder configuration and the full output format, through the real CLI."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks" / "tables.ipynb"
BUGGY = "import torch\n\n\ndef table(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"


# ----- notebooks -------------------------------------------------------------------------------------
@pytest.fixture
def notebook(tmp_path):
    path = tmp_path / "tables.ipynb"
    shutil.copyfile(NOTEBOOK, path)
    return path


def test_notebook_is_linted_per_cell_with_magics_skipped_and_noqa_honoured(ptrlint, notebook):
    result = ptrlint("--no-cache", "--output-format", "concise", str(notebook.parent))
    assert result.code == 1
    lines = [line for line in result.out.splitlines() if "PTR" in line]
    assert (
        len(lines) == 1
    )  # the second table carries a noqa comment for PTR002; %-magics and the %%bash cell are skipped
    assert lines[0].startswith(f"{notebook}:cell 3:2:59: PTR001 ")
    data = json.loads(ptrlint("--no-cache", "--format", "json", str(notebook)).out)
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in data] == [(3, 2, 59, "PTR001")]
    assert data[0]["related"][0]["cell"] == 3


def test_notebook_fix_rewrites_only_the_changed_cell_string(ptrlint, notebook):
    before = notebook.read_text()
    result = ptrlint("--no-cache", "--fix", str(notebook))
    assert result.code == 0
    after = notebook.read_text()
    assert after == before.replace('dtype=torch.int64)\\n"', 'dtype=torch.uint64)\\n"')
    assert json.loads(after)["cells"][2]["outputs"] == json.loads(before)["cells"][2]["outputs"]


def test_notebook_diff_shows_cells_and_changes_nothing(ptrlint, notebook):
    before = notebook.read_bytes()
    result = ptrlint("--no-cache", "--diff", str(notebook))
    assert result.code == 1
    assert f"--- a/{notebook}:cell 3" in result.out and "+ptrs = torch.tensor" in result.out
    assert notebook.read_bytes() == before


def test_invalid_notebook_json_is_a_per_file_error(ptrlint, tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    (tmp_path / "ok.py").write_text(BUGGY)
    result = ptrlint("--no-cache", "--output-format", "concise", str(tmp_path))
    assert result.code == 2
    assert "broken.ipynb: E999 invalid notebook JSON" in result.out and "ok.py:5:" in result.out


# ----- --add-noqa --------------------------------------------------------------------------------------
def test_add_noqa_is_idempotent_merges_and_spares_multiline_strings(ptrlint, tmp_path):
    source = textwrap.dedent("""\
        import torch


        def tables(ts):
            a = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
            b = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)  # noqa: E501
            c = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)  # a comment
            return a, b, c
        """)
    path = tmp_path / "m.py"
    path.write_text(source)
    shown = ptrlint("--no-cache", "--add-noqa", "--diff", str(path))
    assert shown.code == 1 and "+    a = torch.tensor" in shown.out and path.read_text() == source
    assert ptrlint("--no-cache", "--add-noqa", str(path)).code == 0
    text = path.read_text()
    assert "dtype=torch.int64)  # noqa: PTR001\n" in text
    assert "# noqa: E501, PTR001\n" in text
    assert "# a comment  # noqa: PTR001\n" in text
    assert ptrlint("--no-cache", str(path)).code == 0  # every finding is now suppressed
    ptrlint("--no-cache", "--add-noqa", str(path))
    assert path.read_text() == text  # idempotent


def test_add_noqa_never_writes_into_a_multiline_string(ptrlint, tmp_path):
    source = (
        'import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64, layout="""\nstrided""")\n'
    )
    path = tmp_path / "m.py"
    path.write_text(source)
    result = ptrlint("--no-cache", "--add-noqa", str(path))
    assert "cannot add a noqa comment (the line ends inside a multi-line string)" in result.err
    assert path.read_text() == source


def test_add_noqa_in_a_notebook_cell(ptrlint, notebook):
    assert ptrlint("--no-cache", "--add-noqa", str(notebook)).code == 0
    cell = json.loads(notebook.read_text())["cells"][2]["source"]
    assert cell[1].endswith("dtype=torch.int64)  # noqa: PTR001\n")
    assert ptrlint("--no-cache", str(notebook)).code == 0


# ----- configuration per folder --------------------------------------------------------------------------
def test_nested_pyproject_files_each_configure_their_folder(ptrlint, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptrlint]\nignore = []\n")
    (tmp_path / "a.py").write_text(BUGGY)
    sub = tmp_path / "legacy"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
    (sub / "b.py").write_text(BUGGY)
    plain = sub / "plain"
    plain.mkdir()
    (plain / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.ptrlint]: the one above applies
    (plain / "c.py").write_text(BUGGY)
    found = {f["path"] for f in json.loads(ptrlint("--no-cache", "--format", "json", ".", cwd=tmp_path).out)}
    assert found == {"a.py"}
    assert json.loads(ptrlint("--no-cache", "--format", "json", "legacy/b.py", cwd=tmp_path).out) == []
    isolated = {
        f["path"] for f in json.loads(ptrlint("--no-cache", "--isolated", "--format", "json", ".", cwd=tmp_path).out)
    }
    assert isolated == {"a.py", "legacy/b.py", "legacy/plain/c.py"}


def test_cache_follows_each_files_configuration(ptrlint, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptrlint]\nignore = []\n")
    (tmp_path / "a.py").write_text(BUGGY)
    assert len(json.loads(ptrlint("--format", "json", ".", cwd=tmp_path).out)) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
    assert json.loads(ptrlint("--format", "json", ".", cwd=tmp_path).out) == []


# ----- output formats --------------------------------------------------------------------------------------
FULL = """\
m.py:5:59: PTR001 [*] this buffer holds memory addresses but is created as signed `torch.int64`: addresses >= 2**63 overflow or turn negative; use an unsigned 64-bit dtype (uint64)
  |
4 | def table(ts):
5 |     return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
  |                                                           ^^^^^^^^^^^ PTR001
  |
  = help: Create the table unsigned and hand on its int64 bits (`.view(torch.int64)`): line 5: returned by `table()`, which nothing in the project calls: replace `int64` with `uint64`; insert `.view(torch.int64)`
  = or: Use an unsigned 64-bit dtype (unsafe: line 5: returned by `table()`, which nothing in the project calls): replace `int64` with `uint64`

Found 1 finding.
[*] 1 fixable with `ptrlint --fix`.
"""


def test_full_output_snapshot_plain_and_coloured(ptrlint, tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(BUGGY)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    assert ptrlint("--no-cache", "--output-format", "full", "m.py", cwd=tmp_path).out == FULL
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = ptrlint("--no-cache", "--output-format", "full", "m.py", cwd=tmp_path).out
    assert "\x1b[1;31mPTR001\x1b[0m" in coloured and "\x1b[" not in FULL
    import re

    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == FULL


def test_concise_is_the_default_off_a_terminal_and_format_is_an_alias(ptrlint, tmp_path):
    (tmp_path / "m.py").write_text(BUGGY)
    default = ptrlint("--no-cache", "m.py", cwd=tmp_path).out
    assert default.splitlines()[0].startswith("m.py:5:59: PTR001 ") and "|" not in default
    assert ptrlint("--no-cache", "--format", "concise", "m.py", cwd=tmp_path).out == default
    assert ptrlint("--no-cache", "--format", "text", "m.py", cwd=tmp_path).out == default


def test_notebook_fix_edits_survive_the_cache_in_every_format(ptrlint, notebook):
    """A text run fills the cache without the fixes' edits; a JSON run after it still gets them."""
    folder = notebook.parent
    ptrlint("--output-format", "concise", str(notebook), cwd=folder)
    data = json.loads(ptrlint("--output-format", "json", str(notebook), cwd=folder).out)
    assert data and all(f["fix"]["edits"] for f in data if f["fix"] is not None)
    assert data == json.loads(ptrlint("--no-cache", "--output-format", "json", str(notebook), cwd=folder).out)


def test_notebook_fix_summary_names_cells(ptrlint, notebook):
    result = ptrlint("--no-cache", "--diff", "--output-format", "concise", str(notebook))
    assert f"{notebook}:cell 3:2:59: PTR001" in result.err
