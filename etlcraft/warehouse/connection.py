"""Connections to the warehouse, with the session time zone pinned to UTC on every connection (S3.G.1, B35).

Statements run on the driver's cursor of a SQLAlchemy connection, without bind parameters: etl-craft renders its
own literals (dialects.Dialect.literal), and a user's SELECT may hold `%` or `?` that a driver would otherwise
read as placeholders. A DuckDB file is opened by one process at a time; a second process waits for it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from etlcraft.config.loader import Connection, ProjectConfig
from etlcraft.core.errors import ConfigurationError, EtlCraftError
from etlcraft.warehouse.dialects import Dialect, dialect_for

log = logging.getLogger(__name__)

SUPPORTED_WAREHOUSES = ("duckdb", "postgresql")
#: Every warehouse session runs in this time zone; tests change it to prove hashes do not depend on it.
SESSION_TIME_ZONE = "UTC"
#: How long to wait for a DuckDB file another process has open.
DUCKDB_BUSY_SECONDS = 120.0
_DRIVERS = {"duckdb": "duckdb", "postgresql": "postgresql+psycopg"}


class Session:
    """One warehouse connection inside one transaction."""

    def __init__(self, conn: sa.Connection, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def _cursor(self) -> Any:
        dbapi = self.conn.connection.dbapi_connection
        assert dbapi is not None
        return dbapi.cursor()

    def run(self, sql: str) -> int:
        """Execute one statement; the number of rows it changed (-1 when the driver cannot say)."""
        cursor = self._cursor()
        try:
            cursor.execute(sql)
            return int(cursor.rowcount if cursor.rowcount is not None else -1)
        finally:
            cursor.close()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        cursor = self._cursor()
        try:
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def scalar(self, sql: str) -> Any:
        found = self.rows(sql)
        return found[0][0] if found else None

    def names(self, sql: str) -> list[str]:
        """The column names of the result of `sql`, as the warehouse returns them (a repeated name kept)."""
        cursor = self._cursor()
        try:
            cursor.execute(sql)
            return [str(column[0]) for column in cursor.description or ()]
        finally:
            cursor.close()


class Warehouse:
    """The project's warehouse: a SQLAlchemy engine and the dialect's SQL."""

    def __init__(self, connection: Connection, password: str | None = None) -> None:
        if connection.dialect not in SUPPORTED_WAREHOUSES:
            raise ConfigurationError(
                f"the warehouse dialect {connection.dialect!r} is not supported; etl-craft runs SQL tasks on "
                f"{' and '.join(SUPPORTED_WAREHOUSES)}: set Warehouse.dialect to one of them")
        self.dialect = dialect_for(connection.dialect)
        url = make_url(connection.url).set(drivername=_DRIVERS[connection.dialect])
        if password is not None:
            url = url.set(password=password)
        self.display = str(connection.path) if connection.path else make_url(connection.url).render_as_string()
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        event.listen(self.engine, "connect", self._on_connect)

    def _on_connect(self, dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        try:
            cursor.execute(self.dialect.session_setup(SESSION_TIME_ZONE))
        finally:
            cursor.close()
        if self.dialect.name == "postgresql":
            dbapi_conn.commit()  # the SET outlives the implicit transaction it ran in

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction: committed when the block ends, rolled back when it raises."""
        with self._connect() as conn, conn.begin():
            yield Session(conn, self.dialect)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sa.Connection]:
        deadline = time.monotonic() + DUCKDB_BUSY_SECONDS
        while True:
            try:
                conn = self.engine.connect()
                break
            except sa.exc.DBAPIError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise EtlCraftError(f"cannot open the warehouse {self.display}: {_first_line(exc)}; check "
                                        "Warehouse in craft-connector.yml and that nothing else holds it") from exc
                log.info("the warehouse %s is open in another process; waiting for it", self.display)
                time.sleep(0.2)
        with conn:
            yield conn

    def dispose(self) -> None:
        self.engine.dispose()


def _busy(exc: sa.exc.DBAPIError) -> bool:
    """A DuckDB file that another process holds open (DuckDB allows one writing process per file)."""
    return "Could not set lock on file" in str(exc.orig)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def open_warehouse(config: ProjectConfig) -> Warehouse:
    """The project's warehouse (craft-connector.yml, section Warehouse), its password read from its variable."""
    return Warehouse(config.warehouse, config.secret_value(config.warehouse))


def driver_message(exc: BaseException) -> str:
    """The warehouse's own words for a failed statement, without SQLAlchemy's wrapping."""
    return _first_line(exc)
