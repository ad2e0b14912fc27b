"""Warehouse fixtures: `wh` is a throwaway project on each warehouse (a DuckDB file in tmp_path, or a schema of its
own in a PostgreSQL database this session creates and drops through pg_server), with a migrated SQLite Engine DB
copied from a session template, and helpers to run SQL tasks and read their targets' full contents."""

from __future__ import annotations

import itertools
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from etlcraft.config.loader import ProjectConfig, load_config
from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import migrate
from etlcraft.handlers.context import HandlerResult, TaskContext
from etlcraft.handlers.sql import run_sql_task
from etlcraft.warehouse.connection import open_warehouse
from etlcraft.warehouse.names import parse_table_name
from tests.py.conftest import TEST_ACTOR, PgServer

#: The time the first run of a test is stamped with; run n is stamped T0 + n minutes.
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PIPELINE_ID, PIPELINE_RUN_ID = 7, 70
_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def engine_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite Engine DB migrated once; each test works on a copy."""
    path = tmp_path_factory.mktemp("engine") / "engine.db"
    db = EngineDB(f"sqlite:///{path}")
    with acting_as(TEST_ACTOR):
        migrate(db)
    db.dispose()
    return path


@pytest.fixture(scope="session")
def pg_warehouse(pg_server: PgServer) -> str:
    """The URL of a PostgreSQL database for warehouse tests (dropped with the session's other databases)."""
    return pg_server.url_for(pg_server.create(f"{pg_server.prefix}_wh"))


@dataclass
class Wh:
    """One test's project: run SQL tasks into its warehouse and read what they wrote."""

    dialect: str
    project: Path
    config: ProjectConfig
    engine_db: EngineDB
    schema: str
    runs: int = 0
    results: list[HandlerResult] = field(default_factory=list)

    def t(self, table: str) -> str:
        """`table` qualified with this test's schema."""
        return f"{self.schema}.{table}"

    def run(self, action: str, sql: str, table: str = "target", *, task_run_id: int | None = None,
            attempt_id: int | None = None, at: datetime | None = None, **parameters: str) -> HandlerResult:
        """Run one attempt of a SQL task writing `table`; each run gets the next task run id (101, 102, ...) and
        time (T0 + 1 min, + 2 min, ...) unless given."""
        self.runs += 1
        (self.project / "sql_files" / "task.sql").write_text(sql.replace("{s}", self.schema), encoding="utf-8")
        trid = task_run_id if task_run_id is not None else 100 + self.runs
        self.engine_db.clock.pin(at or self.at(self.runs))
        ctx = TaskContext(self.project, self.config, PIPELINE_ID, "pipe", PIPELINE_RUN_ID, date(2026, 3, 1), 3,
                          "task", trid, attempt_id if attempt_id is not None else trid * 10, "SQL", action,
                          "task.sql", None, self.t(table) if "." not in table else table, parameters)
        with acting_as(TEST_ACTOR):
            result = run_sql_task(ctx, engine_db=self.engine_db)
        self.results.append(result)
        return result

    @staticmethod
    def at(run: int) -> datetime:
        return T0 + timedelta(minutes=run)

    def execute(self, *statements: str) -> None:
        warehouse = open_warehouse(self.config)
        try:
            with warehouse.transaction() as session:
                for statement in statements:
                    session.run(statement.replace("{s}", self.schema))
        finally:
            warehouse.dispose()

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        warehouse = open_warehouse(self.config)
        try:
            with warehouse.transaction() as session:
                return session.rows(sql.replace("{s}", self.schema))
        finally:
            warehouse.dispose()

    def contents(self, table: str = "target", order: str = "1") -> list[dict[str, Any]]:
        """Every row and every column of the table, column names in lower case, rows in `order`."""
        warehouse = open_warehouse(self.config)
        try:
            with warehouse.transaction() as session:
                dbapi = session.conn.connection.dbapi_connection
                assert dbapi is not None
                cursor = dbapi.cursor()
                cursor.execute(f"SELECT * FROM {self.t(table)} ORDER BY {order}")
                names = [d[0].lower() for d in cursor.description]
                rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
                cursor.close()
                return rows
        finally:
            warehouse.dispose()

    def columns(self, table: str = "target") -> list[tuple[str, str]]:
        """(name in lower case, full type in lower case) of each column, in order."""
        warehouse = open_warehouse(self.config)
        try:
            with warehouse.transaction() as session:
                name = parse_table_name(self.t(table), self.dialect)
                return [(n.lower(), t.lower()) for n, t in session.rows(session.dialect.columns_sql(name))]
        finally:
            warehouse.dispose()


def _write_config(project: Path, dialect: str, pg_url: str | None) -> None:
    warehouse = (f"  dialect: postgresql\n  url: {pg_url}\n" if dialect == "postgresql"
                 else "  dialect: duckdb\n  path: warehouse.duckdb\n")
    (project / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n{warehouse}", encoding="utf-8")


def make_wh(dialect: str, tmp_path: Path, engine_template: Path, pg_url: str | None) -> Wh:
    project = tmp_path / "project"
    (project / "sql_files").mkdir(parents=True)
    shutil.copy(engine_template, project / "engine.db")
    _write_config(project, dialect, pg_url)
    config = load_config(project)
    schema = f"w{next(_schemas)}_{uuid.uuid4().hex[:6]}"
    wh = Wh(dialect, project, config, EngineDB(config.engine.url), schema)
    wh.execute(f"CREATE SCHEMA {schema}")
    return wh


@pytest.fixture(params=["duckdb", pytest.param("postgresql", marks=pytest.mark.postgres)])
def wh(request: pytest.FixtureRequest, tmp_path: Path, engine_template: Path) -> Iterator[Wh]:
    pg_url = request.getfixturevalue("pg_warehouse") if request.param == "postgresql" else None
    made = make_wh(request.param, tmp_path, engine_template, pg_url)
    yield made
    if request.param == "postgresql":
        made.execute(f"DROP SCHEMA {made.schema} CASCADE")
    made.engine_db.dispose()


@pytest.fixture
def pg_wh(tmp_path: Path, engine_template: Path, pg_warehouse: str) -> Iterator[Wh]:
    """`wh` on PostgreSQL only, for what only PostgreSQL has (dependent views, a time budget set for it)."""
    made = make_wh("postgresql", tmp_path, engine_template, pg_warehouse)
    yield made
    made.execute(f"DROP SCHEMA {made.schema} CASCADE")
    made.engine_db.dispose()
