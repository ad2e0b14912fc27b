"""The value-set CHECK constraints of the Engine DB, as the engine migrations define them and as a migrated database
holds them: `CONSTRAINT name CHECK (COL IN ('A', 'B'))`, and on PostgreSQL the `COL::text = ANY ('{A,B}'::text[])`
form of migration 0010 and whatever pg_get_constraintdef prints for either.

A CHECK that looks like a value set but is not one of those forms, or one without a name, raises AssertionError:
the drift test could not compare it with sql/state_machine.yaml otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import Migration

_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_HEAD = re.compile(r"^\(*(\w+)\)*(?:::\w+)?\s*(?:IN|=\s*ANY)\s*(\(.*\))$", re.IGNORECASE | re.DOTALL)
# PostgreSQL prints a list of one value, COL IN ('A'), as ((col)::text = 'A'::text).
_ONE = re.compile(r"^\(*(\w+)\)*::\w+\s*=\s*('(?:[^']|'')*'::\w+)$", re.IGNORECASE | re.DOTALL)
_CASTS_AND_PUNCTUATION = re.compile(r"\bARRAY\b|::\s*(?:character varying|varchar|text)(?:\[\])?|[\s()\[\],]",
                                    re.IGNORECASE)
_SET_LIKE = re.compile(r"\b(?:IN|ANY)\s*\(", re.IGNORECASE)
_CHECK = re.compile(r"\bCHECK\s*\(", re.IGNORECASE)
_NAME_BEFORE = re.compile(r"\bCONSTRAINT\s+(\w+)\s*$", re.IGNORECASE)
_TABLE_STATEMENT = re.compile(r"^(CREATE|ALTER|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?(?:\w+\.)?(\w+)",
                              re.IGNORECASE)
_RENAME_TABLE = re.compile(r"\bRENAME\s+TO\s+(?:\w+\.)?(\w+)", re.IGNORECASE)
_DROP_CONSTRAINT = re.compile(r"\bDROP\s+CONSTRAINT\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_DROP_COLUMN = re.compile(r"\bDROP\s+COLUMN\s+(?:IF\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class ValueCheck:
    """One CHECK constraint that closes a column's value set."""

    table: str
    name: str
    column: str
    values: tuple[str, ...]
    source: str = field(default="", compare=False)  # the migration that defined it last, or "the catalog"


Checks = dict[tuple[str, str], ValueCheck]  # by (table, constraint name)


def statements(sql: str) -> Iterator[str]:
    """The statements of a SQL script, comments dropped, split at the semicolons outside string literals."""
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(sql):
        ch = sql[i]
        if not quoted and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end
            continue
        if ch == "'":
            quoted = not quoted
        if ch == ";" and not quoted:
            yield "".join(current).strip()
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip():
        yield "".join(current).strip()


def _closing(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at text[start] (string literals skipped)."""
    depth, quoted = 0, False
    for i in range(start, len(text)):
        if text[i] == "'":
            quoted = not quoted
        elif not quoted and text[i] in "()":
            depth += 1 if text[i] == "(" else -1
            if depth == 0:
                return i + 1
    raise AssertionError(f"unbalanced parentheses in {text[start:start + 120]!r}")


def value_set(body: str) -> tuple[str, tuple[str, ...]] | None:
    """(column, values) when a CHECK's condition closes a value set, else None (another kind of rule)."""
    body = body.strip()
    while body.startswith("(") and _closing(body, 0) == len(body):
        body = body[1:-1].strip()
    head = _HEAD.match(body) or _ONE.match(body)
    if head is None or _CASTS_AND_PUNCTUATION.sub("", _LITERAL.sub("", head.group(2))):
        return None
    values = [v.replace("''", "'") for v in _LITERAL.findall(head.group(2))]
    if len(values) == 1 and values[0].startswith("{") and values[0].endswith("}"):  # '{A,B}'::text[]
        values = [v.strip('"') for v in values[0][1:-1].split(",")]
    return head.group(1).upper(), tuple(values)


def checks_in(text: str, table: str, source: str) -> Iterator[tuple[int, ValueCheck]]:
    """Each value-set CHECK in a statement or a constraint definition, with its position."""
    for match in _CHECK.finditer(text):
        body = text[match.end() - 1:_closing(text, match.end() - 1)]
        found = value_set(body[1:-1])
        where = f"{source}: the CHECK {body[:100]!r} of {table}"
        if found is None:
            assert not _SET_LIKE.search(_LITERAL.sub("", body)), (
                f"{where} looks like a value set but is not COL IN ('A', 'B') or COL::text = ANY ('{{A,B}}'::text[]); "
                "write it in one of those forms so tests can compare it with sql/state_machine.yaml")
            continue
        name = _NAME_BEFORE.search(text[:match.start()])
        assert name, f"{where} has no name; name it after its rule: CONSTRAINT <column>_is_valid CHECK (...)"
        yield match.start(), ValueCheck(table, name.group(1).lower(), *found, source=source)


def apply(checks: Checks, statement: str, source: str) -> None:
    """Change `checks` as one statement changes the database: a CREATE TABLE adds its checks, a DROP TABLE removes
    them, an ALTER TABLE drops and adds constraints in the order it names them (a later definition replaces an
    earlier one), drops a column's, or renames the table (SQLite's rebuild: create, copy, drop, rename)."""
    head = _TABLE_STATEMENT.match(statement)
    if head is None:
        return
    verb, table = head.group(1).upper(), head.group(2).upper()
    if verb in ("CREATE", "DROP"):
        for key in [k for k in checks if k[0] == table]:
            del checks[key]
    if verb == "DROP":
        return
    rename = _RENAME_TABLE.search(statement) if verb == "ALTER" else None
    if rename:
        for key in [k for k in checks if k[0] == table]:
            check = checks.pop(key)
            new = rename.group(1).upper()
            checks[(new, check.name)] = ValueCheck(new, check.name, check.column, check.values, check.source)
        return
    events: list[tuple[int, str, object]] = [(m.start(), "drop", m.group(1).lower())
                                             for m in _DROP_CONSTRAINT.finditer(statement)]
    events += [(m.start(), "drop column", m.group(1).upper()) for m in _DROP_COLUMN.finditer(statement)]
    events += [(at, "add", check) for at, check in checks_in(statement, table, source)]
    for _, what, item in sorted(events, key=lambda e: e[0]):
        if what == "drop":
            checks.pop((table, str(item)), None)
        elif what == "drop column":
            for key in [k for k, c in checks.items() if k[0] == table and c.column == item]:
                del checks[key]
        else:
            assert isinstance(item, ValueCheck)
            checks[(table, item.name)] = item


def migrated_checks(migrations: Iterable[Migration]) -> Checks:
    """The value-set CHECKs a database has after the migrations, applied in order."""
    checks: Checks = {}
    for migration in migrations:
        for statement in statements(migration.sql):
            apply(checks, statement, migration.source)
    return checks


def catalog_checks(db: EngineDB, conn: sa.Connection) -> Checks:
    """The value-set CHECKs of a migrated Engine DB, read from its catalog: pg_constraint on PostgreSQL, the CREATE
    TABLE text SQLite keeps in sqlite_master (ADD COLUMN included) on SQLite."""
    checks: Checks = {}
    if db.is_postgres:
        rows = conn.execute(sa.text(
            "SELECT t.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = :schema AND c.contype = 'c'"), {"schema": db.schema}).all()
        for table, name, definition in rows:
            for _, check in checks_in(f"CONSTRAINT {name} {definition}", table.upper(), "the catalog"):
                checks[(check.table, check.name)] = check
    else:
        rows = conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'table'")).all()
        for table, sql in rows:
            for statement in statements(sql or ""):
                for _, check in checks_in(statement, table.upper(), "the catalog"):
                    checks[(check.table, check.name)] = check
    return checks
