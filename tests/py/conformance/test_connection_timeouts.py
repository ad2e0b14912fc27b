"""The Engine DB's time limits, below the command line: a PostgreSQL session gets the statement timeout of the Engine
section (or of --engine-url's options), a statement that outlives it is cancelled with a message naming the limit and
its key, the wait for a target's lock has none and hands the session its limit back, and a SQLite file another
process holds fails after the busy timeout, saying so."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from etlcraft.core.errors import EngineDbError
from etlcraft.engine import locks
from etlcraft.engine.db import EngineDB
from etlcraft.engine.timeouts import EngineTimeouts


def _show(db: EngineDB, setting: str) -> str:
    with db.read() as conn:
        return str(conn.exec_driver_sql(f"SHOW {setting}").scalar())


@pytest.fixture
def limited(pg_url: str) -> Iterator[EngineDB]:
    """The Engine DB with the Engine section's statement timeout set to 1 s."""
    db = EngineDB(pg_url, timeouts=EngineTimeouts(statement=1, configured=True))
    yield db
    db.dispose()


@pytest.mark.postgres
def test_engine_session__gets_the_statement_timeout_of_the_engine_section(pg_url: str) -> None:
    db = EngineDB(pg_url, timeouts=EngineTimeouts(statement=45, configured=True))
    try:
        assert (_show(db, "statement_timeout"), _show(db, "search_path"), _show(db, "jit")) == ("45s", "etl_craft",
                                                                                               "off")
    finally:
        db.dispose()
    default = EngineDB(pg_url)
    try:
        assert _show(default, "statement_timeout") == "5min"
    finally:
        default.dispose()


@pytest.mark.postgres
def test_engine_url_options__may_change_the_statement_timeout_but_not_the_schema(pg_url: str) -> None:
    url = make_url(pg_url).update_query_dict({"options": "-c statement_timeout=2500 -c search_path=public"})
    db = EngineDB(url.render_as_string(hide_password=False))
    try:
        assert (_show(db, "statement_timeout"), _show(db, "search_path")) == ("2500ms", "etl_craft")
    finally:
        db.dispose()


@pytest.mark.postgres
def test_engine_statement__longer_than_the_statement_timeout__is_cancelled_naming_the_limit(
        limited: EngineDB) -> None:
    with pytest.raises(EngineDbError) as cancelled, limited.read() as conn:
        conn.execute(sa.text("SELECT pg_sleep(5)"))
    assert cancelled.value.exit_code == 4
    assert str(cancelled.value) == (
        f"the Engine DB at {limited.display_url} cancelled a statement (SELECT pg_sleep(5)) that ran longer than its "
        "limit of 1 s (Engine.statement_timeout_seconds in craft-connector.yml); a lock held by another session (see "
        "pg_stat_activity) or an overloaded server makes a statement wait that long: find the cause, or raise the "
        "limit")


@pytest.mark.postgres
def test_target_lock__waited_for_longer_than_the_statement_timeout__then_the_session_has_its_limit_again(
        limited: EngineDB, pg_url: str) -> None:
    """A SQL task waits for another task writing the same target, which may take hours: that wait is exempt."""
    name = "etl-craft:target:main.orders"
    holder = psycopg.connect(make_url(pg_url).render_as_string(hide_password=False), autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (locks.lock_key(name),))
    releaser = threading.Timer(2.5, lambda: holder.execute("SELECT pg_advisory_unlock_all()"))
    releaser.start()
    started = time.monotonic()
    try:
        with locks.hold(limited, name):
            waited = time.monotonic() - started
        assert waited >= 2, "the lock was held by the other session for 2.5 s"
        assert _show(limited, "statement_timeout") == "1s", "the pooled session has the Engine section's limit back"
    finally:
        releaser.join()
        holder.close()


def test_sqlite_engine__file_held_by_another_process__write_fails_after_the_busy_timeout(sqlite_url: str) -> None:
    db = EngineDB(sqlite_url, timeouts=EngineTimeouts(busy=1, configured=True))
    other = sqlite3.connect(make_url(sqlite_url).database or "", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(EngineDbError) as locked, db.write() as conn:
            conn.execute(sa.text("SELECT 1"))
    finally:
        other.execute("ROLLBACK")
        other.close()
        db.dispose()
    assert locked.value.exit_code == 4
    assert str(locked.value) == (
        f"the Engine DB file {Path(make_url(sqlite_url).database or '')} stayed locked by another process for 1 s "
        "(Engine.busy_timeout_seconds in craft-connector.yml); a SQLite Engine DB has one writer at a time: wait for "
        "the other etl-craft command to end (or end it) and try again, raise the limit, or use PostgreSQL for an "
        "Engine DB that several processes share")
