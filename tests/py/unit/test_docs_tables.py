"""docs/reference/tables.md documents the Engine DB schema as the engine migrations create it: every table has a
section, each section's column table lists exactly that table's columns, and each section names the table's
CHECK constraints and indexes. A table or column added by a migration without its docs fails here."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from etlcraft.engine.catalog import OWNED_TABLE
from etlcraft.engine.migrations import engine_migrations

TABLES_MD = Path(__file__).resolve().parents[3] / "docs" / "reference" / "tables.md"
_HEADING = re.compile(r"^(#{1,3}) (.+?)\s*$")
_COLUMN_ROW = re.compile(r"^\|\s*`([A-Z0-9_]+)`\s*\|")
_CHECK = re.compile(r"\bCONSTRAINT\s+(\w+)\s+CHECK\b", re.IGNORECASE)


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    checks: frozenset[str]
    indexes: frozenset[str]


@pytest.fixture(scope="module")
def schema() -> dict[str, Table]:
    """The tables of the rendered SQLite schema, created in an in-memory database and read back."""
    sql = "\n".join(m.sql for m in engine_migrations("sqlite", ""))
    with closing(sqlite3.connect(":memory:")) as conn:
        # What etl-craft's connections answer while migrate runs (migration 0014 records who created the identity).
        answers = {"etl_craft_actor": "docs@pytest", "etl_craft_actor_kind": "HUMAN", "etl_craft_migration": None,
                   "etl_craft_now": "2026-01-01 00:00:00.000000+00:00"}
        for name, answer in answers.items():
            conn.create_function(name, 0, lambda answer=answer: answer)
        conn.executescript(sql)
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {}
        for name in names:
            if not OWNED_TABLE.match(name.upper()):
                continue  # sqlite_sequence and other SQLite bookkeeping
            columns = tuple(row[1].upper() for row in conn.execute(f'PRAGMA table_info("{name}")'))
            create = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
            checks = frozenset(_CHECK.findall(create.fetchone()[0]))
            indexes = frozenset(row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
                (name,),
            ))
            tables[name.upper()] = Table(columns, checks, indexes)
    return tables


@pytest.fixture(scope="module")
def sections() -> dict[str, str]:
    """tables.md split into its table sections: `### NAME` heading -> the text up to the next heading."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in TABLES_MD.read_text(encoding="utf-8").splitlines():
        heading = _HEADING.match(line)
        if heading:
            title = heading.group(2)
            is_table = len(heading.group(1)) == 3 and OWNED_TABLE.match(title)
            current = found.setdefault(title, []) if is_table else None
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def _documented_columns(section: str) -> list[str]:
    """The first cells of the section's column table: the table whose header starts `| Column`."""
    columns: list[str] = []
    in_table = False
    for line in section.splitlines():
        if line.startswith("| Column "):
            in_table = True
        elif in_table and line.startswith("|"):
            match = _COLUMN_ROW.match(line)
            if match:
                columns.append(match.group(1))
        elif in_table:
            break
    return columns


def test_tables_md__every_schema_table__has_a_section(
    schema: dict[str, Table], sections: dict[str, str]
) -> None:
    missing = sorted(set(schema) - set(sections))
    assert not missing, f"docs/reference/tables.md has no '### NAME' section for: {', '.join(missing)}"


def test_tables_md__every_section__names_a_schema_table(
    schema: dict[str, Table], sections: dict[str, str]
) -> None:
    unknown = sorted(set(sections) - set(schema))
    assert not unknown, (
        f"docs/reference/tables.md documents tables the schema does not have: {', '.join(unknown)}"
    )


def test_tables_md__each_section__lists_exactly_its_columns(
    schema: dict[str, Table], sections: dict[str, str]
) -> None:
    problems = []
    for name, table in sorted(schema.items()):
        documented = _documented_columns(sections.get(name, ""))
        missing = [c for c in table.columns if c not in documented]
        extra = [c for c in documented if c not in table.columns]
        twice = sorted({c for c in documented if documented.count(c) > 1})
        if missing:
            problems.append(f"{name}: columns not documented: {', '.join(missing)}")
        if extra:
            problems.append(f"{name}: documented columns the table does not have: {', '.join(extra)}")
        if twice:
            problems.append(f"{name}: columns documented twice: {', '.join(twice)}")
    assert not problems, "docs/reference/tables.md is out of date:\n" + "\n".join(problems)


def test_tables_md__each_section__names_its_checks_and_indexes(
    schema: dict[str, Table], sections: dict[str, str]
) -> None:
    problems = []
    for name, table in sorted(schema.items()):
        section = sections.get(name, "")
        missing = sorted(n for n in table.checks | table.indexes if f"`{n}`" not in section)
        if missing:
            problems.append(f"{name}: constraints or indexes not named: {', '.join(missing)}")
    assert not problems, "docs/reference/tables.md is out of date:\n" + "\n".join(problems)
