"""The rewrite engine: fix intents applied on libcst's tree, turned into minimal text edits.

libcst parses the file (only files that get a fix applied or shown pay for it); each intent
finds its node by position (libcst's own positions, converted to character offsets), builds the
changed node with libcst, and the edit is the part of the node's code that changed. Layout,
comments and trailing commas are libcst's to keep: the new node is the old node with changes.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Callable

import libcst as cst
from libcst._nodes.internal import CodegenState  # what Module.code_for_node uses, with an indent stack
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..findings import Edit, Intent
from ..lexer import statement_starts

_NEWLINE = re.compile(r"\r\n|\r|\n")
_TARGETS: dict[str, tuple[type[cst.CSTNode], ...]] = {
    "rename_attribute": (cst.Attribute,),
    "replace_name": (cst.Name,),
    "replace_string": (cst.SimpleString,),
    "append_keyword": (cst.Call,),
    "replace_method_call": (cst.Call,),
    "add_import_name": (cst.ImportFrom,),
    "append_view": (cst.Call,),
    "view_receiver": (cst.Call,),
    "wrap_uint64_tensor": (
        cst.Call,
        cst.Name,
        cst.Attribute,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Integer,
        cst.IfExp,
        cst.UnaryOperation,
    ),
    "wrap_call": (
        cst.Call,
        cst.Name,
        cst.Attribute,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Integer,
        cst.IfExp,
        cst.UnaryOperation,
    ),
    "append_astype": (cst.Call, cst.Name, cst.Attribute, cst.Subscript),
    "replace_expression": (cst.IfExp, cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString),
    "mask_uint64": (
        cst.Call,
        cst.Name,
        cst.Attribute,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Integer,
        cst.IfExp,
        cst.UnaryOperation,
    ),
}


class RewriteError(Exception):
    """An intent whose node is not where the analysis saw it (the fix is dropped, never guessed)."""


class _Tree(cst.CSTVisitor):
    """A file's libcst module, with the character offsets and block indentation of every node
    an intent may target (one traversal)."""

    METADATA_DEPENDENCIES = (PositionProvider,)
    _KINDS = (
        cst.Attribute,
        cst.Name,
        cst.SimpleString,
        cst.Call,
        cst.ImportFrom,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Integer,
        cst.IfExp,
        cst.UnaryOperation,
    )

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.module = cst.parse_module(text)
        self.offsets = _Offsets(text)
        self.by_span: dict[tuple[type, int, int], cst.CSTNode] = {}
        self.indent_of: dict[int, str] = {}  # id(node) -> indentation of the block holding it
        self._indents: list[str] = []
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = wrapper.resolve(PositionProvider)
        wrapper.visit(self)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._indents.append(self.module.default_indent if node.indent is None else node.indent)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._indents.pop()

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self._KINDS):
            self.by_span.setdefault((type(node), *self.offsets.of(self.positions[node])), node)
            self.indent_of[id(node)] = "".join(self._indents)
        return super().on_visit(node)

    def code(self, node: cst.CSTNode, indent: str) -> str:
        """``node``'s code as the module prints it inside a block indented by ``indent``
        (``Module.code_for_node`` prints continuation lines as if at the top level)."""
        state = CodegenState(
            self.module.default_indent, self.module.default_newline, indent_tokens=[indent] if indent else []
        )
        node._codegen(state)
        return "".join(state.tokens)

    def line_indent(self, node: cst.CSTNode) -> str:
        """Leading whitespace of the physical line on which ``node`` starts."""
        line = self.positions[node].start.line
        start = self.offsets.starts[line - 1]
        end = start
        while end < len(self.text) and self.text[end] in " \t":
            end += 1
        return self.text[start:end]


class _Offsets:
    """libcst (line, column) -> character offsets. Like CPython's tokenizer, libcst restarts the
    column after a form feed in a line's leading whitespace, so columns count from past it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def _base(self, line: int) -> int:
        start = self.starts[line - 1]
        i = base = start
        while i < len(self.text) and self.text[i] in " \t\x0c":
            if self.text[i] == "\x0c":
                base = i + 1
            i += 1
        return base

    def of(self, rng: CodeRange) -> tuple[int, int]:
        return self._base(rng.start.line) + rng.start.column, self._base(rng.end.line) + rng.end.column


def render(text: str, intents: Iterable[Intent]) -> dict[Intent, Edit | None]:
    """The text edit of every intent (None where the intent cannot be applied). Raises
    libcst.ParserSyntaxError when libcst cannot parse the file.

    libcst parses only the top-level statements that hold an intent
    (:func:`ptrlint.lexer.statement_starts`), joined into one text; where that does not parse, each
    on its own, and a statement libcst cannot parse alone is rendered on the whole text instead."""
    wanted = sorted(set(intents))
    if not wanted:
        return {}
    starts = statement_starts(text)
    pieces: dict[tuple[int, int], list[Intent]] = {}
    for intent in wanted:
        at = bisect.bisect_right(starts, intent.start) - 1
        begin, end = starts[at], (starts[at + 1] if at + 1 < len(starts) else len(text))
        if intent.end > end:  # not within one statement: the whole text
            begin, end = 0, len(text)
        pieces.setdefault((begin, end), []).append(intent)
    line_starts = _Offsets(text).starts
    out: dict[Intent, Edit | None] = {}
    whole: list[Intent] = pieces.pop((0, len(text)), [])
    spans = sorted(pieces)
    joined, bases = _joined(text, spans)
    try:  # one parse for all of them (libcst's fixed cost per parse is most of a small statement's)
        tree: _Tree | None = _Tree(joined) if spans else None
    except cst.ParserSyntaxError:
        tree = None
    for span, base in zip(spans, bases):
        group = pieces[span]
        if tree is not None:
            out.update(_render_on(tree, group, base, line_starts))
            continue
        try:
            alone = _Tree(text[span[0] : span[1]])
        except cst.ParserSyntaxError:
            whole.extend(group)
            continue
        out.update(_render_on(alone, group, span[0], line_starts))
    if whole:
        out.update(_render_on(_Tree(text), sorted(whole), 0, line_starts))
    return out


def _joined(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[int]]:
    """The statements at ``spans`` one after another (each ending its line), and for each, what to
    add to an offset in the joined text to get the offset in ``text``."""
    parts: list[str] = []
    bases: list[int] = []
    at = 0
    for begin, end in spans:
        piece = text[begin:end]
        if not piece.endswith(("\n", "\r")):
            piece += "\n"
        parts.append(piece)
        bases.append(begin - at)
        at += len(piece)
    return "".join(parts), bases


def _render_on(tree: _Tree, intents: list[Intent], base: int, line_starts: list[int]) -> dict[Intent, Edit | None]:
    """Render ``intents`` on ``tree``, a text whose offset ``o`` is the rendered text's ``o + base``."""
    out: dict[Intent, Edit | None] = {}
    for intent in intents:
        local = replace(intent, start=intent.start - base, end=intent.end - base) if base else intent
        try:
            node = _find(tree, local)
            edit = _edit(tree, local, node, _apply(local, node, tree))
        except RewriteError:
            out[intent] = None
            continue
        start, end = edit.start + base, edit.end + base
        out[intent] = Edit(start, end, edit.text, _position(line_starts, start), _position(line_starts, end))
    return out


def _position(line_starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = bisect.bisect_right(line_starts, offset)
    return line, offset - line_starts[line - 1] + 1


def _find(tree: _Tree, intent: Intent) -> cst.CSTNode:
    for kind in _TARGETS[intent.action]:
        node = tree.by_span.get((kind, intent.start, intent.end))
        if node is not None:
            return node
    raise RewriteError(f"no {intent.action} target at {intent.start}-{intent.end}")


def _apply(intent: Intent, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """The node with one intent applied (each action's rule below; ``findings.Intent`` lists them)."""
    action = _ACTIONS.get(intent.action)
    if action is None:
        raise RewriteError(f"unknown intent {intent.action!r}")
    return action(intent.value, node, tree)


def _rename_attribute(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.Attribute)
    return node.with_changes(attr=cst.Name(value))


def _replace_name(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.Name)
    return cst.parse_expression(value).with_changes(lpar=node.lpar, rpar=node.rpar)


def _replace_string(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.SimpleString)
    return node.with_changes(value=f"{node.prefix}{node.quote}{value}{node.quote}")


def _append_keyword_action(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.Call)
    return _append_keyword(node, value, tree)


def _replace_method_call(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return node.with_changes(
        func=node.func.with_changes(attr=cst.Name("to")),
        whitespace_before_args=cst.SimpleWhitespace(""),
        args=[cst.Arg(cst.parse_expression(value))],
    )


def _append_view(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`torch.tensor(xs, dtype=torch.uint64)` -> `... .view(torch.int64)`."""
    assert isinstance(node, cst.Call)
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("view")), args=[cst.Arg(cst.parse_expression(value))])


def _view_receiver(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`table.numpy()` -> `table.view(torch.uint64).numpy()`."""
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    receiver = cst.Call(
        func=cst.Attribute(value=node.func.value, attr=cst.Name("view")), args=[cst.Arg(cst.parse_expression(value))]
    )
    return node.with_changes(func=node.func.with_changes(value=receiver))


def _uint64_tensor(alias: str, inner: cst.BaseExpression) -> cst.Call:
    """`{alias}.tensor(inner, dtype={alias}.uint64)`."""
    return cst.Call(
        func=cst.Attribute(value=cst.parse_expression(alias), attr=cst.Name("tensor")),
        args=[
            cst.Arg(inner, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(
                cst.parse_expression(f"{alias}.uint64"),
                keyword=cst.Name("dtype"),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            ),
        ],
    )


def _wrap_uint64_tensor(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`p` -> `torch.tensor(p, dtype=torch.uint64)` (value: the torch alias)."""
    assert isinstance(node, cst.BaseExpression)
    inner = node.with_changes(lpar=[], rpar=[]) if node.lpar else node
    return _uint64_tensor(value, inner).with_changes(lpar=node.lpar, rpar=node.rpar)


def _wrap_call(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`p` -> `np.uint64(p)` (value: the callee)."""
    assert isinstance(node, cst.BaseExpression)
    inner = node.with_changes(lpar=[], rpar=[]) if node.lpar else node
    call = cst.Call(func=cst.parse_expression(value), args=[cst.Arg(inner)])
    return call.with_changes(lpar=node.lpar, rpar=node.rpar)


def _replace_expression(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """Any expression -> the text in value (`cond_dtype` -> `torch.uint64`)."""
    assert isinstance(node, cst.BaseExpression)
    return cst.parse_expression(value).with_changes(lpar=node.lpar, rpar=node.rpar)


def _mask_uint64(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`w` -> `w & 0xFFFF_FFFF_FFFF_FFFF` (value: the mask): the raw address again; value "mask;torch": a
    torch element store, `torch.tensor(w & mask, dtype=torch.uint64)` (any release)."""
    assert isinstance(node, cst.BaseExpression)
    mask, _, alias = value.partition(";")
    atomic = isinstance(node, (cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.Integer)) or bool(node.lpar)
    left = node if atomic else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    masked = cst.BinaryOperation(left=left, operator=cst.BitAnd(), right=cst.Integer(mask))
    return _uint64_tensor(alias, masked) if alias else masked


def _append_astype(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    """`ids` -> `ids.astype(np.uint64)` (value: the dtype)."""
    assert isinstance(node, cst.BaseExpression)
    return cst.Call(
        func=cst.Attribute(value=node, attr=cst.Name("astype")), args=[cst.Arg(cst.parse_expression(value))]
    )


def _add_import_name(value: str, node: cst.CSTNode, tree: _Tree) -> cst.CSTNode:
    assert isinstance(node, cst.ImportFrom)
    if isinstance(node.names, cst.ImportStar) or not node.names:
        raise RewriteError("star import")
    names = list(node.names)
    last = names[-1]
    names[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    names.append(cst.ImportAlias(name=cst.Name(value), comma=last.comma))
    return node.with_changes(names=names)


_ACTIONS: dict[str, Callable[[str, cst.CSTNode, _Tree], cst.CSTNode]] = {
    "rename_attribute": _rename_attribute,
    "replace_name": _replace_name,
    "replace_string": _replace_string,
    "append_keyword": _append_keyword_action,
    "replace_method_call": _replace_method_call,
    "append_view": _append_view,
    "view_receiver": _view_receiver,
    "wrap_uint64_tensor": _wrap_uint64_tensor,
    "wrap_call": _wrap_call,
    "replace_expression": _replace_expression,
    "mask_uint64": _mask_uint64,
    "append_astype": _append_astype,
    "add_import_name": _add_import_name,
}


def _append_keyword(call: cst.Call, text: str, tree: _Tree) -> cst.Call:
    """``f(a, b)`` -> ``f(a, b, dtype=x)``; before a trailing comma on a line of its own, the new
    argument gets its own line with the last argument's indentation, followed by a comma."""
    keyword, _, value = text.partition("=")
    args = list(call.args)
    if not args:
        raise RewriteError("a call without arguments")
    last = args[-1]
    new = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    comma = last.comma
    if isinstance(comma, cst.Comma):
        after = comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace):
            # `x,  # note\n)`: the new argument goes on its own line, indented like the last one
            indent = tree.line_indent(last)
            args[-1] = last.with_changes(
                comma=comma.with_changes(
                    whitespace_after=after.with_changes(indent=False, last_line=cst.SimpleWhitespace(indent))
                )
            )
            args.append(
                new.with_changes(
                    comma=cst.Comma(
                        whitespace_after=cst.ParenthesizedWhitespace(
                            first_line=cst.TrailingWhitespace(newline=cst.Newline()),
                            indent=after.indent,
                            last_line=after.last_line,
                        )
                    )
                )
            )
        else:
            args[-1] = last.with_changes(comma=comma.with_changes(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(new.with_changes(whitespace_after_arg=after))
    else:
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), whitespace_after_arg=cst.SimpleWhitespace("")
        )
        args.append(new.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def _edit(tree: _Tree, intent: Intent, node: cst.CSTNode, new: cst.CSTNode) -> Edit:
    """The minimal edit inside ``node``'s code that turns it into ``new``'s code."""
    text = tree.text
    indent = tree.indent_of.get(id(node), "")
    old_code = tree.code(node, indent)
    new_code = tree.code(new, indent)
    inner = text[intent.start : intent.end]
    lead = old_code.find(inner)  # parentheses owned by the node come before its position
    if lead < 0 or text[intent.start - lead : intent.start - lead + len(old_code)] != old_code:
        raise RewriteError("node code does not match the text at its position")
    base = intent.start - lead
    prefix = 0
    limit = min(len(old_code), len(new_code))
    while prefix < limit and old_code[prefix] == new_code[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old_code[-1 - suffix] == new_code[-1 - suffix]:
        suffix += 1
    # whole words only: `int64` -> `uint64`, not an inserted "u"
    while (
        prefix > 0
        and _word(old_code[prefix - 1])
        and (_word_at(old_code, prefix, len(old_code) - suffix) or _word_at(new_code, prefix, len(new_code) - suffix))
    ):
        prefix -= 1
    while (
        suffix > 0
        and _word(old_code[-suffix])
        and (
            _word_at(old_code, len(old_code) - suffix - 1, len(old_code) - suffix, prefix)
            or _word_at(new_code, len(new_code) - suffix - 1, len(new_code) - suffix, prefix)
        )
    ):
        suffix -= 1
    return Edit(base + prefix, base + len(old_code) - suffix, new_code[prefix : len(new_code) - suffix])


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _word_at(code: str, index: int, region_end: int, region_start: int = 0) -> bool:
    """Whether the changed region [region_start, region_end) of ``code`` has a word character at ``index``."""
    return region_start <= index < region_end and _word(code[index])
