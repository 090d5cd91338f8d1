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
    def from_json(cls, data: dict[str, Any]) -> "Edit":
        loc, end = data.get("location", {}), data.get("end_location", {})
        return cls(
            int(data["start"]),
            int(data["end"]),
            str(data["text"]),
            (int(loc.get("line", 0)), int(loc.get("column", 0))),
            (int(end.get("line", 0)), int(end.get("column", 0))),
        )


@dataclass(frozen=True)
class Fix:
    safe: bool
    edits: tuple[Edit, ...]
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"safe": self.safe, "title": self.title, "edits": [e.to_json() for e in self.edits]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Fix":
        return cls(
            safe=bool(data["safe"]),
            title=str(data.get("title", "")),
            edits=tuple(Edit.from_json(e) for e in data["edits"]),
        )


@dataclass(frozen=True)
class Related:
    """One piece of evidence: where a pointer value comes from or is stored."""

    line: int
    column: int
    message: str

    def to_json(self, path: str) -> dict[str, Any]:
        return {"path": path, "line": self.line, "column": self.column, "message": self.message}


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

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

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
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
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
            related=tuple(Related(r["line"], r["column"], r["message"]) for r in data.get("related", [])),
        )


@dataclass(frozen=True)
class FileError:
    """A file that could not be read or parsed (exit 2); it is never written."""

    path: str
    message: str
    line: int = 0
    column: int = 0


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    fixed: int = 0
    new_text: str | None = None
    diff: str = ""
