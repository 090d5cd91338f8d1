"""Invariants of the rule registry: unique codes and names, full docs, examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ptrlint.rules import ALL_RULES, RULES_BY_CODE

SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## Options")


def test_codes_and_names_are_unique_and_well_formed():
    codes = [r.code for r in ALL_RULES]
    names = [r.name for r in ALL_RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"PTR\d{3}", c) for c in codes)
    assert all(re.fullmatch(r"[a-z]+(-[a-z0-9]+)*", n) for n in names)
    assert codes == sorted(codes)
    assert set(RULES_BY_CODE) == set(codes)


def test_the_catalog_is_generated_from_the_rule_classes():
    """Settings, reports, the cache and the prefilter read codes, names and site words from the
    catalog (importable without the analysis); its entries must be what the classes say, in the same
    order (regenerate with `python -m ptrlint.catalog`)."""
    from ptrlint import catalog

    path = Path(catalog.__file__)
    text = path.read_text(encoding="utf-8")
    assert catalog.generated(text, ALL_RULES) == text, "the catalog is stale: run `python -m ptrlint.catalog`"
    assert [(e.code, e.name, e.site_words, e.site_methods) for e in catalog.CATALOG] == [
        (r.code, r.name, r.site_words, r.site_methods) for r in ALL_RULES
    ]
    assert catalog.rule_name("E999") == "E999"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_new_rule_fires_from_the_command_line_on_its_own_examples(rule, tmp_path):
    """The rule tests call a rule directly; the command line first asks the prefilter, which skips a
    file without a site word of the selected rules. Each INVALID example, linted with only its own
    rule selected, must give exactly its findings: a rule whose declared sites miss its examples
    (or a stale catalog) fails here, not in a user's run."""
    import json
    import subprocess
    import sys

    for i, case in enumerate(rule.INVALID):
        (tmp_path / f"example_{i}.py").write_text(case.code)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptrlint",
            "--isolated",
            "--no-cache",
            "--output-format",
            "json",
            "--select",
            rule.code,
            ".",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    counts: dict[str, int] = {}
    for finding in json.loads(proc.stdout):
        assert finding["code"] == rule.code
        counts[finding["path"]] = counts.get(finding["path"], 0) + 1
    assert counts == {f"example_{i}.py": case.count for i, case in enumerate(rule.INVALID)}


def test_choosing_codes_and_reporting_load_no_rule():
    """Resolving a selection and writing a text report must not import the rules (and the analysis)."""
    import subprocess
    import sys

    code = (
        "import sys; from ptrlint.settings import select_codes; from ptrlint import report; "
        "select_codes(['PTR00'], [], ['PTR005']); "
        "bad = sorted(m for m in sys.modules if m.startswith(('ptrlint.rules', 'ptrlint.analysis'))); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_is_documented_in_ruff_sections(rule):
    doc = rule.doc
    positions = [doc.find(s) for s in SECTIONS]
    assert all(p >= 0 for p in positions), f"{rule.code} lacks a section"
    assert positions == sorted(positions), f"{rule.code} sections out of order"
    assert rule.summary and rule.fix_availability
    for option in re.findall(r"`([a-z]+(?:-[a-z]+)+)`", doc.split("## Options")[1]):
        from ptrlint.config import CONFIG_KEYS

        assert option in CONFIG_KEYS, f"{rule.code} documents unknown option {option}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_has_examples(rule):
    assert len(rule.VALID) >= 1
    assert len(rule.INVALID) >= 1


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_explain_prints_the_doc(ptrlint, rule):
    result = ptrlint("--explain", rule.code.lower())
    assert result.code == 0
    assert rule.code in result.out and rule.name in result.out and "## Fix safety" in result.out


def test_explain_unknown_code_is_usage_error(ptrlint):
    assert ptrlint("--explain", "PTR999").code == 2


def test_list_rules(ptrlint):
    result = ptrlint("--list-rules")
    assert result.code == 0
    for rule in ALL_RULES:
        assert rule.code in result.out and rule.name in result.out


NEW_RULE = '''
"""PTR990 test-only-rule: a rule that exists only in this test's copy of the package."""

import ast
from collections.abc import Iterator

from .base import Diagnostic, Invalid, Rule, RuleContext


class FrobnicateCall(Rule):
    code = "PTR990"
    name = "frobnicate-call"
    summary = "A call of frobnicate()"
    doc = "Flags a module-level call of frobnicate()."
    fix_availability = "none"
    site_words = ("frobnicate",)
    VALID = ("x = 1\\n",)
    INVALID = (Invalid("frobnicate(t.data_ptr())\\n", 1),)

    def check(self, ctx: RuleContext) -> Iterator[Diagnostic]:
        for stmt in ctx.module.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "frobnicate":
                yield Diagnostic(ctx.span(call), "frobnicate() called", failure="a test rule")


__all__ = ["FrobnicateCall"]
'''


def test_new_rule_fires_with_only_its_own_module_added(tmp_path):
    """Issue 57: a rule added as one module, with its metadata on its class and no other file touched
    (no registry list, no regenerated catalog), is selectable and fires from the command line."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    import ptrlint

    package = Path(ptrlint.__file__).parent
    copy = tmp_path / "site" / "ptrlint"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "frobnicate_call.py").write_text(NEW_RULE, encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(
        "import torch\n\nt = torch.zeros(4)\nfrobnicate(t.data_ptr())\nfrobnicate_later = 1\n", encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    command = [sys.executable, "-m", "ptrlint", "--isolated", "--no-cache", "--output-format", "json"]
    proc = subprocess.run([*command, "--select", "PTR990", "."], cwd=project, capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    found = json.loads(proc.stdout)
    assert [(f["code"], f["line"], f["path"]) for f in found] == [("PTR990", 4, "app.py")], found
    alone = subprocess.run([*command, "."], cwd=project, capture_output=True, text=True, env=env)
    assert [f["code"] for f in json.loads(alone.stdout)] == ["PTR990"], alone.stderr  # selected by default too
