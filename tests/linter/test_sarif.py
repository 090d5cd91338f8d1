"""SARIF 2.1.0 output: checked structurally everywhere, and against the official schema when
``../shared/data/sarif-schema-2.1.0.json`` sits beside the checkout (as in CI)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..conftest import SHARED, needs_shared

SCHEMA = SHARED / "data" / "sarif-schema-2.1.0.json"
BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nx = torch.tensor([t.data_ptr() for t in ts])\n"


def _region_ok(region: dict[str, Any]) -> None:
    assert isinstance(region.get("startLine"), int) and region["startLine"] >= 1
    for key in ("startColumn", "endLine", "endColumn"):
        if key in region:
            assert isinstance(region[key], int) and region[key] >= 1, (key, region)
    if "endLine" in region:
        assert region["endLine"] >= region["startLine"]


def _physical_ok(loc: dict[str, Any]) -> None:
    physical = loc["physicalLocation"]
    assert isinstance(physical["artifactLocation"]["uri"], str) and physical["artifactLocation"]["uri"]
    if "region" in physical:
        _region_ok(physical["region"])


def check_sarif_structure(log: dict[str, Any]) -> None:
    """The properties SARIF 2.1.0 requires of a log, its rules, results, related locations and fixes."""
    assert log["version"] == "2.1.0" and isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        rules = driver.get("rules", [])
        ids = [r["id"] for r in rules]
        assert len(ids) == len(set(ids)) and all(isinstance(i, str) and i for i in ids)
        for rule in rules:
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule:
                    assert isinstance(rule[key]["text"], str) and rule[key]["text"]
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str) and result["message"]["text"]
            if "ruleIndex" in result:
                assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
            assert result.get("level", "warning") in ("none", "note", "warning", "error")
            for loc in result["locations"]:
                _physical_ok(loc)
            ids_seen = set()
            for related in result.get("relatedLocations", []):
                assert related["id"] not in ids_seen and related["id"] >= 0
                ids_seen.add(related["id"])
                assert related["message"]["text"]
                _physical_ok(related)
            for fix in result.get("fixes", []):
                assert fix["artifactChanges"], "a fix needs at least one artifactChange"
                for change in fix["artifactChanges"]:
                    assert change["artifactLocation"]["uri"]
                    assert change["replacements"], "an artifactChange needs at least one replacement"
                    for replacement in change["replacements"]:
                        _region_ok(replacement["deletedRegion"])
                        if "insertedContent" in replacement:
                            assert isinstance(replacement["insertedContent"]["text"], str)
        for invocation in run.get("invocations", []):
            assert isinstance(invocation["executionSuccessful"], bool)
            for note in invocation.get("toolExecutionNotifications", []):
                assert note["message"]["text"]


def _sarif_with_findings(ptrlint, tmp_path) -> dict[str, Any]:
    (tmp_path / "m.py").write_text(BUGGY)
    (tmp_path / "broken.py").write_text("src_ptrs = torch.zeros(\n")
    result = ptrlint("--no-cache", "--format", "sarif", ".", cwd=tmp_path)
    assert result.code == 2
    return json.loads(result.out)


def test_sarif_carries_findings_rules_fixes_and_evidence(ptrlint, tmp_path):
    log = _sarif_with_findings(ptrlint, tmp_path)
    check_sarif_structure(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    from ptrlint.rules import ALL_RULES

    assert [r["id"] for r in rules] == [rule.code for rule in ALL_RULES]
    assert all(
        r["name"] and r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
        for r in rules
    )
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["PTR001", "PTR002", "E999"]  # the broken file is a result too
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"
    assert results[2]["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    first = results[0]
    assert first["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.py"
    assert first["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "uint64"
    assert first["relatedLocations"][0]["message"]["text"].startswith("pointer value")
    assert run["invocations"][0]["executionSuccessful"] is False


def test_empty_sarif_is_well_formed(ptrlint, tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    result = ptrlint("--no-cache", "--format", "sarif", ".", cwd=tmp_path)
    assert result.code == 0
    log = json.loads(result.out)
    check_sarif_structure(log)
    assert log["runs"][0]["results"] == []


def test_structural_check_rejects_a_broken_log():
    with pytest.raises((AssertionError, KeyError)):
        check_sarif_structure(
            {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"message": {}}]}]}
        )


def test_sarif_validates_against_the_official_schema(ptrlint, tmp_path):
    needs_shared(SCHEMA)  # without it, the structural checks above still run
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    (tmp_path / "a").mkdir()
    jsonschema.validate(_sarif_with_findings(ptrlint, tmp_path / "a"), schema)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "m.py").write_text("x = 1\n")
    empty = ptrlint("--no-cache", "--format", "sarif", ".", cwd=tmp_path / "empty")
    jsonschema.validate(json.loads(empty.out), schema)
