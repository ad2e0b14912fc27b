"""Guides show code that the suites run: the SQL API guide's script is docs/guides/sql-api.sql, verbatim."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft

ROOT = Path(__file__).resolve().parents[3]
#: What differs between two runs of the same commands, replaced in the printed output and in the guide alike:
#: SQLite's version, the owner id of a run (host, pid, process start), clock times and durations.
VOLATILE = (
    (re.compile(r"SQLite \d+\.\d+\.\d+"), "SQLite 3.x"),
    (re.compile(r"supervised by \S+"), "supervised by <owner>"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00:00"), "<time>"),
    (re.compile(r"\b\d+\.\ds\b"), "<seconds>s"),
)


def steady(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text.strip()


def test_sql_api_guide_shows_the_script_the_pgtap_suite_runs() -> None:
    script = (ROOT / "docs" / "guides" / "sql-api.sql").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "guides" / "sql-api.md").read_text(encoding="utf-8")
    assert f"```sql\n{script}```" in guide
    suite = (ROOT / "tests" / "sql" / "guide" / "sql_api.test.sql").read_text(encoding="utf-8")
    assert "\\ir ../../../docs/guides/sql-api.sql" in suite


def _guide_steps(text: str) -> list[tuple[str, list[str], str | None]]:
    """The guide's actions in order: ("file", [path, content], None) for a SQL block the guide asks to save as
    migrations/NNNN_name.sql, and ("sh", commands, the ```text block that follows or None)."""
    blocks = list(re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M))
    steps: list[tuple[str, list[str], str | None]] = []
    for index, block in enumerate(blocks):
        kind, body = block.group(1), block.group(2)
        before = text[max(0, block.start() - 200):block.start()]
        saved_as = re.search(r"`(migrations/\d{4}_\w+\.sql)`:\s*$", before)
        if kind == "sql" and saved_as:
            steps.append(("file", [saved_as.group(1), body], None))
        elif kind == "sh":
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            shown = following.group(2) if following and following.group(1) == "text" else None
            steps.append(("sh", body.strip().splitlines(), shown))
    return steps


@pytest.mark.process
def test_getting_started_guide_shows_what_the_commands_print(tmp_path: Path) -> None:
    """Every etl-craft command of the getting-started guide, run in order in a new directory (with the files the
    guide asks to write), prints what the guide shows (the directory as ..., and VOLATILE parts as either)."""
    guide = (ROOT / "docs" / "guides" / "getting-started.md").read_text(encoding="utf-8")
    guide = guide.split("## Move the Engine DB to PostgreSQL")[0]  # the rest needs the reader's own server
    cwd, checked = tmp_path, 0
    for kind, lines, shown in _guide_steps(guide):
        if kind == "file":
            (cwd / lines[0]).write_text(lines[1], encoding="utf-8")
            continue
        outputs = []
        for command in lines:
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
            elif command.startswith("etl-craft ") and "--version" not in command:
                done = etl_craft(*shlex.split(command)[1:], cwd=cwd, env={"ETL_CRAFT_ACTOR": "alice@laptop"})
                assert done.code == 0, (command, done.out, done.err)
                outputs.append(done.out + done.err)
        if outputs and shown is not None:
            printed = "".join(outputs).replace(str(tmp_path), "...")
            assert steady(printed) == steady(shown), lines
            checked += 1
    assert checked >= 10
