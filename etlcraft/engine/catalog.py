"""What the Engine DB holds right now: its etl-craft tables and their columns."""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB

#: Tables etl-craft owns and guards: metadata, history and audit, engine reference data, the ledger.
OWNED_TABLE = re.compile(r"^(CFG_|AUD_|ENG_)[A-Z0-9_]+$|^SCHEMA_MIGRATIONS$")


@dataclass(frozen=True)
class TableInfo:
    name: str  # upper case, as the docs spell it
    pk: str  # the single key column (ledger and ENG_ tables: their first key column)
    columns: tuple[str, ...]


def owned_tables(db: EngineDB, conn: sa.Connection) -> list[TableInfo]:
    """Every etl-craft table of the Engine DB, sorted by name."""
    tables = _pg_tables(db, conn) if db.is_postgres else _sqlite_tables(conn)
    return sorted((t for t in tables if OWNED_TABLE.match(t.name)), key=lambda t: t.name)


def table_exists(db: EngineDB, conn: sa.Connection, name: str) -> bool:
    if db.is_postgres:
        found = conn.execute(sa.text("SELECT to_regclass(:name)"), {"name": f"{db.schema}.{name.lower()}"})
    else:
        found = conn.execute(
            sa.text("SELECT name FROM sqlite_master WHERE type = 'table' AND name = :name"), {"name": name}
        )
    return found.scalar() is not None


def view_names(db: EngineDB, conn: sa.Connection) -> set[str]:
    """The names of the Engine DB's views, upper case."""
    if db.is_postgres:
        found = conn.execute(sa.text("SELECT viewname FROM pg_views WHERE schemaname = :schema"), {"schema": db.schema})
    else:
        found = conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'view'"))
    return {name.upper() for name in found.scalars()}


def _sqlite_tables(conn: sa.Connection) -> list[TableInfo]:
    names = conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'table'")).scalars().all()
    tables = []
    for name in names:
        rows = conn.exec_driver_sql(f'PRAGMA table_info("{name}")').all()
        columns = tuple(row[1].upper() for row in rows)
        keys = sorted((row[5], row[1].upper()) for row in rows if row[5])
        tables.append(TableInfo(name.upper(), keys[0][1] if keys else columns[0], columns))
    return tables


_PG_COLUMNS = sa.text(
    """
    SELECT c.table_name, c.column_name,
           (SELECT k.column_name FROM information_schema.table_constraints tc
              JOIN information_schema.key_column_usage k
                ON k.constraint_schema = tc.constraint_schema AND k.constraint_name = tc.constraint_name
             WHERE tc.table_schema = c.table_schema AND tc.table_name = c.table_name
               AND tc.constraint_type = 'PRIMARY KEY'
             ORDER BY k.ordinal_position LIMIT 1) AS pk
      FROM information_schema.columns c
      JOIN information_schema.tables t
        ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
     WHERE c.table_schema = :schema
     ORDER BY c.table_name, c.ordinal_position
    """
)


def _pg_tables(db: EngineDB, conn: sa.Connection) -> list[TableInfo]:
    columns: dict[str, list[str]] = {}
    keys: dict[str, str] = {}
    for table, column, pk in conn.execute(_PG_COLUMNS, {"schema": db.schema}):
        columns.setdefault(table.upper(), []).append(column.upper())
        keys[table.upper()] = (pk or column).upper() if table.upper() not in keys else keys[table.upper()]
    return [TableInfo(name, keys[name], tuple(cols)) for name, cols in columns.items()]
