"""Behaviour pinned per file: a refactor changes no finding, message, related location or fix.

``tests/snapshots/differential.json`` holds, per small tree (``examples/``, the fixtures, the
shared corpora) and per file, a digest of what ptrlint says about it: the JSON findings with
``--unsafe-fixes`` (messages, related locations, fix titles, safety, edits) and the ``--diff``
the fix loop produces (``benchmarks/differential.py`` defines both). A change of behaviour that is
meant fails here first; regenerate with ``PTRLINT_UPDATE_SNAPSHOTS=1`` and say why in the commit.
The real trees (sglang, flashinfer-python, vLLM) are compared against a baseline revision by
``benchmarks/differential.py --baseline REV --real``.
"""

from __future__ import annotations

import json
import os

import pytest

from ..conftest import REPO, load_benchmark, needs_shared

SNAPSHOTS = REPO / "tests" / "snapshots" / "differential.json"


DIFFERENTIAL = load_benchmark("differential")


@pytest.mark.parametrize("tree", sorted(DIFFERENTIAL.SMALL_TREES))
def test_outputs_match_their_snapshots(tree):
    path = DIFFERENTIAL.SMALL_TREES[tree]
    if not str(path).startswith(str(REPO)):
        needs_shared(path)
    snapshot = DIFFERENTIAL.snapshot(DIFFERENTIAL.command_for(REPO), path)
    # a digest is the same on every machine only if no text names where the tree lies (paths are
    # shown relative to the working directory, failures and related locations in other modules too)
    placed = sorted(f for f, text in snapshot.items() if str(path.parent.resolve()) in text)
    assert not placed, f"{tree}: absolute paths in what ptrlint says about {placed}"
    current = DIFFERENTIAL.digests(snapshot)
    stored = json.loads(SNAPSHOTS.read_text()) if SNAPSHOTS.is_file() else {}
    if os.environ.get("PTRLINT_UPDATE_SNAPSHOTS"):
        stored[tree] = current
        SNAPSHOTS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        return
    expected = stored.get(tree, {})
    differing = DIFFERENTIAL.compare(expected, current)
    assert not differing, (
        f"{tree}: what ptrlint says changed for {differing} "
        "(see benchmarks/differential.py; PTRLINT_UPDATE_SNAPSHOTS=1 when meant)"
    )


def test_a_changed_output_is_caught():
    before = {"a.py": '{"code": "PTR001"}\n', "b.py": "x\n"}
    assert DIFFERENTIAL.compare(DIFFERENTIAL.digests(before), DIFFERENTIAL.digests({**before, "b.py": "y\n"})) == [
        "b.py"
    ]
    assert DIFFERENTIAL.compare(DIFFERENTIAL.digests(before), DIFFERENTIAL.digests({"a.py": before["a.py"]})) == [
        "b.py"
    ]
