"""Plain data shared by every stage: findings, fixes, edits, rule metadata. Stdlib only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Edit:
    """Replace ``source[start:end]`` (offsets into the decoded text) with ``text``.

    ``location``/``end_location`` are the same span as 1-based (line, column) pairs, filled in by
    the engine for reports.
    """

    start: int
    end: int
    text: str
    location: tuple[int, int] = (0, 0)
    end_location: tuple[int, int] = (0, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "location": {"line": self.location[0], "column": self.location[1]},
            "end_location": {"line": self.end_location[0], "column": self.end_location[1]},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        loc, end = data.get("location", {}), data.get("end_location", {})
        return cls(
            int(data["start"]),
            int(data["end"]),
            str(data["text"]),
            (int(loc.get("line", 0)), int(loc.get("column", 0))),
            (int(end.get("line", 0)), int(end.get("column", 0))),
        )


@dataclass(frozen=True, order=True)
class Intent:
    """One step of a fix, in terms of the syntax tree; the rewrite engine (libcst) applies it by position.

    ``start``/``end`` are the character offsets of the node it targets, as the ast engine saw it:
    - ``rename_attribute``: the Attribute ``th.long`` gets the name ``value`` (``th.uint64``);
    - ``replace_name``: the Name ``i64`` becomes the expression ``value`` (``uint64``, ``np.uint64``);
    - ``replace_string``: the string ``"int64"`` gets the body ``value``, keeping prefix and quotes;
    - ``append_keyword``: the Call gets the keyword argument ``value`` (``dtype=torch.uint64``) last,
      laid out like its other arguments (own line before a trailing comma);
    - ``replace_method_call``: ``x.long()`` becomes ``x.to(value)``;
    - ``add_import_name``: the ImportFrom gets the name ``value`` appended;
    - ``append_view``: the Call ``torch.tensor(...)`` becomes ``torch.tensor(...).view(value)``;
    - ``view_receiver``: the method call ``x.numpy()`` becomes ``x.view(value).numpy()``;
    - ``wrap_uint64_tensor``: the expression ``p`` becomes ``value.tensor(p, dtype=value.uint64)``;
    - ``wrap_call``: the expression ``p`` becomes ``value(p)`` (``np.uint64(p)``);
    - ``append_astype``: the expression ``ids`` becomes ``ids.astype(value)``.
    """

    start: int
    end: int
    action: str
    value: str

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "start": self.start, "end": self.end, "value": self.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Intent:
        return cls(int(data["start"]), int(data["end"]), str(data["action"]), str(data["value"]))


@dataclass(frozen=True)
class Fix:
    """A fix: intents (decided by the analysis) and, once rendered by the rewrite engine, text edits.

    ``alternatives``: other fixes offered besides this one, each unsafe (the plain uint64 change of a
    table whose readers ptrlint could not all see, beside the safe bit-preserving fix). ``--fix``
    applies only the fix itself; editors offer the alternatives as further code actions, and JSON
    and SARIF list them."""

    safe: bool
    intents: tuple[Intent, ...]
    title: str = ""
    edits: tuple[Edit, ...] = ()
    alternatives: tuple[Fix, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "safe": self.safe,
            "title": self.title,
            "edits": [e.to_json() for e in self.edits],
            "intents": [i.to_json() for i in self.intents],
        }
        if self.alternatives:
            out["alternatives"] = [a.to_json() for a in self.alternatives]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        return cls(
            safe=bool(data["safe"]),
            title=str(data.get("title", "")),
            intents=tuple(Intent.from_json(i) for i in data.get("intents", [])),
            edits=tuple(Edit.from_json(e) for e in data.get("edits", [])),
            alternatives=tuple(Fix.from_json(a) for a in data.get("alternatives", [])),
        )


@dataclass(frozen=True)
class Related:
    """One piece of evidence: where a pointer value comes from or is stored. ``path`` is set when
    the evidence lies in another module (found through the project index)."""

    line: int
    column: int
    message: str
    path: str | None = None
    cell: int | None = None  # notebooks: the cell the line is in

    def to_json(self, path: str) -> dict[str, Any]:
        out = {"path": self.path or path, "line": self.line, "column": self.column, "message": self.message}
        if self.cell is not None:
            out["cell"] = self.cell
        return out


@dataclass(frozen=True)
class Finding:
    """One diagnostic. Lines are 1-based, columns 1-based (as printed)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    fix: Fix | None = None
    related: tuple[Related, ...] = ()
    cell: int | None = None  # notebooks: line and column are within this cell (1-based among all cells)
    # the harm model: what fails, for which values and where (one sentence); "" for file errors
    failure: str = ""
    # "error": a failure ptrlint can name and reach; "note": a doubt (values that leave for code it cannot
    # see, a signed wrapper that keeps the bits): reported, never a reason to fail a run
    severity: str = "error"
    raw_line: int | None = None  # notebooks: the line of the .ipynb file itself (GitHub annotations, SARIF)

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "fix": self.fix.to_json() if self.fix else None,
            "related": [r.to_json(self.path) for r in self.related],
            "severity": self.severity,
            "failure": self.failure,
            **({"cell": self.cell} if self.cell is not None else {}),
            **({"raw_line": self.raw_line} if self.raw_line is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            path=data["path"],
            line=data["line"],
            column=data["column"],
            end_line=data["end_line"],
            end_column=data["end_column"],
            code=data["code"],
            name=data["name"],
            message=data["message"],
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            related=tuple(
                Related(
                    r["line"],
                    r["column"],
                    r["message"],
                    r["path"] if r.get("path") != data["path"] else None,
                    r.get("cell"),
                )
                for r in data.get("related", [])
            ),
            cell=data.get("cell"),
            failure=str(data.get("failure", "")),
            severity=str(data.get("severity", "error")),
            raw_line=data.get("raw_line"),
        )


ERROR, NOTE = "error", "note"


@dataclass(frozen=True)
class FileError:
    """A file that could not be read, decoded or parsed (exit 2); it is never written. ``code``:
    E902 cannot read or write it, E903 cannot decode it, E999 cannot parse it, E900 ptrlint failed."""

    path: str
    message: str
    line: int = 0
    column: int = 0
    code: str = "E999"

    @property
    def name(self) -> str:
        return ERROR_NAMES.get(self.code, "error")

    def to_json(self) -> dict[str, Any]:
        """As a finding's JSON (no fix, no evidence), so that every output format lists it."""
        return {
            "path": self.path,
            "line": self.line or 1,
            "column": self.column or 1,
            "end_line": self.line or 1,
            "end_column": self.column or 1,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "fix": None,
            "related": [],
            "severity": "error",
            "failure": "",
        }


IO_ERROR, DECODE_ERROR, SYNTAX_ERROR, INTERNAL_ERROR, CONFIG_ERROR = "E902", "E903", "E999", "E900", "E904"
ERROR_NAMES = {
    IO_ERROR: "io-error",
    DECODE_ERROR: "decode-error",
    SYNTAX_ERROR: "syntax-error",
    INTERNAL_ERROR: "internal-error",
    CONFIG_ERROR: "config-error",
}


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    fixed: int = 0
    new_text: str | None = None
    diff: str = ""
    applied: list[Finding] = field(default_factory=list)  # the findings whose fixes --fix/--diff applied
    # project index: what this module tells the others, what it read of them, what it asked for
    summary: Any = None
    consulted: dict[str, str] | None = None
    wanted: set[str] | None = None
    source_digest: str = ""  # index runs: a digest of the bytes the findings were computed from
