"""Module lookups (project/layout.py) and the view's name resolution (project/view.py) answer
exactly what the plain file-system checks and a per-module resolution answer; the caches only
make them cheaper."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ptrlint.project import layout
from ptrlint.project.summary import ModuleSummary, ValueSummary
from ptrlint.project.view import ProjectView, consulted_changed


def _plain_module_file(module: str, bases: tuple[Path, ...]) -> Path | None:
    """module_file's definition with a system call for every candidate."""
    rel = os.path.join(*module.split("."))
    for base in bases:
        if base.name.startswith("+"):
            own, base = base.name[1:], base.parent
            if module.partition(".")[0] != own:
                continue
        for candidate in (os.path.join(str(base), rel) + ".py", os.path.join(str(base), rel, "__init__.py")):
            if os.path.isfile(candidate):
                return Path(candidate)
    return None


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for rel in (
        "pkg/__init__.py",
        "pkg/mod.py",
        "pkg/sub/__init__.py",
        "pkg/sub/deep.py",
        "top.py",
        "src/inner/__init__.py",
        "nopkg/plain.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    (tmp_path / "pkg" / "trap.py").mkdir()  # a folder named like a module file is not a module
    (tmp_path / "pkg" / "link.py").symlink_to(tmp_path / "pkg" / "mod.py")
    (tmp_path / "pkg" / "dangling.py").symlink_to(tmp_path / "pkg" / "missing.py")
    layout.forget_listings()
    layout.module_file.cache_clear()
    return tmp_path


@pytest.mark.parametrize(
    "module",
    [
        "pkg",
        "pkg.mod",
        "pkg.sub",
        "pkg.sub.deep",
        "pkg.sub.deep.name",
        "pkg.mod.name",
        "top",
        "top.x",
        "inner",
        "nopkg.plain",
        "pkg.trap",
        "pkg.link",
        "pkg.dangling",
        "pkg.missing",
        "torch",
        "torch.nn.functional",
        "pkg.sub.missing.deeper",
    ],
)
def test_module_file_answers_what_a_stat_of_each_candidate_answers(tree: Path, module: str) -> None:
    bases = (tree, tree / "src")
    assert layout.module_file(module, bases) == _plain_module_file(module, bases)


def test_a_restricted_site_packages_base_resolves_only_its_own_package(tree: Path) -> None:
    bases = (tree / "+pkg",)
    assert layout.module_file("pkg.mod", bases) == tree / "pkg" / "mod.py"
    assert layout.module_file("top", bases) is None


def test_listings_are_taken_again_by_the_next_run(tree: Path) -> None:
    bases = (tree,)
    assert layout.module_file("pkg.late", bases) is None
    (tree / "pkg" / "late.py").write_text("x = 1\n")
    assert layout.module_file("pkg.late", bases) is None  # within one run
    layout.forget_listings()
    assert layout.module_file("pkg.late", bases) == tree / "pkg" / "late.py"


def test_equal_search_bases_are_one_object(tree: Path) -> None:
    first = layout.search_bases(str(tree / "pkg" / "mod.py"))
    second = layout.search_bases(str(tree / "pkg" / "sub" / "deep.py"))
    assert first == second and first is second


def test_a_resolution_shared_between_modules_stops_at_each_ones_own_name(tmp_path: Path) -> None:
    """`a.f` re-exported from `b`: a module other than `b` gets b's summary; `b` itself answers its
    own names from its facts (None), even after another module's lookup filled the shared memo."""
    summaries = {
        "a": ModuleSummary("a", "a.py", exports={"f": "b.f"}),
        "b": ModuleSummary("b", "b.py", classes={"f": []}),
    }
    view = ProjectView(summaries)
    bases = (tmp_path,)
    other = view.for_module("c", bases)
    found = other._locate("a.f")
    assert found is not None and found[0] is summaries["b"] and found[1] == "f"
    own = view.for_module("b", bases)
    assert own._locate("a.f") is None
    assert other._locate("a.f") == found  # and the per-module answer did not replace the shared one


def test_rechecked_lookups_shared_between_modules_answer_as_each_module_alone(tmp_path: Path) -> None:
    """consulted_changed keeps each answer for the modules whose own name its resolution did not
    pass: `b` (which answers `a.f` from its own facts) and `c` (which gets b's class) each get
    their own answer, in either order, and a changed summary is seen through the kept answers."""
    before = {"a": ModuleSummary("a", "a.py", exports={"f": "b.f"}), "b": ModuleSummary("b", "b.py", classes={"f": []})}
    bases = (tmp_path,)
    recorded = {}
    for module in ("b", "c"):
        probe = ProjectView(before).for_module(module, bases)
        probe.is_class("a.f")
        probe.external_writes("b.K", "x")
        recorded[module] = dict(probe.consulted)
    assert recorded["b"] != recorded["c"]
    for order in (("b", "c"), ("c", "b")):
        view = ProjectView(before)
        assert not any(consulted_changed(recorded[m], view, m, bases, fresh=True) for m in order)
        swapped = ProjectView(before)
        assert consulted_changed(recorded["b"], swapped, "c", bases) and consulted_changed(
            recorded["c"], swapped, "b", bases
        )
    after = {**before, "b": ModuleSummary("b", "b.py", functions={}, classes={})}  # `f` is no class any more
    view = ProjectView(after)
    assert consulted_changed(recorded["c"], view, "c", bases)
    assert not consulted_changed(recorded["b"], view, "b", bases)  # b never looked into its own summary
    assert consulted_changed(recorded["c"], view, "c", bases)  # the kept answer, asked again


def test_lookups_into_files_are_asked_again_only_for_cached_answers(tmp_path: Path) -> None:
    """A consumer answer recorded in this run (``fresh``) reads files that cannot have changed since;
    one restored from the cache is asked again (here: no options to ask with, so it counts as changed)."""
    consulted = {"factory:pkg.make": "-"}
    view = ProjectView({})
    assert not consulted_changed(consulted, view, "m", (tmp_path,), fresh=True)
    assert consulted_changed(consulted, view, "m", (tmp_path,))


def _value(origin: int = 2) -> ValueSummary:
    return ValueSummary("SCALAR", origin)


def test_a_new_view_keeps_only_answers_that_no_replaced_summary_or_write_can_alter(tmp_path: Path) -> None:
    """``inherit``: after each change of summaries or writes, the view that keeps the previous view's
    answers tells changed lookups exactly as a view that asks everything again."""
    bases = (tmp_path,)
    a = ModuleSummary("a", "a.py", exports={"f": "b.f", "g": "c.g"})
    b = ModuleSummary("b", "b.py", functions={"f": _value()})
    c = ModuleSummary("c", "c.py", functions={"g": _value()}, classes={"K": ["x"]})
    d = ModuleSummary("d", "d.py", external_writes={"c.K.x": _value()})
    probe = ProjectView({"a": a, "b": b, "c": c}, writers=[a, b, c, d]).for_module("m", bases)
    probe.function("a.f"), probe.function("a.g"), probe.class_fields("c.K"), probe.external_writes("c.K", "x")
    recorded = {key: {key: answer} for key, answer in probe.consulted.items()}  # each lookup alone
    steps = [
        ({"a": a, "b": b, "c": c}, [a, b, c, d]),  # nothing changed
        ({"a": a, "b": ModuleSummary("b", "b.py"), "c": c}, [a, b, c, d]),  # b.f holds no pointer any more
        ({"a": a, "b": b, "c": c}, [a, b, c]),  # nobody writes into c.K.x
        (
            {"a": a, "b": b, "c": ModuleSummary("c", "c.py", functions={"g": _value(1)}, classes={"K": ["x"]})},
            [a, b, c],
        ),
        ({"a": ModuleSummary("a", "a.py", exports={"f": "c.g"}), "b": b, "c": c}, [a, b, c, d]),  # a re-export moved
    ]
    previous = None
    for summaries, writers in steps:
        kept = ProjectView(summaries, writers=writers)
        if previous is not None:
            kept.inherit(previous)
        answers = {key: consulted_changed(one, kept, "m", bases, fresh=True) for key, one in recorded.items()}
        assert answers == {
            key: consulted_changed(one, ProjectView(summaries, writers=writers), "m", bases, fresh=True)
            for key, one in recorded.items()
        }
        previous = kept
    assert any(answers.values()) and not all(answers.values())
