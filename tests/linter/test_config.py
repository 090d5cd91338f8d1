"""[tool.ptrlint]: every key changes behaviour, validation errors are exit 2, the CLI overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\ncopy_kernel[(1,)](ptrs)\n"


def project(tmp_path: Path, table: str, files: dict[str, str] | None = None) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.ptrlint]\n{table}\n")
    for name, text in (files or {"mod.py": BUGGY}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def codes(ptrlint, root: Path, *args: str) -> list[str]:
    result = ptrlint("--no-cache", "--format", "json", *args, ".", cwd=root)
    assert result.code in (0, 1), result.err
    return [f"{f['path']}:{f['code']}" for f in json.loads(result.out)]


def test_select(ptrlint, tmp_path):
    assert codes(ptrlint, project(tmp_path, 'select = ["PTR002"]')) == []


def test_extend_select(ptrlint, tmp_path):
    root = project(tmp_path, 'select = ["PTR002"]\nextend-select = ["PTR001"]')
    assert codes(ptrlint, root) == ["mod.py:PTR001"]


def test_ignore(ptrlint, tmp_path):
    assert codes(ptrlint, project(tmp_path, 'ignore = ["PTR00"]')) == []


def test_cli_overrides_file(ptrlint, tmp_path):
    root = project(tmp_path, 'select = ["PTR002"]')
    assert codes(ptrlint, root, "--select", "PTR001") == ["mod.py:PTR001"]


def test_exclude_replaces_defaults(ptrlint, tmp_path):
    root = project(tmp_path, 'exclude = ["vendored"]', {"vendored/a.py": BUGGY, "build/b.py": BUGGY, "c.py": BUGGY})
    assert sorted(codes(ptrlint, root)) == ["build/b.py:PTR001", "c.py:PTR001"]


def test_extend_exclude_keeps_defaults(ptrlint, tmp_path):
    root = project(tmp_path, 'extend-exclude = ["gen_*.py"]', {"gen_x.py": BUGGY, "build/b.py": BUGGY, "c.py": BUGGY})
    assert codes(ptrlint, root) == ["c.py:PTR001"]


def test_per_file_ignores(ptrlint, tmp_path):
    root = project(
        tmp_path, '[tool.ptrlint.per-file-ignores]\n"legacy/*.py" = ["PTR001"]', {"legacy/a.py": BUGGY, "b.py": BUGGY}
    )
    assert codes(ptrlint, root) == ["b.py:PTR001"]


def test_pointer_names_reach_the_prefilter(ptrlint, tmp_path):
    source = "import torch\ndev_handles = torch.empty(4, dtype=torch.int64)\n"
    assert codes(ptrlint, project(tmp_path, "", {"m.py": source})) == []
    root = project(tmp_path, 'pointer-names = ["\\\\w*_handles"]', {"m.py": source})
    assert codes(ptrlint, root) == ["m.py:PTR001"]


def test_lookalike_names(ptrlint, tmp_path):
    source = "import torch\nkv_cache_ptrs = torch.empty(4, dtype=torch.int64)\n"
    assert codes(ptrlint, project(tmp_path, "", {"m.py": source})) == ["m.py:PTR001"]
    assert codes(ptrlint, project(tmp_path, 'lookalike-names = ["kv_cache_ptrs"]', {"m.py": source})) == []


def test_buffer_factories(ptrlint, tmp_path):
    source = "import torch\nsrc_ptrs = alloc_table(8, dtype=torch.int64)\n"
    assert codes(ptrlint, project(tmp_path, "", {"m.py": source})) == []
    assert codes(ptrlint, project(tmp_path, 'buffer-factories = ["alloc_table"]', {"m.py": source})) == ["m.py:PTR001"]


def test_pointer_functions_reach_the_prefilter(ptrlint, tmp_path):
    source = "import torch\ntable = torch.tensor([resolve_handle(x) for x in xs], dtype=torch.int64)\n"
    assert codes(ptrlint, project(tmp_path, "", {"m.py": source})) == []
    root = project(tmp_path, 'pointer-functions = ["mylib.resolve_handle"]', {"m.py": source})
    assert codes(ptrlint, root) == ["m.py:PTR001"]


def test_torch_version_turns_off_ptr005_once_fixed(ptrlint, tmp_path, monkeypatch):
    from ptrlint.rules import pointer_setitem

    source = "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[0] = t.data_ptr()\n"
    monkeypatch.setattr(pointer_setitem, "SETITEM_FIXED_IN", (2, 20))
    assert codes(ptrlint, project(tmp_path, 'torch-version = "2.19"', {"m.py": source})) == ["m.py:PTR005"]
    assert codes(ptrlint, project(tmp_path, 'torch-version = "2.20"', {"m.py": source})) == []


@pytest.mark.parametrize(
    "table, key",
    [
        ('colour = "red"', "colour"),
        ('select = "PTR001"', "select"),
        ("ignore = [1]", "ignore"),
        ('torch-version = "two"', "torch-version"),
        ("torch-version = 2.3", "torch-version"),
        ('pointer-names = ["("]', "pointer-names"),
        ('per-file-ignores = ["x"]', "per-file-ignores"),
        ('select = ["PTR999"]', "PTR999"),
    ],
)
def test_invalid_config_is_exit_2_naming_the_key(ptrlint, tmp_path, table, key):
    root = project(tmp_path, table)
    result = ptrlint("--no-cache", ".", cwd=root)
    assert result.code == 2
    assert key in result.err


def test_isolated_ignores_config(ptrlint, tmp_path):
    root = project(tmp_path, 'colour = "red"')
    assert ptrlint("--no-cache", "--isolated", ".", cwd=root).code == 1


def test_explicit_config_file(ptrlint, tmp_path):
    (tmp_path / "mod.py").write_text(BUGGY)
    other = tmp_path / "conf"
    other.mkdir()
    (other / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
    assert ptrlint("--no-cache", ".", cwd=tmp_path).code == 1
    assert ptrlint("--no-cache", "--config", str(other / "pyproject.toml"), ".", cwd=tmp_path).code == 0


def test_nearest_pyproject_with_table_wins(ptrlint, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptrlint]\nignore = ["PTR001"]\n')
    sub = tmp_path / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no table: keep looking upwards
    (sub / "mod.py").write_text(BUGGY)
    assert ptrlint("--no-cache", "mod.py", cwd=sub).code == 0


def test_torch_version_with_the_measured_release(ptrlint, tmp_path):
    source = "import torch\nbuf = torch.zeros(4, dtype=torch.uint64)\nbuf[0] = t.data_ptr()\n"
    assert codes(ptrlint, project(tmp_path, 'torch-version = "2.14"', {"m.py": source})) == ["m.py:PTR005"]
    assert codes(ptrlint, project(tmp_path, 'torch-version = "2.14.1"', {"m.py": source})) == []


@pytest.mark.parametrize(
    "where, expected",
    [
        ("mod.py", "root"),
        ("a/mod.py", "root"),  # a/pyproject.toml has no [tool.ptrlint] table: the search goes on up
        ("a/b/mod.py", "deep"),
        ("a/b/c/mod.py", "deep"),
        ("a/b/c", "deep"),  # a folder is its own start
        ("a", "root"),
    ],
)
def test_each_path_gets_the_nearest_ptrlint_table(tmp_path, monkeypatch, where, expected):
    """The resolver's per-folder memo answers what find_config_file answers for each path, however
    the path is spelled and in whatever order the folders are asked."""
    import os

    from ptrlint.config import ConfigResolver, find_config_file

    (tmp_path / "pyproject.toml").write_text("[tool.ptrlint]\nignore = ['PTR001']\n")
    (tmp_path / "a/b/c").mkdir(parents=True)
    (tmp_path / "a/pyproject.toml").write_text("[project]\nname = 'a'\n")
    (tmp_path / "a/b/pyproject.toml").write_text("[tool.ptrlint]\nignore = ['PTR002']\n")
    for folder in ("", "a", "a/b", "a/b/c"):
        (tmp_path / folder / "mod.py").write_text("x = 1\n")
    files = {"root": tmp_path / "pyproject.toml", "deep": tmp_path / "a/b/pyproject.toml"}
    monkeypatch.chdir(tmp_path / "a")
    for order in (["a/b/c/mod.py", "a/mod.py", "mod.py"], ["mod.py", "a/b/mod.py"], []):
        resolver = ConfigResolver()
        for other in order:  # folders asked before, deeper or shallower, fill the memo
            resolver.for_path(tmp_path / other)
        for spelled in (str(tmp_path / where), os.path.relpath(tmp_path / where)):
            config = resolver.for_path(spelled)
            assert config.source == str(files[expected])
            assert find_config_file(Path(spelled)) == files[expected].resolve()
