"""The result cache never serves a stale result and honours --no-cache."""

from __future__ import annotations

import json
from pathlib import Path

BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"


def findings(ptrlint, root: Path, *args: str) -> list[str]:
    result = ptrlint("--format", "json", *args, ".", cwd=root)
    return [f"{f['path']}:{f['line']}:{f['code']}" for f in json.loads(result.out)]


def test_cache_is_created_with_tag_and_reused(ptrlint, tmp_path):
    (tmp_path / "m.py").write_text(BUGGY)
    assert findings(ptrlint, tmp_path) == ["m.py:2:PTR001"]
    cache = tmp_path / ".ptrlint_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    entries = list(cache.rglob("*.json"))
    assert len(entries) == 1
    # Prove the second run reads the cache: doctor the entry, sealed with this user's key as ptrlint would
    # seal it, and see the doctored result.
    from ptrlint.cache import seal

    record = json.loads(entries[0].read_text())
    data = json.loads(record["body"])
    data["findings"][0]["line"] = 99
    body = json.dumps(data)
    key = entries[0].parent.name + entries[0].stem
    entries[0].write_text(json.dumps({"tag": seal(key, body), "body": body}))
    assert findings(ptrlint, tmp_path) == ["m.py:99:PTR001"]
    assert findings(ptrlint, tmp_path, "--no-cache") == ["m.py:2:PTR001"]


def test_no_cache_writes_nothing(ptrlint, tmp_path):
    (tmp_path / "m.py").write_text(BUGGY)
    findings(ptrlint, tmp_path, "--no-cache")
    assert not (tmp_path / ".ptrlint_cache").exists()


def test_changed_file_config_or_selection_is_never_stale(ptrlint, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    assert findings(ptrlint, tmp_path) == ["m.py:2:PTR001"]
    path.write_text("\n" + BUGGY)
    assert findings(ptrlint, tmp_path) == ["m.py:3:PTR001"]
    assert findings(ptrlint, tmp_path, "--select", "PTR002") == []
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
    assert findings(ptrlint, tmp_path) == []
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nlookalike-names = ["ptrs"]\n')
    assert findings(ptrlint, tmp_path) == ["m.py:3:PTR001"]  # value evidence still holds


def test_fix_with_a_warm_cache_still_fixes(ptrlint, tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    findings(ptrlint, tmp_path)
    assert ptrlint("--fix", ".", cwd=tmp_path).code == 0
    assert "torch.uint64" in path.read_text()
    assert findings(ptrlint, tmp_path) == []


def test_version_is_part_of_the_key(ptrlint, tmp_path, monkeypatch):
    import ptrlint.cache as cache_mod

    (tmp_path / "m.py").write_text(BUGGY)
    findings(ptrlint, tmp_path)
    before = {p.name for p in (tmp_path / ".ptrlint_cache").rglob("*.json")}
    monkeypatch.setattr(cache_mod, "__version__", "999.0")
    monkeypatch.setattr(cache_mod, "_fingerprint", None)  # computed once per process: compute it again
    findings(ptrlint, tmp_path)
    after = {p.name for p in (tmp_path / ".ptrlint_cache").rglob("*.json")}
    assert len(after - before) == 1
