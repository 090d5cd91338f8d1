"""mkdocs hooks: the site's generated pages (see mkdocs.yml).

- ``index.md``: the README, its links into ``docs/`` made relative to the site and the other files
  it links to in the repository (benchmark plots and results) copied in beside it;
- ``rules/index.md``: every rule with its name, summary and fix availability;
- ``rules/PTRxxx.md``: one page per rule from its own documentation (what it does, why, examples,
  fix safety, options), as ruff's rule pages are, and its valid and invalid examples.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)#\s]+)(\))")


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - mkdocs' hook signature
    from ptrlint.rules import ALL_RULES

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    copied: set[str] = set()

    def relink(match: re.Match) -> str:
        target = match.group(2)
        if target.startswith(("http:", "https:", "mailto:")):
            return match.group(0)
        if target.startswith("docs/"):
            return match.group(1) + target[len("docs/") :] + match.group(3)
        if (ROOT / target).is_file():
            copied.add(target)
        return match.group(0)

    files.append(File.generated(config, "index.md", content=_LINK.sub(relink, readme)))
    for target in sorted(copied):
        files.append(File.generated(config, target, content=(ROOT / target).read_bytes()))
    rows = ["# Rules", "", "| code | name | what it finds | fix |", "|---|---|---|---|"]
    for rule in ALL_RULES:
        rows.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {rule.summary} | {rule.fix_availability} |")
        files.append(File.generated(config, f"rules/{rule.code}.md", content=_rule_page(rule)))
    files.append(File.generated(config, "rules/index.md", content="\n".join(rows) + "\n"))
    return files


def _rule_page(rule) -> str:  # noqa: ANN001
    parts = [
        f"# {rule.code} ({rule.name})",
        "",
        rule.summary,
        "",
        f"**Fix:** {rule.fix_availability}",
        "",
        rule.doc.strip(),
        "",
    ]
    if rule.INVALID:
        parts += ["## Reported", ""]
        for example in rule.INVALID:
            parts += ["```python", example.code.rstrip("\n"), "```", ""]
            if example.fixed:
                parts += [
                    "Fixed:" if not example.unsafe else "Fixed (unsafe fix):",
                    "",
                    "```python",
                    example.fixed.rstrip("\n"),
                    "```",
                    "",
                ]
    if rule.VALID:
        parts += ["## Not reported", ""]
        for code in rule.VALID:
            parts += ["```python", code.rstrip("\n"), "```", ""]
    return "\n".join(parts)
