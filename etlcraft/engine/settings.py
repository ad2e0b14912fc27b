"""ENG_SETTINGS: the Engine DB's own settings, which only the schema's owner writes.

TEST_MODE = Y makes a database a test database, the only kind where a session may pin the clock (etl_craft.now,
read by etl_craft.clock_now()); ROLE_PREFIX names the roles `etl-craft grant` set up. No role is granted a write on
the table, and its rows are stamped with the actor who set them (sql/migrations/0013_roles.sql.j2). Both are
PostgreSQL's. ENGINE_ID, on both dialects, is the Engine DB's identity: 32 random hex digits created once by
migration 0014 and never changed (090_guards), under which the task logs of its attempts are kept.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from etlcraft.core.errors import MigrationError, UsageError
from etlcraft.engine.catalog import table_exists
from etlcraft.engine.db import EngineDB

TEST_MODE = "TEST_MODE"
ROLE_PREFIX = "ROLE_PREFIX"
ENGINE_ID = "ENGINE_ID"
TABLE = "ENG_SETTINGS"
#: An Engine DB identity, as CHECK engine_id_is_an_id of ENG_SETTINGS takes it (and as a folder name is safe).
ENGINE_ID_FORM = re.compile(r"^[0-9a-f]{32}$")


def read_setting(db: EngineDB, conn: sa.Connection, name: str) -> str | None:
    """The setting's value, None when it was never set (or the Engine DB predates ENG_SETTINGS)."""
    if not db.is_postgres or not table_exists(db, conn, TABLE):
        return None
    found = conn.execute(sa.text(f"SELECT VALUE FROM {db.qualify(TABLE)} WHERE SETTING = :name"), {"name": name})
    value = found.scalar()
    return None if value is None else str(value)


def engine_id(db: EngineDB, conn: sa.Connection | None = None) -> str:
    """The Engine DB's identity (ENG_SETTINGS ENGINE_ID), read in `conn` or a read transaction of its own. An Engine
    DB migrated before 0014 has none yet: refused, naming the remedy."""
    if conn is None:
        with db.read() as own:
            return engine_id(db, own)
    found = None
    if table_exists(db, conn, TABLE):
        found = conn.execute(sa.text(f"SELECT VALUE FROM {db.qualify(TABLE)} WHERE SETTING = :name"),
                             {"name": ENGINE_ID}).scalar()
    if found is None or not ENGINE_ID_FORM.match(str(found)):
        raise MigrationError(
            f"the Engine DB at {db.display_url} has no identity (ENG_SETTINGS ENGINE_ID, found {found!r}), which "
            "migration 0014 creates and etl-craft keeps each attempt's log under; expected 32 hex digits: run "
            "etl-craft migrate to bring the Engine DB up to date")
    return str(found)


def write_setting(db: EngineDB, conn: sa.Connection, name: str, value: str) -> str:
    """Set `name` to `value` in the caller's write transaction (marked with its actor, who is recorded as SET_BY);
    returns the SQL it ran, with the values in it, for printing."""
    _require_postgres(db)
    sql = (f"INSERT INTO {db.qualify(TABLE)} (SETTING, VALUE, SET_AT)"
           f" VALUES ({_literal(name)}, {_literal(value)}, now())"
           " ON CONFLICT (SETTING) DO UPDATE SET VALUE = excluded.VALUE, SET_AT = excluded.SET_AT,"
           " SET_BY = excluded.SET_BY, SET_BY_KIND = excluded.SET_BY_KIND")
    conn.exec_driver_sql(sql)
    return sql


def in_test_mode(db: EngineDB) -> bool:
    with db.read() as conn:
        return read_setting(db, conn, TEST_MODE) == "Y"


def set_test_mode(db: EngineDB, enabled: bool = True) -> None:
    """Make the Engine DB a test database (sessions may pin its clock), or a production one again. Only the schema's
    owner can: no role is granted a write on ENG_SETTINGS."""
    with db.write() as conn:
        write_setting(db, conn, TEST_MODE, "Y" if enabled else "N")


def _require_postgres(db: EngineDB) -> None:
    if not db.is_postgres:
        raise UsageError("ENG_SETTINGS is written on a PostgreSQL Engine DB only: a SQLite Engine DB is single-user, "
                         "its clock is etl-craft's own and it has no roles")


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
