"""Files that break naive tools: odd encodings and layout, broken files, concurrency, races."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from ptrlint.config import Config
from ptrlint.engine import Settings, select_codes
from ptrlint.planner import process_file

from ..conftest import run_cli

ALL = select_codes(["ALL"], [], [])
BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"
FIXED = BUGGY.replace("torch.int64", "torch.uint64")


def fix_file(path: Path) -> None:
    result = process_file(str(path), Settings(Config(), ALL, fix=True))
    assert result.error is None, result.error


@pytest.mark.parametrize(
    "before, after",
    [
        (BUGGY.replace("\n", "\r").encode(), FIXED.replace("\n", "\r").encode()),  # CR-only (old Mac)
        (BUGGY.replace("\n", "\r\n").encode(), FIXED.replace("\n", "\r\n").encode()),
        (b"\xef\xbb\xbf" + BUGGY.encode(), b"\xef\xbb\xbf" + FIXED.encode()),
        (
            ("# -*- coding: latin-1 -*-\n# \xe9\n" + BUGGY).encode("latin-1"),
            ("# -*- coding: latin-1 -*-\n# \xe9\n" + FIXED).encode("latin-1"),
        ),
        (BUGGY.replace("ptrs =", "\x0cptrs =").encode(), FIXED.replace("ptrs =", "\x0cptrs =").encode()),  # form feed
        (
            b"import torch\nif x:\n\tptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n\tcopy_kernel[(1,)](ptrs)\n",
            b"import torch\nif x:\n\tptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.uint64)\n\tcopy_kernel[(1,)](ptrs)\n",
        ),  # tabs
        (BUGGY.rstrip("\n").encode(), FIXED.rstrip("\n").encode()),  # no final newline
        (("x = '" + "a" * 200_000 + "'\n" + BUGGY).encode(), ("x = '" + "a" * 200_000 + "'\n" + FIXED).encode()),
    ],
    ids=["cr", "crlf", "bom", "latin1", "formfeed", "tabs", "no-final-newline", "long-line"],
)
def test_layouts_and_encodings_survive_fix(tmp_path, before, after):
    path = tmp_path / "m.py"
    path.write_bytes(before)
    fix_file(path)
    assert path.read_bytes() == after


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", None),
        (b"\xff\xfe\x00garbage data_ptr", "cannot decode"),
        (b"# -*- coding: klingon -*-\nptrs = 1\n", "cannot decode"),
        (b"<html><body>ptr = zeros(</body></html>\n", "syntax error"),
        (b"ptrs = (" + b"(" * 3000 + b"1" + b")" * 3000 + b")\n", None),  # deep nesting: error or result, never a crash
    ],
    ids=["empty", "not-utf8", "unknown-codec", "not-python", "deep-nesting"],
)
def test_broken_files_give_clear_errors_never_crashes(tmp_path, content, fragment):
    path = tmp_path / "m.py"
    path.write_bytes(content)
    result = process_file(str(path), Settings(Config(), ALL, fix=True))
    if fragment is None:
        assert result.error is None or "internal error" not in result.error.message
    else:
        assert result.error is not None and fragment in result.error.message
    assert path.read_bytes() == content


def test_unreadable_and_broken_files_do_not_stop_the_run(tmp_path):
    (tmp_path / "good.py").write_text(BUGGY)
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02data_ptr\xff")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    proc = run_cli("--no-cache", "--isolated", ".", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 2  # binary.py cannot be decoded; the link found in the folder is a warning
    assert "good.py:2:" in out and "binary.py" in out and "dangling.py" in proc.stderr.decode()


def test_read_only_file_under_fix_is_reported_not_crashed(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if str(p) == str(path) and mode == os.W_OK else real_access(p, mode)
    )
    result = process_file(str(path), Settings(Config(), ALL, fix=True))
    assert result.error is not None and "read-only" in result.error.message
    assert path.read_text() == BUGGY


def test_file_changed_between_analysis_and_write_is_not_overwritten(tmp_path, monkeypatch):
    import ptrlint.engine as engine

    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    original = engine.process_text

    def racing(text, name, settings, *args):
        result = original(text, name, settings, *args)
        path.write_text(BUGGY + "# edited by someone else\n")  # lands after analysis, before the write
        return result

    monkeypatch.setattr(engine, "process_text", racing)
    result = process_file(str(path), Settings(Config(), ALL, fix=True))
    assert result.error is not None and "changed on disk" in result.error.message
    assert path.read_text().endswith("# edited by someone else\n")
    assert not list(tmp_path.glob("*.ptrlint.tmp"))  # the temp file was cleaned up


def _fix_tree(root: str) -> int:
    return run_cli("--no-cache", "--isolated", "--fix", "--jobs", "1", root).returncode


def test_two_processes_fixing_one_tree_leave_every_file_correct(tmp_path):
    for i in range(30):
        (tmp_path / f"m{i:02d}.py").write_text(BUGGY * 3)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        codes = pool.map(_fix_tree, [str(tmp_path), str(tmp_path)])
    assert all(code in (0, 2) for code in codes)  # 2: the other process changed a file first (reported)
    for path in tmp_path.glob("m*.py"):
        assert path.read_text() == FIXED * 3
    assert not list(tmp_path.glob("*.ptrlint.tmp"))


def test_symlinked_file_is_fixed_through_the_link(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(BUGGY)
    link = tmp_path / "link.py"
    os.symlink(target, link)
    fix_file(link)
    assert link.is_symlink() and target.read_text() == FIXED


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a\n",
        "\n",
        "\n\n",
        "a\nb",
        "a\r\nb\rc\n",
        "a\r",
        "é\nü\n",
        "x\x0cy\nz",
        "x\x0bq\u2028r\n",
    ],
)
def test_line_starts_split_as_the_tokenizer_does(text):
    """Lines break at \\r\\n, \\r and \\n only (a form feed or Unicode line separator does not), with or
    without carriage returns in the text."""
    import re

    from ptrlint.analysis.source import SourceMap

    assert SourceMap(text).line_starts == [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def test_a_long_chain_of_aliases_is_analysed_not_skipped():
    """A generated module that passes a table through 3,000 names (``x0 = x1``, ``x1 = x2``, ...) chains
    its alias classes 3,000 deep: the union-find walks the chain with a loop (it recursed, and the file
    was reported as E999 "too deeply nested")."""
    from ptrlint.engine import analyse

    n = 3000
    lines = [
        "import torch",
        "def f(ts):",
        *(f"    x{i} = x{i + 1}" for i in range(n)),
        f"    x{n} = [t.data_ptr() for t in ts]",
        "    return torch.tensor(x0, dtype=torch.int64)",
    ]
    findings = analyse("\n".join(lines) + "\n", "generated.py", Config(), ALL)
    assert [(f.code, f.line) for f in findings] == [("PTR001", n + 4)]


def test_union_find_walks_any_chain():
    from ptrlint.analysis.semantic.records import NameKey, UnionFind

    union_find = UnionFind()
    keys = [NameKey(0, f"x{i}") for i in range(100_000)]
    for a, b in zip(keys, keys[1:]):
        union_find.parent[a] = b  # the chain unions in this order leave
    assert union_find.find(keys[0]) == keys[-1]
    assert all(union_find.parent[k] == keys[-1] for k in keys[:-1])  # the path is compressed
