"""Invariants of the rule registry: unique codes and names, full docs, examples."""

from __future__ import annotations

import re

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


def test_the_catalog_lists_every_rule_as_its_class_says():
    """Settings, reports and the cache read codes and names from the catalog (importable without the
    analysis); it must say exactly what the classes say, in the same order."""
    from ptrlint.catalog import CATALOG, rule_name

    assert [(e.code, e.name) for e in CATALOG] == [(r.code, r.name) for r in ALL_RULES]
    assert rule_name("E999") == "E999"


def test_choosing_codes_and_reporting_load_no_rule():
    """Resolving a selection and writing a text report must not import the rules (and the analysis)."""
    import subprocess
    import sys

    code = ("import sys; from ptrlint.settings import select_codes; from ptrlint import report; "
            "select_codes(['PTR00'], [], ['PTR005']); "
            "bad = sorted(m for m in sys.modules if m.startswith(('ptrlint.rules', 'ptrlint.analysis'))); "
            "print(bad); sys.exit(1 if bad else 0)")
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
