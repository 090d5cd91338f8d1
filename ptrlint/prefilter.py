"""The prefilter: a text test that rules out files that cannot hold a finding, before any parse."""

from __future__ import annotations

import re
from functools import lru_cache

from .addresses import PREFILTER_TOKENS
from .config import DEFAULT_POINTER_NAMES, Config
from .names import prefilter_regex, site_regex

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WINDOW = 16  # characters of context around a literal; the longest pointer word is 11 (`_addresses_`)


@lru_cache(maxsize=8)
def _prefilter_parts(config: Config) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...], tuple[str, ...], re.Pattern[str]]:
    extra = tuple(name.rpartition(".")[2].lower() for name in config.pointer_functions)
    custom_names = tuple(re.compile(p, re.IGNORECASE) for p in config.pointer_names if p not in DEFAULT_POINTER_NAMES)
    # every match of the regex contains one of these (lower-case) substrings
    literals = ("ptr", "pointer", "addr", "ctypes", "array_interface", *PREFILTER_TOKENS, *extra)
    sites = site_regex(tuple(f.rpartition(".")[2] for f in config.buffer_factories))
    return prefilter_regex(extra), custom_names, literals, sites


def prefilter(text: str, config: Config) -> bool:
    """False only when the file cannot hold a finding.

    Sound because every finding needs pointer evidence *and* a site, and both leave tokens in
    the text. Evidence: value evidence needs a pointer source (``data_ptr``, ``.ctypes.data``,
    ``ctypes.addressof``/``ctypes.cast`` (both spell ``ctypes`` at the call or in the import),
    ``__array_interface__``/``__cuda_array_interface__``, ``caching_allocator_alloc``, known
    address attributes such as ``buffer_ptrs``, or a configured pointer function, whose last name
    we search for); name evidence needs a name matching ``pointer-names``. Every name the default
    patterns match holds ``ptr(s)``, ``pointer(s)``, ``addr(s)``, ``address(es)`` or one of their
    abbreviations as a ``_``-separated word, which the search covers case-insensitively
    (``data_ptr`` and pointer-named getters too); configured patterns are tested against every
    identifier in the file. Sites: see ``names.site_regex``
    (creation calls, buffer factories, casts, ctypes wrappers, torch tensors for element writes).
    """
    return has_evidence(text, config) and has_site(text, config)


def has_evidence(text: str, config: Config) -> bool:
    """The text holds a pointer source or a pointer-named identifier (see :func:`prefilter`)."""
    regex, custom, literals, _sites = _prefilter_parts(config)
    return _has_evidence(text, regex, custom, literals)


def has_site(text: str, config: Config) -> bool:
    """The text holds a place where a finding can be reported (see :func:`prefilter`).

    With the project index, a file with a site but no evidence of its own is analysed when its
    imports reach evidence in other modules, or other modules write addresses into its classes.
    """
    return _prefilter_parts(config)[3].search(text) is not None


def _has_evidence(text: str, regex: re.Pattern[str], custom: tuple[re.Pattern[str], ...], literals: tuple[str, ...]) -> bool:
    lowered = text.lower()
    # Every match of the regex contains one of the literals, and none reaches more than _WINDOW
    # characters beyond it, so the regex runs only in a window around each literal (found at
    # memchr speed): a search over a whole file that fails costs a millisecond. `pos` keeps the
    # text before the window as context for `\b`, but `endpos` cuts the window's last word short
    # (`ptrlint` ends as `ptr`), so each match found is confirmed on the whole text at its start.
    for token in literals:
        at = lowered.find(token)
        while at >= 0:
            end = at + len(token) + _WINDOW
            found = regex.search(lowered, max(0, at - _WINDOW), end)
            while found is not None:
                if regex.match(lowered, found.start()) is not None:
                    return True
                found = regex.search(lowered, found.start() + 1, end)
            at = lowered.find(token, at + 1)
    if custom:
        for ident in set(_IDENT.findall(text)):
            bare = ident.strip("_")
            if any(p.fullmatch(bare) for p in custom):
                return True
    return False
