"""Guides show code that the suites run: the SQL API guide's script is docs/guides/sql-api.sql, verbatim."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.py.support.cli import etl_craft

ROOT = Path(__file__).resolve().parents[3]
#: What differs between two runs of the same commands, replaced in the printed output and in the guide alike:
#: SQLite's version, the owner id of a run (host, pid, process start), clock times and durations, the times in
#: task logs, Engine DB identities and PostgreSQL's version.
VOLATILE = (
    (re.compile(r"SQLite \d+\.\d+\.\d+"), "SQLite 3.x"),
    (re.compile(r"supervised by \S+"), "supervised by <owner>"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?\+00:00"), "<time>"),
    (re.compile(r"\b\d+\.\ds\b"), "<seconds>s"),
    (re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}"), "<log time>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<Engine DB identity>"),
    (re.compile(r"PostgreSQL \d+\.\d+(?: \([^)]*\))?"), "PostgreSQL x.y"),
)
#: The PostgreSQL URL the guide shows, for which the tests put their own server's.
GUIDE_URL = "postgresql://etl_craft@db.example.com:5432/etl"


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
    migrations/NNNN_name.sql, ("engine", [section], None) for the YAML block that replaces the Engine section of
    craft-connector.yml, and ("sh", commands, the ```text block that follows or None)."""
    blocks = list(re.finditer(r"^```(\w+)\n(.*?)^```", text, flags=re.S | re.M))
    steps: list[tuple[str, list[str], str | None]] = []
    for index, block in enumerate(blocks):
        kind, body = block.group(1), block.group(2)
        before = text[max(0, block.start() - 200):block.start()]
        saved_as = re.search(r"`(migrations/\d{4}_\w+\.sql)`:\s*$", before)
        if kind == "sql" and saved_as:
            steps.append(("file", [saved_as.group(1), body], None))
        elif kind == "yaml" and re.search(r"Replace the `Engine` section of `craft-connector.yml`:\s*$", before):
            steps.append(("engine", [body], None))
        elif kind == "sh":
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            shown = following.group(2) if following and following.group(1) == "text" else None
            steps.append(("sh", body.strip().splitlines(), shown))
    return steps


def _follow(guide: str, root: Path, env: dict[str, str], url: str = GUIDE_URL) -> int:
    """Do what `guide` says in `root`, in order: write the files it asks for, replace the Engine section, run each
    etl-craft command (`url` for the guide's PostgreSQL URL), and compare what each block of commands printed
    (stderr, then stdout, as a terminal shows a command's progress before its result) with the text block after it,
    the directory as ... and `url` as the guide's. Returns the number of blocks compared."""
    cwd, checked = root, 0
    shown_url = _as_shown(url)
    for kind, lines, shown in _guide_steps(guide):
        if kind == "file":
            (cwd / lines[0]).write_text(lines[1], encoding="utf-8")
            continue
        if kind == "engine":
            config = cwd / "craft-connector.yml"
            section = lines[0].replace(GUIDE_URL, url)
            config.write_text(re.sub(r"^Engine:\n(?:  .*\n)+", section, config.read_text(encoding="utf-8"),
                                     flags=re.M), encoding="utf-8")
            continue
        outputs = []
        for command in lines:
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
            elif command.startswith("etl-craft ") and "--version" not in command:
                done = etl_craft(*shlex.split(command.replace(GUIDE_URL, url))[1:], cwd=cwd, env=env)
                assert done.code == 0, (command, done.out, done.err)
                outputs.append(done.err + done.out)
        if outputs and shown is not None:
            printed = "".join(outputs).replace(str(root), "...")
            for ours, theirs in shown_url.items():
                printed = printed.replace(ours, theirs)
            assert steady(printed) == steady(shown), lines
            checked += 1
    return checked


def _as_shown(url: str) -> dict[str, str]:
    """How `url` is printed (with and without its password masked), mapped to how the guide prints its own."""
    ours, theirs = make_url(url), make_url(GUIDE_URL)
    where = f"{ours.host}:{ours.port or 5432}/{ours.database}"
    return {f"{ours.username}:***@{where}": f"{theirs.username}:***@db.example.com:5432/etl",
            f"{ours.username}@{where}": f"{theirs.username}@db.example.com:5432/etl"}


@pytest.mark.process
def test_getting_started_guide_shows_what_the_commands_print(tmp_path: Path) -> None:
    """Every etl-craft command of the getting-started guide up to the move to PostgreSQL, run in order in a new
    directory (with the files the guide asks to write), prints what the guide shows (the directory as ..., and
    VOLATILE parts as either)."""
    guide = (ROOT / "docs" / "guides" / "getting-started.md").read_text(encoding="utf-8")
    guide = guide.split("## Move the Engine DB to PostgreSQL")[0]  # the rest needs a PostgreSQL server
    assert _follow(guide, tmp_path, {"ETL_CRAFT_ACTOR": "alice@laptop"}) >= 10


@pytest.mark.process
@pytest.mark.postgres
def test_getting_started_guide__move_to_postgresql__next_runs_go_on_as_shown(tmp_path: Path,
                                                                              empty_pg_url: str) -> None:
    """The whole guide, its move to PostgreSQL included, against a new database of the test server standing for
    the DBA's: engine copy, the new Engine section, doctor, and the next runs (from the copied offsets, merging
    without a rehash) print what the guide shows."""
    guide = (ROOT / "docs" / "guides" / "getting-started.md").read_text(encoding="utf-8")
    guide = guide.split("## When migrate refuses a file")[0]
    env = {"ETL_CRAFT_ACTOR": "alice@laptop", "ETL_CRAFT_ENGINE_PASSWORD": "the test server trusts its logins"}
    assert _follow(guide, tmp_path, env, empty_pg_url) >= 13
