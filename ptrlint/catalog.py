"""The rule catalog: what a run knows of the rules before it analyses anything.

Each rule's metadata lives on its class (``ptrlint/rules/<module>.py``: code, name, message,
rationale, fix safety, examples). Choosing codes (``--select``, ``per-file-ignores``), naming them
in a report and answering from the cache need only each rule's code and name, and importing the
rules imports the whole analysis (about 100 ms, most of a warm single-file run). This catalog is
that index, importable alone: the rule classes are loaded when a module is analysed, or when their
documentation is asked for (SARIF, ``ptrlint rule``). ``tests/linter/test_registry.py`` checks the catalog against the
classes, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the classes are loaded on demand
    from .rules.base import Rule


@dataclass(frozen=True)
class RuleEntry:
    """One rule as the catalog knows it: its code and name (the class in ``ptrlint.rules`` says the rest)."""

    code: str
    name: str


# In code order, which is the order of reports and of SARIF's rule list.
CATALOG: tuple[RuleEntry, ...] = (
    RuleEntry("PTR001", "signed-pointer-dtype"),
    RuleEntry("PTR002", "implicit-pointer-dtype"),
    RuleEntry("PTR003", "narrow-pointer-dtype"),
    RuleEntry("PTR004", "signed-pointer-cast"),
    RuleEntry("PTR005", "pointer-setitem"),
    RuleEntry("PTR006", "ctypes-signed-pointer"),
    RuleEntry("PTR007", "signed-pointer-arithmetic"),
    RuleEntry("PTR008", "signed-pointer-sink"),
    RuleEntry("PTR009", "wrapped-pointer-unsigned"),
)
BY_CODE: dict[str, RuleEntry] = {entry.code: entry for entry in CATALOG}
CODES: tuple[str, ...] = tuple(BY_CODE)


def rule_name(code: str) -> str:
    """A code's rule name (the code itself for one the catalog does not know: E999, E902)."""
    entry = BY_CODE.get(code)
    return entry.name if entry is not None else code


def load_rules() -> "tuple[type[Rule], ...]":
    """Every rule's class, in code order (imports the rules, and with them the analysis)."""
    from .rules import ALL_RULES

    return ALL_RULES
