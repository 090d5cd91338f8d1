"""ruff's command surface where ptrlint has the same need (issue 43): `check`, `rule`, `clean`,
`--output-file`, `--quiet`/`--silent`, `--exit-non-zero-on-fix`, `--cache-dir`/PTRLINT_CACHE_DIR.
Same names and behaviour as ruff's."""

from __future__ import annotations

import json
import os

import pytest

from ptrlint.cli import main

BUGGY = "import torch\n\n\ndef table(ts):\n    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "buggy.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PTRLINT_CACHE_DIR", raising=False)
    return tmp_path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_is_the_bare_command(project, capsys):
    assert _run(capsys, "check", "--no-cache", "--output-format", "concise", "buggy.py") == _run(
        capsys, "--no-cache", "--output-format", "concise", "buggy.py"
    )
    code, out, _err = _run(capsys, "check", "--no-cache", "--output-format", "concise")
    assert code == 1 and "buggy.py:5:" in out


def test_rule_prints_one_rule_or_all_as_text_or_json(project, capsys):
    code, out, _err = _run(capsys, "rule", "ptr001")
    assert code == 0 and out.startswith("PTR001 (signed-pointer-dtype)")
    assert out == _run(capsys, "--explain", "PTR001")[1]
    code, out, _err = _run(capsys, "rule", "--all", "--output-format", "json")
    rules = json.loads(out)
    assert code == 0 and [r["code"] for r in rules] == sorted(r["code"] for r in rules) and len(rules) >= 7
    assert all(r["explanation"] and r["name"] for r in rules)
    assert _run(capsys, "rule", "PTR999")[0] == 2
    assert _run(capsys, "rule")[0] == 2


def test_output_file_takes_the_report(project, capsys):
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "json", "--output-file", "report.json")
    assert code == 1 and out == ""
    assert [f["code"] for f in json.loads((project / "report.json").read_text())] == ["PTR001"]
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "full", "-o", "report.txt")
    text = (project / "report.txt").read_text()
    assert code == 1 and out == "" and "PTR001" in text and "\x1b[" not in text  # no colour in a file


def test_quiet_prints_findings_only_and_silent_nothing(project, capsys):
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "--quiet")
    assert code == 1 and "PTR001" in out and "Found" not in out
    code, out, err = _run(capsys, "--no-cache", "--output-format", "concise", "-s")
    assert code == 1 and out == "" and err == ""
    (project / "buggy.py").write_text("x = 1\n")
    code, out, _err = _run(capsys, "--no-cache", "-q")
    assert code == 0 and out == ""  # no "All checks passed!"


def test_exit_non_zero_on_fix(project, capsys):
    (project / "safe.py").write_text(BUGGY.replace("buggy", "safe"))
    code, _out, _err = _run(capsys, "--no-cache", "--fix", "buggy.py")
    assert code == 0 and "torch.uint64" in (project / "buggy.py").read_text()
    (project / "buggy.py").write_text(BUGGY)
    code, _out, _err = _run(capsys, "--no-cache", "--fix", "--exit-non-zero-on-fix", "buggy.py")
    assert code == 1 and "torch.uint64" in (project / "buggy.py").read_text()
    code, _out, _err = _run(capsys, "--no-cache", "--fix", "--exit-non-zero-on-fix", "buggy.py")
    assert code == 0  # nothing left to fix


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_cache_dir_from_flag_or_environment_and_clean(project, capsys, monkeypatch, tmp_path, how):
    cache = tmp_path / "elsewhere" / "cache"
    if how == "flag":
        _run(capsys, "--cache-dir", str(cache))
    else:
        monkeypatch.setenv("PTRLINT_CACHE_DIR", str(cache))
        _run(capsys)
    assert (cache / "CACHEDIR.TAG").is_file() and not (project / ".ptrlint_cache").exists()
    _run(capsys)  # and the default cache beside the configuration
    default = project / ".ptrlint_cache"
    assert default.is_dir() or how == "environment"
    (project / "keep" / ".ptrlint_cache").mkdir(parents=True)  # not ours: no CACHEDIR.TAG
    monkeypatch.setenv("PTRLINT_CACHE_DIR", str(cache))
    code, _out, err = _run(capsys, "clean")
    assert code == 0 and not cache.exists() and not default.exists() and "Removing cache at" in err
    assert (project / "keep" / ".ptrlint_cache").is_dir()
    assert os.path.exists(project / "buggy.py")


def test_statistics_print_the_counts_instead_of_the_findings(project, capsys):
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "--statistics")
    assert code == 1 and out.splitlines()[0] == "    1\tPTR001\t[*] signed-pointer-dtype" and "buggy.py:" not in out
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "json", "--statistics")
    assert json.loads(out) == [{"code": "PTR001", "name": "signed-pointer-dtype", "count": 1, "fixable": True}]


def test_fix_only_fixes_and_reports_nothing_left(project, capsys):
    (project / "left.py").write_text(
        "import torch\n\n\ndef shift(t):\n    return t.data_ptr() + 8 == torch.tensor(1)\n"
        "ptrs = torch.tensor([t.data_ptr() for t in ts])\nptrs.to(torch.int64)\n"
    )
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "--fix-only")
    assert code == 0 and "torch.uint64" in (project / "buggy.py").read_text()
    assert "left.py:" not in out and out.strip().splitlines()[-1].startswith("Fixed ")
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "--fix-only")
    assert code == 0 and out.strip().splitlines()[-1] == "No fixes applied."
    assert _run(capsys, "--no-cache", "--output-format", "concise")[0] == 1  # findings are left in left.py


def test_show_fixes_lists_what_was_fixed(project, capsys):
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "--fix", "--show-fixes")
    assert code == 0
    assert "Fixed 1 finding:\n- buggy.py:\n    1 \u00d7 PTR001 (signed-pointer-dtype)\n" in out


def test_config_takes_key_value_pairs_beside_a_file(project, capsys):
    """`--config 'ignore = ["PTR001"]'` overrides one setting, on top of the nearest pyproject or of
    a `--config FILE`; repeatable; a value that is neither a file nor TOML is a usage error."""
    assert _run(capsys, "--no-cache", "-q")[0] == 1
    assert _run(capsys, "--no-cache", "-q", "--config", 'ignore = ["PTR001"]')[0] == 0
    (project / "other.toml").write_text('[tool.ptrlint]\nselect = ["PTR002"]\n')
    assert _run(capsys, "--no-cache", "-q", "--config", "other.toml")[0] == 0
    assert _run(capsys, "--no-cache", "-q", "--config", "other.toml", "--config", 'select = ["PTR001"]')[0] == 1
    assert (
        _run(capsys, "--no-cache", "-q", "--config", 'select = ["PTR002"]', "--config", 'extend-select = ["PTR001"]')[0]
        == 1
    )
    code, _out, err = _run(capsys, "--no-cache", "--config", "select = [")
    assert code == 2 and "neither a file nor a TOML" in err
    code, _out, err = _run(capsys, "--no-cache", "--config", "colour = true")
    assert code == 2 and "unknown key 'colour'" in err


@pytest.mark.parametrize("output", ["json", "sarif", "github", "concise", "full"])
def test_files_that_cannot_be_checked_are_results_in_every_format(project, capsys, output):
    """An unreadable, an undecodable and an unparsable file each appear in the report itself, with
    their own codes (E902, E903, E999), as ruff reports them; the run exits 2."""
    (project / "broken.py").write_text("src_ptrs = torch.zeros(\n")
    (project / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    (project / "locked.py").write_text(BUGGY)
    (project / "locked.py").chmod(0)
    try:
        code, out, _err = _run(capsys, "--no-cache", "--output-format", output, "broken.py", "latin.py", "locked.py")
    finally:
        (project / "locked.py").chmod(0o644)
    assert code == 2
    if os.geteuid() == 0:  # root reads any file
        expected = {"broken.py": "E999", "latin.py": "E903"}
    else:
        expected = {"broken.py": "E999", "latin.py": "E903", "locked.py": "E902"}
    if output == "json":
        assert {e["path"]: e["code"] for e in json.loads(out) if e["code"].startswith("E")} == expected
    elif output == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        found = {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["ruleId"]
            for r in results
            if r["ruleId"].startswith("E")
        }
        assert found == expected
    elif output == "github":
        for path, error in expected.items():
            assert any(f"file={path}" in line and f"title={error}" in line for line in out.splitlines()), out
    else:
        for path, error in expected.items():
            assert any(line.startswith(path) and error in line for line in out.splitlines()), out


def test_a_broken_link_in_a_folder_is_skipped_with_a_warning(project, capsys):
    """Found by walking a folder: skipped, one warning, the run goes on (named on the command line: E902)."""
    (project / "buggy.py").write_text("x = 1\n")
    (project / "gone.py").symlink_to(project / "nowhere.py")
    code, _out, err = _run(capsys, "--no-cache", "-q", ".")
    assert code == 0 and err.count("broken symbolic link") == 1 and "gone.py" in err
    code, out, _err = _run(capsys, "--no-cache", "--output-format", "concise", "gone.py")
    assert code == 2 and "gone.py: E902" in out


def test_a_folder_without_python_files_warns(project, capsys):
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text("# docs\n")
    code, _out, err = _run(capsys, "--no-cache", "docs")
    assert code == 0 and "no Python files or notebooks found under docs" in err


def test_a_configuration_error_names_its_file(project, capsys):
    (project / "pyproject.toml").write_text("[tool.ptrlint]\nselect = 3\n")
    code, _out, err = _run(capsys, "--no-cache", "buggy.py")
    assert code == 2 and str(project / "pyproject.toml") in err and "select" in err


def test_show_settings_prints_what_applies_to_the_first_file(project, capsys):
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n[tool.ptrlint]\nignore = ["PTR005"]\n')
    code, out, _err = _run(capsys, "--show-settings", "--config", 'extend-select = ["PTR001"]', ".")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "Resolved settings for: buggy.py"
    assert lines[1] == f"Settings path: {project / 'pyproject.toml'}"
    assert 'ignore = ["PTR005"]' in lines and 'extend-select = ["PTR001"]' in lines
    enabled = next(line for line in lines if line.startswith("enabled rules = "))
    assert "PTR005" not in enabled and "PTR001" in enabled


def test_watch_lints_again_when_a_file_changes(tmp_path):
    """`--watch` reports once, then again after a Python file changes (and exits 130 on Ctrl-C)."""
    import signal
    import subprocess
    import sys
    import threading
    import time

    pytest.importorskip("watchfiles")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "mod.py").write_text("x = 1\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ptrlint", "--watch", "--no-cache", "--output-format", "concise", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()

    def wait_for(text: str, poke=None) -> None:
        deadline, next_poke = time.monotonic() + 60, time.monotonic()
        while not any(text in line for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, (
                lines,
                proc.stderr.read() if proc.poll() else "",
            )
            if poke is not None and time.monotonic() >= next_poke:  # again, in case the watcher was not up yet
                poke()
                next_poke = time.monotonic() + 2
            time.sleep(0.05)

    try:
        wait_for("All checks passed!")
        wait_for("mod.py:5:", poke=lambda: (tmp_path / "mod.py").write_text(BUGGY))
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) in (0, 130)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ruff_s_short_flags(project, capsys):
    assert _run(capsys, "-n", "-e", "-q") == _run(capsys, "--no-cache", "--exit-zero", "--quiet")
    assert _run(capsys, "-n", "-e", "-q")[0] == 0 and not (project / ".ptrlint_cache").exists()
