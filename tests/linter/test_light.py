"""Light summaries: the classes and dataclass fields of a module read without parsing it, checked
against what its tree says (what the analysis reports once the module is analysed)."""

from __future__ import annotations

import ast

import pytest

from ptrlint.project.light import light_summary

DOCSTRING = '''from dataclasses import dataclass


@dataclass
class Spec:
    """A constraint.
    Args:
        input_idx: the index of the input.
offsets: a line at column 0 inside the docstring.
    """

    input_idx: int
    dim_idx: int = 0
'''
SINGLE_QUOTED_DOC = "@dataclass\nclass S:\n    '''Fields:\n    a: int\n    '''\n    b: int\n    c: 'str' = \"x\"\n"
ONE_LINE_DOC = '@dataclass\nclass S:\n    """One line: no fields."""\n    a: int\n    b: int\n'
DEFAULT_STRING = '@dataclass\nclass S:\n    a: str = """\n    not_a_field: int\n    """\n    b: int\n'
NAMED_TUPLE = 'class P(NamedTuple):\n    """\n    x: the x.\n    """\n    x: int\n    y: int\n'
CLASSVAR = "@dataclass(frozen=True)\nclass C:\n    n: ClassVar[int] = 1\n    m: int\n"
PLAIN = 'class Plain:\n    """\n    a: doc\n    """\n    a: int\n'


def _tree_fields(text: str) -> dict[str, list[str]]:
    """Top-level classes and, for dataclasses and NamedTuples, their annotated fields in order."""
    out: dict[str, list[str]] = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.ClassDef):
            continue
        record = any("dataclass" in ast.unparse(d) for d in node.decorator_list) or any(
            "NamedTuple" in ast.unparse(b) for b in node.bases
        )
        out[node.name] = [
            s.target.id
            for s in node.body
            if record
            and isinstance(s, ast.AnnAssign)
            and isinstance(s.target, ast.Name)
            and "ClassVar" not in ast.unparse(s.annotation)
        ]
    return out


@pytest.mark.parametrize(
    "text, expected",
    [
        (DOCSTRING, {"Spec": ["input_idx", "dim_idx"]}),
        (SINGLE_QUOTED_DOC, {"S": ["b", "c"]}),
        (ONE_LINE_DOC, {"S": ["a", "b"]}),
        (DEFAULT_STRING, {"S": ["a", "b"]}),
        (NAMED_TUPLE, {"P": ["x", "y"]}),
        (CLASSVAR, {"C": ["m"]}),
        (PLAIN, {"Plain": []}),
    ],
)
def test_fields_are_the_trees(text, expected):
    assert _tree_fields(text) == expected
    assert light_summary(text, "m", False, "m.py").classes == expected
