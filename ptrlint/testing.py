"""Helpers shared by the test suite and the reliability sweep (stdlib only)."""

from __future__ import annotations

import difflib
import io
import re
import tokenize

from .names import SIGNED64_DTYPES

OLD_DTYPE_TOKENS = {
    "int64",
    "long",
    "intp",
    "longlong",
    "int_",
    "int",
    "int32",
    "int16",
    "short",
    "int8",
    "uint32",
    "uint16",
    "uint8",
    "float",
    "float32",
    "float64",
    "double",
    "float16",
    "half",
    "bfloat16",
    "intc",
    "uintc",
    "single",
    "c_long",
    "c_int64",
    "c_longlong",
    "c_ssize_t",
    "c_int",
    "c_int32",
    "c_int16",
    "c_int8",
    "c_short",
    "c_byte",
    "c_uint",
    "c_uint32",
    "c_uint16",
    "c_uint8",
    "c_ushort",
    "c_ubyte",
    "c_double",
    "c_float",
}
NEW_TOKENS = {
    "uint64",
    "c_uint64",
    "dtype",
    "=",
    ",",
    ".",
    "(",
    ")",
    "to",
    "view",
    "tensor",
    "astype",
    "&",
    "0xFFFF_FFFF_FFFF_FFFF",
    "0",
    "xFFFF_FFFF_FFFF_FFFF",
}  # bit-preserving fixes: `.view(torch.int64)`; PTR005: `torch.tensor(p,
# dtype=...)`; PTR007: `np.uint64(p) + ids.astype(np.uint64)`
SIGNED_VIEW_TOKENS = {q.rpartition(".")[2] for q in SIGNED64_DTYPES} | {"int"}  # what a bit-preserving view hands on
LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT}


def tokens(source: bytes) -> list[tuple[int, str]]:
    try:
        return [(t.type, t.string) for t in tokenize.tokenize(io.BytesIO(source).readline) if t.type not in LAYOUT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+|[rRbBuU]*'[^'\n]*'|[rRbBuU]*\"[^\"\n]*\"|\S")


def only_dtype_edits(before: bytes, after: bytes) -> str | None:
    """None when every token-level change is a dtype/ctypes token or a needed name; else a reason.

    Lines are aligned first and tokens are compared only inside each changed group of lines, so
    a repeated statement cannot pair an inserted token with an unrelated one elsewhere.
    """
    a = tokens(before)
    alias_names = {s for t, s in a if t == tokenize.NAME}
    # `from torch import long as i64`: the alias spells a dtype too, so replacing it is a dtype edit
    dtype_aliases = {
        a[i + 2][1]
        for i in range(len(a) - 2)
        if a[i][1] in OLD_DTYPE_TOKENS and a[i + 1][1] == "as" and a[i + 2][0] == tokenize.NAME
    }
    old_lines = before.decode("utf-8", "replace").splitlines()
    new_lines = after.decode("utf-8", "replace").splitlines()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if i2 - i1 == j2 - j1:  # the same number of lines: each line changed in place
            groups = [([old_lines[i]], [new_lines[j]]) for i, j in zip(range(i1, i2), range(j1, j2))]
        else:  # lines were added (a keyword argument on its own line): compare the group
            groups = [(old_lines[i1:i2], new_lines[j1:j2])]
        for old_group, new_group in groups:
            reason = _token_changes(old_group, new_group, alias_names, dtype_aliases)
            if reason:
                return reason
    return None


def _token_changes(
    old_group: list[str], new_group: list[str], alias_names: set[str], dtype_aliases: set[str]
) -> str | None:
    old_tokens = _TOKEN.findall("\n".join(old_group))
    new_tokens = _TOKEN.findall("\n".join(new_group))
    for tag, k1, k2, m1, m2 in difflib.SequenceMatcher(a=old_tokens, b=new_tokens, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for s in old_tokens[k1:k2]:
            if (
                s not in OLD_DTYPE_TOKENS
                and s not in dtype_aliases
                and s not in ("(", ")")
                and not _dtype_string(s)
                and not _type_codes(s)
            ):
                return f"removed {s!r}"
        for s in new_tokens[m1:m2]:
            if (
                s in NEW_TOKENS
                or s in SIGNED_VIEW_TOKENS
                or s.strip("'\"") in ("uint64", "int64")
                or s in alias_names
                or _type_codes(s)
            ):
                continue
            return f"inserted {s!r}"
    return None


_TYPE_CODES = re.compile(r"""[rRbB]?(['"])[@=<>!]?[0-9xcbB?hHiIlLqQnNefdspP ]+\1""")


def _type_codes(s: str) -> bool:
    """A quoted ``array``/``struct`` type-code string (PTR008 turns ``q`` into ``Q``)."""
    return _TYPE_CODES.fullmatch(s) is not None


def _dtype_string(s: str) -> bool:
    return len(s) >= 2 and s[0] in "'\"" and s.strip("'\"") in OLD_DTYPE_TOKENS | {"i8", "<i8", "i4", "f8", "f4"}


_MARKER = re.compile(r"#\s*expect:\s*(PTR\d{3}(?:\s*,\s*PTR\d{3})*)\s*")


def expected_markers(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` for every ``# expect: PTR001[,PTR002]`` comment (the corpus marker format)."""
    out: list[tuple[int, str]] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and "expect:" in tok.string:
            match = _MARKER.fullmatch(tok.string)
            if match is None:
                raise ValueError(f"malformed marker on line {tok.start[0]}: {tok.string!r}")
            out.extend((tok.start[0], code.strip()) for code in match.group(1).split(","))
    return out
