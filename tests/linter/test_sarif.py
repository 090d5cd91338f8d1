"""SARIF output validates against the official 2.1.0 schema (read from ../shared/data)."""

from __future__ import annotations

import json

import pytest

from ..conftest import SHARED

SCHEMA = SHARED / "data" / "sarif-schema-2.1.0.json"
BUGGY = "import torch\nptrs = torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\nx = torch.tensor([t.data_ptr() for t in ts])\n"


@pytest.mark.skipif(not SCHEMA.is_file(), reason="SARIF schema not beside this checkout")
def test_sarif_validates_and_carries_findings_rules_fixes_and_evidence(ptrlint, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    (tmp_path / "m.py").write_text(BUGGY)
    (tmp_path / "broken.py").write_text("src_ptrs = (\n")
    result = ptrlint("--no-cache", "--format", "sarif", ".", cwd=tmp_path)
    assert result.code == 2
    log = json.loads(result.out)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(log, schema)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["PTR001", "PTR002", "PTR003", "PTR004", "PTR005", "PTR006"]
    assert all(r["name"] and r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"] for r in rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["PTR001", "PTR002"]
    first = results[0]
    assert first["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.py"
    assert first["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "uint64"
    assert first["relatedLocations"][0]["message"]["text"].startswith("pointer value")
    assert run["invocations"][0]["executionSuccessful"] is False


@pytest.mark.skipif(not SCHEMA.is_file(), reason="SARIF schema not beside this checkout")
def test_empty_sarif_validates(ptrlint, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    (tmp_path / "m.py").write_text("x = 1\n")
    result = ptrlint("--no-cache", "--format", "sarif", ".", cwd=tmp_path)
    assert result.code == 0
    jsonschema.validate(json.loads(result.out), json.loads(SCHEMA.read_text()))
