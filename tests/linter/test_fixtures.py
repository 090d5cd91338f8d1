"""The project's own labelled corpus (tests/fixtures/corpus): markers and fixes, exactly.

Same format as the shared corpus (``# expect: PTR001`` on each reported line, ``fixed/<name>``
for the exact ``--fix`` result), but shipped with the repository, so a fresh clone with no
``../shared`` beside it still checks every rule end to end through the real CLI.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ptrlint.testing import expected_markers

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
CASES = sorted((FIXTURES / "cases").rglob("*.py"))


def _expected() -> Counter[tuple[str, int, str]]:
    expected: Counter[tuple[str, int, str]] = Counter()
    for path in CASES:
        name = path.relative_to(FIXTURES / "cases").as_posix()
        for line, code in expected_markers(path.read_text(encoding="utf-8")):
            expected[(name, line, code)] += 1
    return expected


def test_fixture_corpus_is_not_empty_and_covers_every_rule():
    from ptrlint.rules import RULES_BY_CODE

    assert len(CASES) >= 10
    covered = {code for (_name, _line, code) in _expected()}
    assert covered == set(RULES_BY_CODE)


def test_fixture_markers_are_reported_exactly(ptrlint):
    result = ptrlint("--no-cache", "--format", "json", "cases", cwd=FIXTURES)
    assert result.code == 1, result.err
    found = Counter(
        (Path(f["path"]).relative_to("cases").as_posix(), f["line"], f["code"]) for f in json.loads(result.out)
    )
    expected = _expected()
    assert found - expected == Counter(), "unexpected findings"
    assert expected - found == Counter(), "missing findings"


def test_fixture_fixes_are_exact_and_idempotent(ptrlint, tmp_path):
    work = tmp_path / "cases"
    shutil.copytree(FIXTURES / "cases", work)
    ptrlint("--no-cache", "--fix", str(work))
    first = {p.relative_to(work).as_posix(): p.read_bytes() for p in sorted(work.rglob("*.py"))}
    for path in CASES:
        name = path.relative_to(FIXTURES / "cases").as_posix()
        fixed = FIXTURES / "fixed" / name
        want = fixed.read_bytes() if fixed.is_file() else path.read_bytes()
        assert first[name] == want, name
    ptrlint("--no-cache", "--fix", str(work))
    second = {p.relative_to(work).as_posix(): p.read_bytes() for p in sorted(work.rglob("*.py"))}
    assert second == first


@pytest.mark.parametrize("fixed", sorted((FIXTURES / "fixed").rglob("*.py")), ids=lambda p: p.name)
def test_every_fixed_file_has_its_case_and_differs_from_it(fixed):
    case = FIXTURES / "cases" / fixed.relative_to(FIXTURES / "fixed")
    assert case.is_file() and case.read_bytes() != fixed.read_bytes()
