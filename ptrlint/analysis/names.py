"""Name evidence and the analysis options derived from the configuration."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from ..config import Config


# The `_`-separated words that say "address" (abbreviations included) and "a table of them".
POINTER_WORDS = frozenset({"ptr", "pointer", "addr", "address", "raddr", "laddr", "daddr", "haddr", "vaddr", "paddr",
                           "dptr", "hptr", "devptr"})
PLURAL_POINTER_WORDS = frozenset({"ptrs", "pointers", "addrs", "addresses", "raddrs", "laddrs", "daddrs", "haddrs",
                                  "vaddrs", "paddrs", "dptrs", "hptrs", "devptrs"})
NOT_GETTER_WORDS = frozenset({"from", "to", "for", "by", "at", "of", "as", "into", "with", "is", "has", "set", "free",
                              "release", "register", "unregister", "check", "validate", "map", "unmap", "print",
                              "dump", "format", "parse", "read", "write", "load", "store", "copy", "make", "wrap"})
COLLECTION_WORDS = frozenset({"list", "lists", "table", "tables", "array", "arr", "arrays", "buf", "buffer", "buffers",
                              "tensor", "tensors", "vec", "vector", "staging", "map", "set"})


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

    @staticmethod
    def is_table_name(name: str) -> bool:
        """``src_ptrs``, ``peer_addresses``, ``_pending_ptr_list``: many addresses, not one (``weight_ptr``)."""
        words = [w for w in name.lower().split("_") if w]
        for i, word in enumerate(words):
            if word in PLURAL_POINTER_WORDS:
                return True
            if word in POINTER_WORDS and i + 1 < len(words) and words[i + 1] in COLLECTION_WORDS:
                return True
        return False

    def is_getter_name(self, name: str) -> bool:
        """A callee whose name ends in a pointer word returns addresses (``get_remote_addr``,
        ``device_buffer_ptr``), unless the name says it takes one (``tensor_from_pointer``), tests
        one (``is_valid_ptr``) or acts on one (``free_ptr``)."""
        words = [w for w in name.lower().split("_") if w]
        if not words or (words[-1] not in POINTER_WORDS and words[-1] not in PLURAL_POINTER_WORDS):
            return False
        return not NOT_GETTER_WORDS.intersection(words) and name != "data_ptr" and self.is_pointer_name(name)


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
def analysis_options(config: "Config") -> AnalysisOptions:
    """The options the analysis needs, derived once from a configuration."""
    return AnalysisOptions(
        names=NamePatterns(config.pointer_names, config.lookalike_names),
        buffer_factories=frozenset(config.buffer_factories),
        pointer_functions=frozenset(config.pointer_functions),
        int64_consumers=config.int64_consumers,
        uint64_consumers=config.uint64_consumers,
    )
