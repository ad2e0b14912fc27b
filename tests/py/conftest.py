"""Shared fixtures: migrated Engine DBs on SQLite (in tmp_path) and PostgreSQL (a database per test, copied
from a template migrated once per session; every database this session creates is dropped at its end)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import migrate
from etlcraft.engine.settings import set_test_mode

DEFAULT_PG_URL = "postgresql://root@127.0.0.1:5432/test"
TEST_ACTOR = Actor("tester@pytest", ActorKind.HUMAN)


class PgServer:
    """The PostgreSQL server tests use: creates and drops this session's databases through `admin_url`."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.prefix = f"etlcraft_t{uuid.uuid4().hex[:8]}"
        self.created: list[str] = []

    def url_for(self, name: str) -> str:
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def create(self, name: str | None = None, template: str | None = None) -> str:
        name = name or f"{self.prefix}_{len(self.created)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        self.created.append(name)
        return name

    def drop(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    def drop_all(self) -> None:
        for name in list(reversed(self.created)):
            self.drop(name)


def _reachable(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=3).close()
        return True
    except psycopg.OperationalError:
        return False


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    url = os.environ.get("ETL_CRAFT_TEST_PG_URL", DEFAULT_PG_URL)
    container = None
    if not _reachable(url):
        # No server answers: start one with testcontainers when Docker is available.
        try:
            from testcontainers.postgres import PostgresContainer

            container = PostgresContainer("postgres:15", driver=None).start()
            url = container.get_connection_url()
        except Exception as exc:
            pytest.fail(f"no PostgreSQL at {url} (ETL_CRAFT_TEST_PG_URL) and none could be started: {exc}")
    server = PgServer(url)
    try:
        yield server
    finally:
        server.drop_all()
        if container is not None:
            container.stop()


@pytest.fixture(scope="session")
def pg_template(pg_server: PgServer) -> str:
    """A database migrated to the current schema, in test mode (tests pin its clock), copied for each test that
    needs PostgreSQL."""
    name = pg_server.create(f"{pg_server.prefix}_tpl")
    db = EngineDB(pg_server.url_for(name))
    with acting_as(TEST_ACTOR):
        migrate(db)
        set_test_mode(db)
    db.dispose()
    return name


@pytest.fixture
def pg_url(pg_server: PgServer, pg_template: str) -> Iterator[str]:
    name = pg_server.create(template=pg_template)
    yield pg_server.url_for(name)
    pg_server.drop(name)


@pytest.fixture
def empty_pg_url(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create()
    yield pg_server.url_for(name)
    pg_server.drop(name)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'engine.db'}"
    db = EngineDB(url)
    with acting_as(TEST_ACTOR):
        migrate(db)
    db.dispose()
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_db(request: pytest.FixtureRequest) -> Iterator[EngineDB]:
    """A migrated Engine DB on each dialect, with the test actor acting."""
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    db = EngineDB(url)
    with acting_as(TEST_ACTOR):
        yield db
    db.dispose()
