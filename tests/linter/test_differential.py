"""During the move to the ast engine: the old libcst engine and the new one agree exactly.

Findings (positions, codes, messages, evidence, fix safety) and the text every fix produces
(safe and unsafe) must be identical on the corpus, examples/, the fixtures and a torch sample.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ptrlint._legacy import analyse as legacy
from ptrlint.config import Config
from ptrlint.engine import Settings, analyse, fix_loop, select_codes

from ..conftest import CORPUS, REPO

ALL = select_codes(["ALL"], [], [])


def _files() -> list[Path]:
    files = sorted((REPO / "examples").rglob("*.py")) + sorted((REPO / "tests" / "fixtures").rglob("*.py"))
    for sub in ("cases", "v2/cases", "cross_module/cases"):
        if (CORPUS / sub).is_dir():
            files += sorted((CORPUS / sub).rglob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        tree = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))
        files += [p for p in tree if p.stat().st_size < 80_000][::20]
    return files


def _new_fixed(text: str, unsafe: bool) -> str:
    settings = Settings(Config(), ALL, fix=True, unsafe_fixes=unsafe)
    return fix_loop(text, "m.py", settings, analyse(text, "m.py", Config(), ALL))[0]


@pytest.mark.slow
def test_old_and_new_engines_agree():
    checked = 0
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
            old = legacy.analyse(text, "m.py", Config(), ALL)
        except Exception:  # noqa: BLE001 - files the old engine could not parse are not compared
            continue
        new = analyse(text, "m.py", Config(), ALL)
        assert legacy.comparable(old, text) == legacy.comparable(new, text), path
        if any(f.fix for f in old):
            for unsafe in (False, True):
                assert legacy.fix_loop(text, "m.py", Config(), ALL, unsafe) == _new_fixed(text, unsafe), (path, unsafe)
        checked += 1
    assert checked > 50
