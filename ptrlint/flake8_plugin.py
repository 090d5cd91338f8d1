"""flake8 plugin (entry point ``flake8.extension``, prefix ``PTR``): the same engine, no second rule set.

``flake8 --select PTR`` reports the findings ``ptrlint`` reports, on the same lines and columns,
with the configuration ptrlint resolves for the file (nearest pyproject.toml [tool.ptrlint]).
flake8 has no fixes; run ``ptrlint --fix`` for those.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from . import __version__
from .config import Config, ConfigError, resolve_config
from .discovery import excluded_reason
from .planner import lint_text
from .settings import Settings, select_codes


@lru_cache(maxsize=64)
def _settings_for(folder: str) -> Settings:
    try:
        config = resolve_config(None, False, Path(folder))
    except ConfigError:
        config = Config()
    return Settings(config=config, enabled=select_codes(config.select, config.extend_select, config.ignore))


class Flake8Plugin:
    name = "ptrlint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        path = Path(self.filename) if self.filename not in ("stdin", "-") else Path("stdin.py")
        folder = str(path.resolve().parent) if path.parent.exists() else "."
        settings = _settings_for(folder)
        if path.is_file() and excluded_reason(str(path), settings.config) is not None:
            return  # excluded by [tool.ptrlint] or ignored by git: as `ptrlint` skips it
        result = lint_text("".join(self.lines), str(path), settings)
        for finding in result.findings:
            # flake8 columns are 0-based and printed +1, so output matches `ptrlint` exactly
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)
