"""The manifest: a warm run trusts a file's metadata instead of reading it, and is never stale."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from ptrlint.planner import files, tasks
from ptrlint.planner.manifest import SETTLE_NS, Manifest, signature

TABLE = "import torch\n\nclass Tables:\n    ptrs: torch.Tensor\n"
FILL = (
    "import torch\nfrom pkg.tables import Tables\n\n"
    "def fill(t: Tables, ts):\n    t.ptrs = torch.tensor([x.data_ptr() for x in ts], dtype=torch.int64)\n"
)
PLAIN = "import os\n\nx = os.getcwd()\n"
BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"


def _age(root: Path, seconds: float = 60.0) -> None:
    """Files written by a test are seconds old; the manifest trusts only settled timestamps."""
    stamp = time.time() - seconds
    for path in root.rglob("*.py"):
        os.utime(path, (stamp, stamp))


def _project(root: Path) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "tables.py").write_text(TABLE)
    (root / "pkg" / "fill.py").write_text(FILL)
    (root / "pkg" / "plain.py").write_text(PLAIN)
    (root / "pkg" / "buggy.py").write_text(BUGGY)
    _age(root)


def _findings(ptrlint, root: Path) -> list[str]:
    result = ptrlint("--output-format", "json", "--exit-zero", ".", cwd=root)
    return sorted(f"{f['path']}:{f['line']}:{f['code']}" for f in json.loads(result.out))


@pytest.fixture
def reads(monkeypatch):
    """The paths whose text the planner reads (in this process: the CLI fixture runs --jobs 1)."""
    seen: list[str] = []
    for module in (files, tasks):  # a module read for the index run is read in tasks.py (read_unlinted)
        original = module.read_source

        def counting(path, _original=original):
            seen.append(os.path.basename(path))
            return _original(path)

        monkeypatch.setattr(module, "read_source", counting)
    return seen


def test_a_warm_run_reads_no_unchanged_file(ptrlint, tmp_path, reads):
    _project(tmp_path)
    cold = _findings(ptrlint, tmp_path)
    assert cold and any("fill.py" in f for f in cold)
    assert set(reads) >= {"tables.py", "fill.py", "plain.py", "buggy.py"}
    reads.clear()
    assert _findings(ptrlint, tmp_path) == cold
    assert reads == []  # the rendered fix edits of the JSON output came from the cache too
    warm = ptrlint("--output-format", "json", "--exit-zero", ".", cwd=tmp_path).out
    assert warm == ptrlint("--output-format", "json", "--exit-zero", "--no-cache", ".", cwd=tmp_path).out
    assert '"edits": [\n' in warm and '"text": "uint64"' in warm


def test_a_changed_file_is_read_again_and_its_findings_follow(ptrlint, tmp_path, reads):
    _project(tmp_path)
    _findings(ptrlint, tmp_path)
    buggy = tmp_path / "pkg" / "buggy.py"
    buggy.write_text("\n\n" + BUGGY)  # a new size and a new timestamp
    stamp = time.time() - 30
    os.utime(buggy, (stamp, stamp))
    reads.clear()
    assert "pkg/buggy.py:4:PTR001" in _findings(ptrlint, tmp_path)
    assert "buggy.py" in reads and "plain.py" not in reads


def test_same_size_and_timestamp_but_a_new_inode_is_read_again(ptrlint, tmp_path, reads):
    _project(tmp_path)
    _findings(ptrlint, tmp_path)
    buggy = tmp_path / "pkg" / "buggy.py"
    stat = buggy.stat()
    replacement = tmp_path / "new.tmp"
    replacement.write_text(BUGGY.replace("int64", "int32"))  # same length
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, buggy)  # an editor's atomic save: same size and mtime, new inode
    reads.clear()
    assert any(f.startswith("pkg/buggy.py:2:") for f in _findings(ptrlint, tmp_path))
    assert "buggy.py" in reads


def test_recently_written_files_are_not_trusted(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(PLAIN)
    manifest = Manifest(str(tmp_path / "cache"), "f" * 32)
    manifest.put(str(path), signature(str(path)), {"evidence": False, "site": False})
    assert not manifest.dirty and manifest.get(str(path), signature(str(path))) is None
    old = time.time_ns() - 2 * SETTLE_NS
    os.utime(path, ns=(old, old))
    manifest.put(str(path), signature(str(path)), {"evidence": False, "site": False})
    assert manifest.get(str(path), signature(str(path))) == {"evidence": False, "site": False}


def test_a_moved_package_boundary_is_not_served_from_the_manifest(ptrlint, tmp_path):
    _project(tmp_path)
    before = _findings(ptrlint, tmp_path)
    assert "pkg/fill.py:5:PTR001" in before
    os.remove(tmp_path / "pkg" / "__init__.py")  # `pkg.tables` is now a top-level `tables`...
    fill = tmp_path / "pkg" / "fill.py"
    fill.write_text(FILL.replace("from pkg.tables", "from tables"))
    stamp = time.time() - 30
    os.utime(fill, (stamp, stamp))  # ...and only fill.py changed on disk
    after = _findings(ptrlint, tmp_path)
    assert "pkg/fill.py:5:PTR001" in after


def test_a_damaged_manifest_is_ignored(ptrlint, tmp_path):
    _project(tmp_path)
    cold = _findings(ptrlint, tmp_path)
    files = list((tmp_path / ".ptrlint_cache" / "manifest").glob("*.json"))
    assert len(files) == 1
    files[0].write_text("{not json")
    assert _findings(ptrlint, tmp_path) == cold
    files[0].write_text(json.dumps({"format": 1, "files": {str(tmp_path / "pkg" / "buggy.py"): [[1, 2, 3], {}]}}))
    assert _findings(ptrlint, tmp_path) == cold


def test_real_path_follows_the_working_directory_and_links(tmp_path, monkeypatch):
    from ptrlint.sources import real_path

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "m.py").write_text(PLAIN)
    (tmp_path / "link.py").symlink_to(tmp_path / "b" / "m.py")
    monkeypatch.chdir(tmp_path / "a")
    first = real_path("m.py")
    monkeypatch.chdir(tmp_path / "b")
    assert real_path("m.py") != first == os.path.realpath(tmp_path / "a" / "m.py")
    assert real_path(str(tmp_path / "link.py")) == os.path.realpath(tmp_path / "b" / "m.py")


def test_deleted_files_leave_the_manifest(tmp_path):
    kept, gone = tmp_path / "kept.py", tmp_path / "gone.py"
    old = time.time_ns() - 2 * SETTLE_NS
    for path in (kept, gone):
        path.write_text(PLAIN)
        os.utime(path, ns=(old, old))
    manifest = Manifest(str(tmp_path / "cache"), "f" * 32)
    for path in (kept, gone):
        manifest.put(str(path), signature(str(path)), {"evidence": False, "site": False})
    gone.unlink()
    manifest.save()
    assert set(Manifest(str(tmp_path / "cache"), "f" * 32).records) == {str(kept)}


_USES_TEXT = """import torch
import torch.nn as nn
x = torch.data_ptr(t) + torch.data_ptrs + mytorch.cuda + a.torch.zeros
y = torch.addr_of(nn.Module) + torch.é + torch.
torch.cuda.ptr
"""


@pytest.mark.parametrize("local", ["torch", "nn", "cuda", "a", "x"])
@pytest.mark.parametrize(
    "attr", ["data_ptr", "data_ptrs", "data", "cuda", "zeros", "addr_of", "addr", "Module", "é", "ptr"]
)
def test_a_candidate_spells_a_name_as_its_attribute_uses_list_it(local, attr):
    """The settle round's directed search (one name) answers what the collected uses answer."""
    assert tasks.spells_attribute(_USES_TEXT, local, attr) == (attr in tasks.attribute_uses(_USES_TEXT, local))


def test_a_task_read_from_disk_keeps_what_the_planner_needs_and_not_its_text(tmp_path):
    """Thousands of tasks stay alive to the end of a run: each keeps its bindings, modules and light
    summary, not its text nor its import lines (27 MB of 153 on a 20,000-file tree)."""
    from ptrlint.config import Config
    from ptrlint.settings import Settings, select_codes

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    path = tmp_path / "pkg" / "mod.py"
    path.write_text(
        "import torch\nfrom pkg.other import Table as T\n\n\ndef f(xs):\n"
        "    return torch.tensor([x.data_ptr() for x in xs], dtype=torch.int64)\n"
    )
    task, _sig, _record = tasks.classify(str(path), Settings(Config(), select_codes(["ALL"], [], [])), {})
    assert isinstance(task, tasks.Task) and task.analyse
    assert not task.has_text and task.text == "" and task._imports is None
    assert task.bindings() == {"torch": "torch", "T": "pkg.other.Table"}
    assert {"torch", "pkg.other", "pkg.other.Table"} <= task.modules()
    assert task.light_summary().exports == task.bindings() and not task.has_text  # nothing read again
