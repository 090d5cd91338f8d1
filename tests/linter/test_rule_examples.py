"""Every rule's own VALID/INVALID examples, run through the real engine (table-driven)."""

from __future__ import annotations

import pytest

from ptrlint.config import Config
from ptrlint.engine import Settings, analyse, fix_loop, select_codes
from ptrlint.rules import ALL_RULES

ALL = select_codes(["ALL"], [], [])
CASES_VALID = [
    pytest.param(rule, i, code, id=f"{rule.code}-valid-{i}") for rule in ALL_RULES for i, code in enumerate(rule.VALID)
]
CASES_INVALID = [
    pytest.param(rule, i, case, id=f"{rule.code}-invalid-{i}")
    for rule in ALL_RULES
    for i, case in enumerate(rule.INVALID)
]


@pytest.mark.parametrize("rule, index, code", CASES_VALID)
def test_valid_examples_give_no_finding(rule, index, code):
    findings = analyse(code, "example.py", Config(), frozenset({rule.code}))
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("rule, index, case", CASES_INVALID)
def test_invalid_examples_are_flagged_and_fixed_exactly(rule, index, case):
    findings = analyse(case.code, "example.py", Config(), frozenset({rule.code}))
    assert [f.code for f in findings] == [rule.code] * case.count
    safe_settings = Settings(Config(), frozenset({rule.code}), fix=True)
    unsafe_settings = Settings(Config(), frozenset({rule.code}), fix=True, unsafe_fixes=True)
    safe_text, _, _ = fix_loop(case.code, "example.py", safe_settings, findings)
    unsafe_text, _, remaining = fix_loop(case.code, "example.py", unsafe_settings, findings)
    if case.fixed is None:
        assert safe_text == case.code and unsafe_text == case.code
        return
    if case.unsafe:
        assert safe_text == case.code, "an unsafe fix must not be applied by plain --fix"
        assert all(f.fix is not None and not f.fix.safe for f in findings)
    else:
        assert safe_text == case.fixed
    assert unsafe_text == case.fixed
    # idempotent: the fixed example has nothing left to fix for this rule
    again, _, _ = fix_loop(
        unsafe_text, "example.py", unsafe_settings, analyse(unsafe_text, "example.py", Config(), frozenset({rule.code}))
    )
    assert again == unsafe_text


@pytest.mark.parametrize("rule, index, code", CASES_VALID)
def test_valid_examples_trip_no_rule_at_all(rule, index, code):
    """A VALID example of one rule must not trip any rule, its own or another."""
    findings = analyse(code, "example.py", Config(), ALL)
    assert findings == [], [f"{f.code}: {f.message}" for f in findings]
