"""The torch custom-op schemas one module declares (PTR008): which arguments of an op are integers.

Schema strings (``torch.library.define``, ``Library.define``, ``m.def(...)``-style) and the annotations of
``torch.library.custom_op`` functions; an ``int``, ``SymInt`` or ``int[]`` argument is converted to int64
by torch before the op runs.
"""

from __future__ import annotations

import ast
import re

from .base import RuleContext

INT64_SCHEMA_TYPES = re.compile(r"^(?:int|SymInt)(?:\[\d*\])?\??$")
_SCHEMA = re.compile(r"^\s*(?:[\w.]+::)?(\w+)(?:\.\w+)?\s*\((.*)\)\s*->")


def op_schemas(ctx: RuleContext) -> dict[str, dict[str, object]]:
    """Op name -> {parameter: "int" | "list", "__order__": [parameters]} from the schema strings this
    module declares (``torch.library.define``, ``Library.define``, ``m.def(...)``-style strings), and
    ``"__functions__"``: {id of a ``torch.library.custom_op`` function: the same, from its annotations}."""
    out: dict[str, dict[str, object]] = {}
    functions: dict[int, dict[str, object]] = {}
    model = ctx.facts.model
    for call in model.calls:
        strings = [a.value for a in call.args[:2] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        for i, text in enumerate(strings):
            if "->" not in text:
                continue
            if text.lstrip().startswith("(") and i == 1:  # torch.library.define("ns::op", "(int p) -> ()")
                text = strings[0].rpartition("::")[2] + text.lstrip()
            parsed = _parse_schema(text)
            if parsed is not None:
                out[parsed[0]] = parsed[1]
    for function in [*model.functions.values(), *(m for ms in model.class_methods.values() for m in ms.values())]:
        for decorator in function.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, (ast.Name, ast.Attribute)) and model.qualified_names(target) & {
                "torch.library.custom_op",
                "torch._library.custom_ops.custom_op",
            }:
                params = [a for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
                declared: dict[str, object] = {"__order__": [a.arg for a in params]}
                for a in params:
                    kind = _annotation_kind(a.annotation)
                    if kind is not None:
                        declared[a.arg] = kind
                functions[id(function)] = declared
                name = (
                    decorator.args[0].value
                    if isinstance(decorator, ast.Call)
                    and decorator.args
                    and isinstance(decorator.args[0], ast.Constant)
                    and isinstance(decorator.args[0].value, str)
                    else None
                )
                if name:
                    out[name.rpartition("::")[2]] = declared
    out["__functions__"] = functions  # type: ignore[assignment]
    return out


def _parse_schema(text: str) -> tuple[str, dict[str, object]] | None:
    match = _SCHEMA.match(text)
    if match is None:
        return None
    declared: dict[str, object] = {"__order__": []}
    depth, current, parts = 0, "", []
    for ch in match.group(2):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    for part in parts:
        words = part.split("=")[0].split()
        if not words or words[0] == "*":
            continue
        typ, name = (words[0], words[-1]) if len(words) >= 2 else (words[0], "")
        declared["__order__"].append(name)  # type: ignore[attr-defined]
        if INT64_SCHEMA_TYPES.match(typ):
            declared[name] = "list" if "[" in typ else "int"
    return match.group(1), declared


def _annotation_kind(annotation: ast.expr | None) -> str | None:
    if isinstance(annotation, ast.Name) and annotation.id == "int":
        return "int"
    if (
        isinstance(annotation, ast.Subscript)
        and isinstance(annotation.value, ast.Name)
        and annotation.value.id in ("list", "List", "Sequence")
        and isinstance(annotation.slice, ast.Name)
        and annotation.slice.id == "int"
    ):
        return "list"
    return None
