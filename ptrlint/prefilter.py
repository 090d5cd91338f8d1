"""The prefilter: a text test that rules out files that cannot hold a finding, before any parse."""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import Enum
from functools import lru_cache

from .addresses import ADDRESS_ATTRIBUTES, PREFILTER_TOKENS
from .catalog import site_methods, site_words
from .config import DEFAULT_POINTER_NAMES, Config
from .lexer import ProseMap, is_word_char, skip_space_ahead, skip_space_back
from .pointer_names import (
    POINTER_WORDS_REGEX,
    NamePatterns,
    prefilter_regex,
)

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WINDOW = 16  # characters of context around a literal; the longest pointer word is 11 (`_addresses_`)


class _Sites:
    """The sites of :func:`names.site_regex`, searched for faster: each word with ``str.find``
    (memchr speed; Python's regex engine tries the whole word alternation at every offset, about
    13 MB/s) and its word boundaries checked by hand, the cast methods with their own regex (it
    starts with a literal ``.``, which the engine finds fast). A word holding a character that is
    not a word character (a configured factory name that is no identifier) is searched with the
    regex. That regex stays the definition, in tests/linter/test_prefilter.py."""

    def __init__(self, factories: tuple[str, ...], codes: frozenset[str] | None = None) -> None:
        """The sites of the rules with ``codes`` (every rule: None), as each declares them."""
        words = [w for w in dict.fromkeys((*site_words(codes), *factories)) if w]
        self.words = tuple(w for w in words if _WORD.fullmatch(w))
        others = [w for w in words if not _WORD.fullmatch(w)]
        self.others = re.compile(rf"\b(?:{'|'.join(re.escape(w) for w in others)})\b") if others else None
        methods = site_methods(codes)
        self.methods = re.compile(rf"\.(?:\s|\\|#[^\n]*\n)*(?:{'|'.join(methods)})\b") if methods else None
        # Words that contain another word are found through it (`zeros_like` and `new_zeros` at
        # each `zeros`): 17 searches instead of 31 for the default words.
        keys: dict[str, list[tuple[str, int]]] = {}
        for word in self.words:
            inner = min((w for w in self.words if w != word and w in word), key=len, default=word)
            keys.setdefault(inner, []).append((word, word.index(inner)))
        self.keys = tuple((key, tuple(found)) for key, found in keys.items())
        self.longest = max((len(w) for w in self.words), default=0)

    def search(self, text: str, prose: _Prose) -> bool:
        """Whether a site stands in code (outside comments and multi-line strings). The text is
        searched in growing pieces, and each piece's candidates in text order, so a file whose
        first site is near its top is neither searched nor lexed much further."""
        keys, longest, methods, find = self.keys, self.longest, self.methods, text.find
        method = methods.search(text) if methods is not None else None
        start, size = 0, _FIRST_PIECE
        while start < len(text):
            end = min(len(text), start + size)
            found: list[int] = []
            for key, holders in keys:
                # every occurrence of a holder that starts in the piece has its key within this range
                at = find(key, start, end + longest)
                while at >= 0:
                    for word, offset in holders:
                        begin = at - offset
                        if begin < start or begin >= end or not text.startswith(word, begin):
                            continue
                        after = begin + len(word)
                        if (begin == 0 or not is_word_char(text[begin - 1])) and (
                            after == len(text) or not is_word_char(text[after])
                        ):
                            found.append(begin)
                    at = find(key, at + 1, end + longest)
            while method is not None and method.start() < end:
                found.append(method.start())
                # as finditer goes on: after the match
                method = methods.search(text, method.end()) if methods is not None else None
            for at in sorted(found):
                if not prose.of_text().is_prose(at):
                    return True
            start, size = end, size * 2
        if self.others is not None:
            return any(not prose.of_text().is_prose(m.start()) for m in self.others.finditer(text))
        return False


_FIRST_PIECE = 4096


_WORD = re.compile(r"\w+")


class _Kind(Enum):
    """Where a word that holds a pointer word is evidence."""

    ANYWHERE = 1  # a source word, a table name
    ATTRIBUTE = 2  # an address attribute named like a pointer: where it is read, or as a pointer name
    READ = 3  # an address attribute that the configured patterns do not call a pointer name
    PLACE = 4  # a pointer name: where it is called, bound, a field or a key
    NOWHERE = 5  # no pointer name (a look-alike, `ptrlint`)


# Address APIs spelled with a pointer word: sources of value evidence, never judged as names, so that a
# `pointer-names` setting (which replaces the name patterns) adds name evidence and never removes these.
ADDRESS_API_WORDS = frozenset(
    {
        "data_ptr",
        "getptr",
        "multicast_ptr",
        "buffer_ptrs",
        "buffer_ptrs_dev",
        "signal_pad_ptrs",
        "signal_pad_ptrs_dev",
        "device_ctypes_pointer",
    }
)


class _Evidence:
    """What counts as evidence, and where: the regex's matches (pointer words and the address
    catalogue's source words), the configured pointer-name patterns that are not the default, and
    the name patterns that decide whether a word stands where a name can be evidence."""

    def __init__(self, config: Config) -> None:
        extra = tuple(name.rpartition(".")[2].lower() for name in config.pointer_functions)
        self.regex = prefilter_regex(extra)
        self.custom = tuple(
            re.compile(p, re.IGNORECASE) for p in config.pointer_names if p not in DEFAULT_POINTER_NAMES
        )
        # every match of the regex contains one of these (lower-case) substrings
        self.literals = _innermost(("ptr", "pointer", "addr", "ctypes", "array_interface", *PREFILTER_TOKENS, *extra))
        self.sources = tuple(dict.fromkeys(("ctypes", "array_interface", *PREFILTER_TOKENS, *extra)))
        self.names = NamePatterns(config.pointer_names, config.lookalike_names)
        self._kinds: dict[str, _Kind] = {}  # each word's kind, asked once per process

    def at(self, lowered: str, start: int, prose: ProseMap | None = None) -> bool:
        """Whether the match at ``start`` can be evidence where it stands.

        A source word (``ctypes``, the array interfaces, the address catalogue, a configured pointer
        function) is evidence anywhere in code, an address attribute (``.ptr``, ``.buffer_ptrs``)
        wherever it is read. A pointer *word* is evidence only
        as a name the analysis reads as one (analysis/options.py and its callers): a table name
        (``src_ptrs``, ``addr_list``: a creation's data) wherever it stands; any other pointer name
        only where it names a creation or a getter: called (``get_addr(``, not ``def get_addr(``),
        assigned (``x_ptr =``, ``x_ptr :=``, a keyword ``x_ptr=``), a field (``x_ptr: int``) or a
        key (``{"x_ptr": ...}``, ``d["x_ptr"] = ...``). Elsewhere (``return x_ptr``,
        ``f(a, x_ptr)``, ``x_ptr.shape``, ``torch.addr``, ``import x_ptr``, ``f"{x_ptr}"``,
        ``'addr'``, a key ``{torch.addr: ...}`` on a line of its own, which ``prose`` tells from a
        field by the brackets open there) it names nothing a creation could be read through: a
        value read through a singular name has no evidence of its own, and one imported from
        another module reaches this one through the project index (a candidate's imports). A
        look-alike (``indptr``, ``num_ptrs``, ``master_addr``) is never a pointer name."""
        if POINTER_WORDS_REGEX.match(lowered, start) is None:
            return True  # a source word of the catalogue
        begin, end = _word_bounds(lowered, start)
        word = lowered[begin:end]
        if word in ADDRESS_API_WORDS:
            return True  # an address API (`t.data_ptr()`): a source whatever the configured name patterns say
        kind = self._kinds.get(word)
        if kind is None:
            kind = self._kinds[word] = self._kind(word)
        if kind is _Kind.PLACE:
            return _names_something(lowered, begin, end, prose)
        if kind is _Kind.ATTRIBUTE:  # cupy's `mem.ptr`, symmetric-memory handles (`h.multicast_ptr`)
            return _attribute(lowered, begin) or _names_something(lowered, begin, end, prose)
        if kind is _Kind.READ:
            return _attribute(lowered, begin)
        return kind is _Kind.ANYWHERE

    def counts(self, lowered: str, start: int, prose: ProseMap) -> bool:
        """Whether the regex's match at ``start`` is evidence: in code, where it stands (:meth:`at`),
        and inside a plain string only as a key (:meth:`key_at`)."""
        if not self.at(lowered, start, prose) or prose.is_prose(start):
            return False
        end = prose.string_end(start)
        return end is None or self.key_at(lowered, start, end)

    def _kind(self, word: str) -> _Kind:
        if any(s in word for s in self.sources):
            return _Kind.ANYWHERE  # a catalogue name (`cuMemAlloc`, `nvshmem_ptr`), a configured pointer function
        pointer = self.names.is_pointer_name(word)
        if pointer and self.names.is_table_name(word):
            return _Kind.ANYWHERE
        if word in _SOURCE_ATTRIBUTES:
            return _Kind.ATTRIBUTE if pointer else _Kind.READ
        return _Kind.PLACE if pointer else _Kind.NOWHERE

    def key_at(self, lowered: str, start: int, end: int) -> bool:
        """Whether the match at ``start``, inside a string literal that ends at ``end``, is a key that
        names a creation (``{"x_ptr": ...}``, ``d["x_ptr"] = ...``): a string is no name and no call
        (``hasattr(a, "__cuda_array_interface__")``, ``"torch.addr"``, ``'ctypes'``), and a key is
        evidence only as a whole pointer name."""
        begin, word_end = _word_bounds(lowered, start)
        if lowered[begin - 1 : begin] not in _QUOTES or lowered[word_end:end].strip(_QUOTES):
            return False  # not the whole string
        return lowered[skip_space_ahead(lowered, end) :][:1] in (":", "]") and self.names.is_pointer_name(
            lowered[begin:word_end]
        )


_WORD_REST = re.compile(r"\w*")
_SOURCE_ATTRIBUTES = frozenset({"ptr", *ADDRESS_ATTRIBUTES})
_QUOTES = "'\""


def _word_bounds(lowered: str, start: int) -> tuple[int, int]:
    """Where the word that holds offset ``start`` begins and ends."""
    begin = start
    while begin > 0 and is_word_char(lowered[begin - 1]):
        begin -= 1
    return begin, _WORD_REST.match(lowered, start).end()  # type: ignore[union-attr]  # `\w*` always matches


def _attribute(lowered: str, begin: int) -> bool:
    """The word at ``begin`` follows a ``.``: an attribute."""
    before = skip_space_back(lowered, begin)
    return before > 0 and lowered[before - 1] == "."


def _names_something(lowered: str, begin: int, end: int, prose: ProseMap | None = None) -> bool:
    """The word at ``lowered[begin:end]`` is called, bound, a field or a key (see :meth:`_Evidence.at`);
    ``prose``, the text's map, tells a statement from a line inside brackets."""
    before = skip_space_back(lowered, begin)
    for keyword in ("def", "class"):  # a definition's name: its calls and its fields are evidence, not it
        start = before - len(keyword)
        if (
            lowered.startswith(keyword, start)
            and before < begin
            and (start == 0 or not is_word_char(lowered[start - 1]))
        ):
            return False
    after = skip_space_ahead(lowered, end)
    quoted = after < len(lowered) and lowered[after] in _QUOTES
    if quoted:  # the end of a string: a key (`{"x_ptr": ...}`, `d["x_ptr"] = ...`)?
        quote = lowered[after]
        after = skip_space_ahead(lowered, after + (3 if lowered.startswith(quote * 3, after) else 1))
    follows = lowered[after : after + 2]
    if quoted:
        return follows[:1] in (":", "]")
    if follows[:1] in ("(", "#"):
        return True  # a call (a getter), or, unsure, a comment inside brackets
    if follows == ":=":
        return True  # a walrus target
    if follows[:1] == ":":  # an annotated target or a field, not a parameter's annotation, a key or a slice
        return _starts_statement(lowered, begin) and (prose is None or prose.in_brackets(begin) is not True)
    if follows[:1] == "=" and follows != "==":  # a target or a keyword, unless what it binds is a constant
        return _CONSTANT.match(lowered, after + 1) is None
    return False


# `= None`, `= 0`, `= "x"` up to the end of the value: no creation to name (`= None if a else b` is more)
_CONSTANT = re.compile(r"""[ \t]*(?:none|true|false|-?[0-9][0-9a-z_.]*|'[^'\\\n]*'|"[^"\\\n]*")[ \t]*(?:[,)\n;#]|$)""")


def _starts_statement(lowered: str, begin: int) -> bool:
    """The name (``x_ptr``, ``self.x_ptr``) at ``begin`` is the first thing of its statement."""
    before = begin
    while before > 0 and (is_word_char(lowered[before - 1]) or lowered[before - 1] == "."):
        before -= 1  # the object the name is an attribute of
    while before > 0 and lowered[before - 1] in " \t":
        before -= 1  # the indentation
    return before == 0 or lowered[before - 1] in "\n;:"


@lru_cache(maxsize=8)
def _prefilter_parts(config: Config, codes: frozenset[str] | None = None) -> tuple[_Evidence, _Sites]:
    return _Evidence(config), _Sites(_factory_words(config), codes)


def _innermost(literals: tuple[str, ...]) -> tuple[str, ...]:
    """The literals that hold no other one, where the other is found in its window: a match that
    holds ``getdevicepointer`` holds ``pointer``, and lies within ``_WINDOW`` characters of it, so
    searching ``pointer`` finds it (11 searches instead of 20 for the default words)."""
    kept: list[str] = []
    for literal in sorted(dict.fromkeys(literals), key=len):  # an inner literal is kept itself
        if not any(o in literal and len(literal) - len(o) <= _WINDOW for o in kept):
            kept.append(literal)
    return tuple(kept)


def _factory_words(config: Config) -> tuple[str, ...]:
    return tuple(f.rpartition(".")[2] for f in config.buffer_factories)


def prefilter(text: str, config: Config, codes: frozenset[str] | None = None) -> bool:
    """False only when the file cannot hold a finding of the rules with ``codes`` (any rule: None).

    Sound because every finding needs pointer evidence *and* a site, and both leave tokens in
    the code. Evidence counts only outside comments and multi-line strings (a word there leaves no
    name in the ast; see :mod:`.lexer`): value evidence needs a pointer source (``data_ptr``, ``.ctypes.data``,
    ``ctypes.addressof``/``ctypes.cast`` (both spell ``ctypes`` at the call or in the import),
    ``__array_interface__``/``__cuda_array_interface__``, ``caching_allocator_alloc``, known
    address attributes such as ``buffer_ptrs``, or a configured pointer function, whose last name
    we search for); name evidence needs a name matching ``pointer-names``. Every name the default
    patterns match holds ``ptr(s)``, ``pointer(s)``, ``addr(s)``, ``address(es)`` or one of their
    abbreviations as a ``_``-separated word, which the search covers case-insensitively
    (``data_ptr`` and pointer-named getters too), and counts where it stands as a name the analysis
    reads (called, assigned, a field or key, a table name; see :meth:`_Evidence.at`); configured
    patterns are tested against every identifier in the file; the constants of a wrap into int64 range
    (``1 << 63``, ``2**64``) are evidence too, since a module that spells one may define the wrap helper
    other modules call. Sites: the words and methods each rule
    declares (``Rule.site_words``, ``Rule.site_methods``, gathered in ptrlint/catalog.py) and the
    configured buffer factories; see the site regex of tests/linter/test_prefilter.py. (With the
    project index a module with evidence is analysed whatever its words: an argument of a compiled
    function whose Cython declaration the project holds is a site no word marks; PTR008.)
    """
    evidence, sites = _prefilter_parts(config, codes)
    prose = _Prose(text)
    return _has_evidence(text, evidence, prose) and _has_site(text, sites, prose)


def has_evidence(text: str, config: Config) -> bool:
    """The text holds a pointer source or a pointer-named identifier in code (see :func:`prefilter`)."""
    return evidence_and_site(text, config, site=False)[0]


def evidence_and_site(
    text: str, config: Config, evidence: bool = True, site: bool = True, codes: frozenset[str] | None = None
) -> tuple[bool, bool]:
    """Both answers (each only when asked), with one scan for the text's comments and strings."""
    parts, sites = _prefilter_parts(config, codes)
    prose = _Prose(text)
    found_evidence = evidence and _has_evidence(text, parts, prose)
    return found_evidence, site and _has_site(text, sites, prose)


class _Prose:
    """The prose map of a text and of its lower-cased copy, each scanned once and only if asked (one
    map serves both when ``lower()`` keeps the length, as it does but for a few non-ASCII letters)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        self._text_map: ProseMap | None = None
        self._lowered_map: ProseMap | None = None

    def of_text(self) -> ProseMap:
        if self._text_map is None:
            same = len(self.lowered) == len(self.text)
            self._text_map = self.of_lowered() if same else ProseMap(self.text)
        return self._text_map

    def of_lowered(self) -> ProseMap:
        if self._lowered_map is None:
            self._lowered_map = ProseMap(self.lowered)  # lower() keeps quotes, `#` and backslashes
        return self._lowered_map


def _has_evidence(text: str, evidence: _Evidence, prose: _Prose) -> bool:
    lowered = prose.lowered
    for token in evidence.literals:  # a match counts only in code; the scan stops at the first such match
        for start in _confirmed(lowered, evidence.regex, token):
            if evidence.counts(lowered, start, prose.of_lowered()):
                return True
    if evidence.custom:
        for ident in set(_IDENT.findall(text)):
            bare = ident.strip("_")
            if any(p.fullmatch(bare) for p in evidence.custom):
                return True
    return _has_wrap_idiom(text, prose)


# The constants of a wrap into int64 range (``p - (1 << 64) if p >= 1 << 63 else p``, ``p - 2**64``): a module
# that spells one may define a wrap helper that other modules call (project/summary.py: ``wrappers``), so
# its functions are summarised. Found from the operator (``<<``, ``**``) at memchr speed, confirmed here.
_WRAP_OPERATORS = ("<<", "**")
_WRAP_CONSTANT = re.compile(r"(?:1[ \t]*<<|2[ \t]*\*\*)\s*6[34]\b")


def _has_wrap_idiom(text: str, prose: _Prose) -> bool:
    for operator in _WRAP_OPERATORS:
        at = text.find(operator)
        while at >= 0:
            digit = at - 1
            while digit > 0 and text[digit] in " \t":
                digit -= 1
            match = _WRAP_CONSTANT.match(text, digit) if digit >= 0 else None
            if (
                match is not None
                and (digit == 0 or not is_word_char(text[digit - 1]))
                and not prose.of_text().is_prose(digit)
            ):
                return True
            at = text.find(operator, at + 2)
    return False


def _has_site(text: str, sites: _Sites, prose: _Prose) -> bool:
    return sites.search(text, prose)


def _confirmed(lowered: str, regex: re.Pattern[str], token: str) -> Iterator[int]:
    """Where the regex matches in the windows around each ``token``.

    Every match of the regex contains one of the literals, and none reaches more than _WINDOW
    characters beyond it, so the regex runs only in a window around each literal (found at memchr
    speed): a search over a whole file that fails costs a millisecond. `pos` keeps the text before
    the window as context for `\\b`, but `endpos` cuts the window's last word short (`ptrlint`
    ends as `ptr`), so each match found is confirmed on the whole text at its start."""
    at = lowered.find(token)
    while at >= 0:
        end = at + len(token) + _WINDOW
        match = regex.search(lowered, max(0, at - _WINDOW), end)
        while match is not None:
            if regex.match(lowered, match.start()) is not None:
                yield match.start()
            match = regex.search(lowered, match.start() + 1, end)
        at = lowered.find(token, at + 1)
