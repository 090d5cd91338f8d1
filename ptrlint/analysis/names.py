"""Name evidence and the analysis options derived from the configuration."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence


class NamePatterns:
    """Name evidence: configured pointer-name and look-alike patterns (full match, case-insensitive)."""

    def __init__(self, pointer: Sequence[str], lookalike: Sequence[str]) -> None:
        self.pointer = [re.compile(p, re.IGNORECASE) for p in pointer]
        self.lookalike = [re.compile(p, re.IGNORECASE) for p in lookalike]

    def is_pointer_name(self, name: str) -> bool:
        bare = name.strip("_")
        if not bare or not any(p.fullmatch(bare) for p in self.pointer):
            return False
        return not any(p.fullmatch(bare) for p in self.lookalike)


@dataclass
class AnalysisOptions:
    names: NamePatterns
    buffer_factories: frozenset[str]
    pointer_functions: frozenset[str]  # qualified names or bare names; matched on the last name too

    @property
    def pointer_function_names(self) -> frozenset[str]:
        return frozenset(f.rpartition(".")[2] for f in self.pointer_functions)
