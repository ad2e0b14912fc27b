"""A pooled PostgreSQL connection is pinged only when it comes back to use after being idle (issue 27): SQLAlchemy's
pool_pre_ping pinged it on every checkout, one round trip more for every transaction of a chain link. A connection
the server dropped while it sat idle in the pool is still replaced before the next call uses it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from etlcraft.core.actor import acting_as
from etlcraft.engine import db as engine_db
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.migrations import migrate
from tests.py.conftest import TEST_ACTOR, PgServer

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_db(pg_server: PgServer) -> Iterator[EngineDB]:
    db = EngineDB(pg_server.url_for(pg_server.create()))
    with acting_as(TEST_ACTOR):
        migrate(db, command="init-db")
    yield db
    db.dispose()


def _count_pings(db: EngineDB, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pings: list[int] = []
    do_ping = db.engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(1)
        return bool(do_ping(dbapi_connection))

    monkeypatch.setattr(db.engine.dialect, "do_ping", counted)
    return pings


def _backend_pid(db: EngineDB) -> int:
    with db.read() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def test_pool__connection_taken_back_at_once__is_not_pinged(pg_db: EngineDB,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pings = _count_pings(pg_db, monkeypatch)
    monkeypatch.setattr(engine_db, "PING_AFTER_IDLE_SECONDS", 3600.0)
    for _ in range(5):
        _backend_pid(pg_db)
        with acting_as(TEST_ACTOR):
            call(pg_db, "reconcile_expired")
    assert pings == [], "a connection reused at once was pinged on checkout"


def test_pool__connection_idle_and_dropped_by_the_server__is_replaced_before_use(
        pg_db: EngineDB, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    pings = _count_pings(pg_db, monkeypatch)
    first = _backend_pid(pg_db)
    with psycopg.connect(pg_server.admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
    monkeypatch.setattr(engine_db, "PING_AFTER_IDLE_SECONDS", 0.0)  # every connection counts as idle
    with acting_as(TEST_ACTOR):
        call(pg_db, "reconcile_expired")  # a write-API call, on a connection that answers
    assert pings, "the idle connection was not pinged before use"
    assert _backend_pid(pg_db) != first
