"""Name evidence: the words that say "address" and "a table of them", the configured pointer-name
and look-alike patterns (:class:`NamePatterns`), and the prefilter's text of pointer words and address
sources. Imports only the address catalogue."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .addresses import PREFILTER_TOKENS

# Every default pointer name ends in one of these words, as do `data_ptr` and `c_void_p`-free
# address helpers; `ctypes` covers `.ctypes.data`, `ctypes.addressof` and `ctypes.cast` (the
# module is named at the call or in its import).
_POINTER_WORDS = r"(?:\b|_)(?:ptrs?|pointers?|addrs?|address(?:es)?|[rldhvp]addrs?|[dh]ptrs?|devptrs?)(?:_|\b)"
_POINTER_SOURCE_TOKENS = ("ctypes", "array_interface", *PREFILTER_TOKENS)  # the address catalogue's words


# The `_`-separated words that say "address" (abbreviations included) and "a table of them".
POINTER_WORDS = frozenset(
    {
        "ptr",
        "pointer",
        "addr",
        "address",
        "raddr",
        "laddr",
        "daddr",
        "haddr",
        "vaddr",
        "paddr",
        "dptr",
        "hptr",
        "devptr",
    }
)
PLURAL_POINTER_WORDS = frozenset(
    {
        "ptrs",
        "pointers",
        "addrs",
        "addresses",
        "raddrs",
        "laddrs",
        "daddrs",
        "haddrs",
        "vaddrs",
        "paddrs",
        "dptrs",
        "hptrs",
        "devptrs",
    }
)
NOT_GETTER_WORDS = frozenset(
    {
        "from",
        "to",
        "for",
        "by",
        "at",
        "of",
        "as",
        "into",
        "with",
        "is",
        "has",
        "set",
        "free",
        "release",
        "register",
        "unregister",
        "check",
        "validate",
        "map",
        "unmap",
        "print",
        "dump",
        "format",
        "parse",
        "read",
        "write",
        "load",
        "store",
        "copy",
        "make",
        "wrap",
    }
)
COLLECTION_WORDS = frozenset(
    {
        "list",
        "lists",
        "table",
        "tables",
        "array",
        "arr",
        "arrays",
        "buf",
        "buffer",
        "buffers",
        "tensor",
        "tensors",
        "vec",
        "vector",
        "staging",
        "map",
        "set",
    }
)


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
        if not words:
            return False
        ends = words[-1] in POINTER_WORDS or words[-1] in PLURAL_POINTER_WORDS
        # `get_buffer_ptrs_host()`, `get_kv_ptrs_for_layer()`: a getter of a table, named anywhere in the name
        table_getter = words[0] == "get" and any(w in PLURAL_POINTER_WORDS for w in words[1:])
        if not ends and not table_getter:
            return False
        return not NOT_GETTER_WORDS.intersection(words) and name != "data_ptr" and self.is_pointer_name(name)


POINTER_WORDS_REGEX = re.compile(_POINTER_WORDS, re.IGNORECASE)  # the regex's pointer words alone


def prefilter_regex(extra_tokens: tuple[str, ...] = ()) -> re.Pattern[str]:
    """Text that every file with a possible finding contains (see engine.prefilter)."""
    tokens = [_POINTER_WORDS, *(re.escape(t) for t in (*_POINTER_SOURCE_TOKENS, *extra_tokens) if t)]
    return re.compile("|".join(tokens), re.IGNORECASE)
