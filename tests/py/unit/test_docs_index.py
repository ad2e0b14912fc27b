"""The entry points name what exists: every page under docs/ is linked from docs/index.md, and the README's
"What works today" names every etl-craft command."""

from __future__ import annotations

import re
from pathlib import Path

from etlcraft.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[3]


def test_every_docs_page_is_linked_from_the_index() -> None:
    docs = ROOT / "docs"
    index = (docs / "index.md").read_text(encoding="utf-8")
    linked = {(docs / target).resolve() for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", index)}
    pages = {p.resolve() for p in docs.rglob("*.md") if p.name != "index.md"}
    unlinked = sorted(str(p.relative_to(docs.resolve())) for p in pages - linked)
    assert not unlinked, f"docs/index.md does not link {', '.join(unlinked)}"


def test_readme_names_every_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    works = readme[readme.index("## What works today"):readme.index("\n## ", readme.index("## What works today") + 1)]
    missing = sorted(name for name in COMMANDS if f"`{name}`" not in works and f"`etl-craft {name}`" not in works)
    assert not missing, f"the README's 'What works today' does not name {', '.join(missing)}"
