"""The analysis options derived from the configuration (name evidence: :class:`ptrlint.pointer_names.NamePatterns`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from ..pointer_names import NamePatterns

if TYPE_CHECKING:
    from ..config import Config


@dataclass
class AnalysisOptions:
    names: NamePatterns
    buffer_factories: frozenset[str]
    pointer_functions: frozenset[str]  # qualified names or bare names; matched on the last name too
    int64_consumers: tuple[str, ...] = ()  # qualified-name patterns of calls that need int64 tables
    uint64_consumers: tuple[str, ...] = ()  # ... and of calls known to take uint64 tables

    @property
    def pointer_function_names(self) -> frozenset[str]:
        return frozenset(f.rpartition(".")[2] for f in self.pointer_functions)


@lru_cache(maxsize=8)
def analysis_options(config: Config) -> AnalysisOptions:
    """The options the analysis needs, derived once from a configuration."""
    return AnalysisOptions(
        names=NamePatterns(config.pointer_names, config.lookalike_names),
        buffer_factories=frozenset(config.buffer_factories),
        pointer_functions=frozenset(config.pointer_functions),
        int64_consumers=config.int64_consumers,
        uint64_consumers=config.uint64_consumers,
    )
