"""Connections to the warehouse, with the session time zone pinned to UTC on every connection (S3.G.1, B35).

Statements run on the driver's cursor of a SQLAlchemy connection, without bind parameters: etl-craft renders its
own literals (dialects.Dialect.literal), and a user's SELECT may hold `%` or `?` that a driver would otherwise
read as placeholders. A DuckDB file is opened by one process at a time; a second process waits for it, at most
Warehouse.busy_timeout_seconds.

Time limits (section Warehouse of craft-connector.yml): opening a PostgreSQL session waits at most
connect_timeout_seconds. statement_timeout_seconds limits only the statements etl-craft sends of its own accord
(validate's reads: `open_warehouse(config, checks=True)`); a task's SQL, a business rule and rehash may rightly run
for hours and get no limit from etl-craft (TASK_TIMEOUT_SECONDS stops a task; a limit the DBA set on the login still
applies). A connection that fails names the Warehouse section, its secret variable and the remedy (WarehouseError).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from etlcraft.config.keys import keys_of
from etlcraft.config.loader import Connection, ProjectConfig
from etlcraft.core import connecting
from etlcraft.core.errors import ConfigurationError, WarehouseError
from etlcraft.warehouse.dialects import Dialect, dialect_for

log = logging.getLogger(__name__)

SUPPORTED_WAREHOUSES = ("duckdb", "postgresql")
#: Every warehouse session runs in this time zone; tests change it to prove hashes do not depend on it.
SESSION_TIME_ZONE = "UTC"
#: The URL of a private, in-memory DuckDB warehouse (etl-craft test); Warehouse keeps its one connection.
IN_MEMORY_DUCKDB = "duckdb:///:memory:"
_DRIVERS = {"duckdb": "duckdb", "postgresql": "postgresql+psycopg"}


def timeout(connection: Connection, name: str) -> int:
    """Timeout `name` (connect, statement or busy) of the Warehouse section, in seconds: its key's (or the key's
    default), unless the URL's query sets it (connect_timeout, or statement_timeout in options), which then holds."""
    key = f"{name}_timeout_seconds"
    value = getattr(connection, key)
    if value is None:
        value = next(k.default for k in keys_of("Warehouse") if k.name == key)
    assert isinstance(value, int)
    query = _query(connection.url) if connection.dialect == "postgresql" else {}
    if name == "connect":
        return connecting.url_connect_timeout(query, value)
    from_url = connecting.options_statement_timeout(query.get("options")) if name == "statement" else None
    return value if from_url is None else max(1, round(from_url))


def _query(url: str) -> dict[str, str]:
    return {k: v if isinstance(v, str) else v[-1] for k, v in make_url(url).query.items()}


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
            self._execute(cursor, sql)
            return int(cursor.rowcount if cursor.rowcount is not None else -1)
        finally:
            cursor.close()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        cursor = self._cursor()
        try:
            self._execute(cursor, sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def _execute(self, cursor: Any, sql: str) -> None:
        """Run `sql`. A task process told to stop (SIGTERM raises a KeyboardInterrupt there) while a PostgreSQL
        query runs cancels that query on the server (S5.D: the session would otherwise run on after the process
        ends) and says in the attempt's log whether it was cancelled."""
        try:
            cursor.execute(sql)
        except KeyboardInterrupt:
            if self.dialect.name == "postgresql":
                print(f"etl-craft: {cancel_running_query(self.conn)}", file=sys.stderr, flush=True)
            raise

    def scalar(self, sql: str) -> Any:
        found = self.rows(sql)
        return found[0][0] if found else None

    def names(self, sql: str) -> list[str]:
        """The column names of the result of `sql`, as the warehouse returns them (a repeated name kept)."""
        cursor = self._cursor()
        try:
            self._execute(cursor, sql)
            return [str(column[0]) for column in cursor.description or ()]
        finally:
            cursor.close()


def cancel_running_query(conn: sa.Connection) -> str:
    """Cancel the query the PostgreSQL session of `conn` runs (psycopg's cancel request, which is what
    pg_cancel_backend does, from a connection of its own); what happened, for the attempt's log."""
    from psycopg.pq import TransactionStatus

    driver: Any = conn.connection.dbapi_connection
    pid = driver.info.backend_pid
    status = driver.info.transaction_status
    if status == TransactionStatus.ACTIVE:
        try:
            driver.cancel_safe(timeout=5.0)
        except Exception as exc:  # the server could not be reached: the query may run on
            return (f"the task was stopped while the warehouse ran a query (PostgreSQL backend pid {pid}) and the "
                    f"query could NOT be cancelled ({type(exc).__name__}: {exc}); it may still run: check "
                    f"pg_stat_activity and end it with SELECT pg_cancel_backend({pid})")
        return (f"the task was stopped while the warehouse ran a query: the query was cancelled on the PostgreSQL "
                f"server (backend pid {pid}); its transaction is rolled back")
    if status == TransactionStatus.INERROR:
        return (f"the task was stopped while the warehouse ran a query: the query was cancelled on the PostgreSQL "
                f"server (backend pid {pid}); its transaction is rolled back")
    return f"the task was stopped between warehouse queries (PostgreSQL backend pid {pid}): no query was running"


class Warehouse:
    """The project's warehouse: a SQLAlchemy engine and the dialect's SQL. `checks`: a connection for etl-craft's
    own reads (validate), whose statements stop at Warehouse.statement_timeout_seconds; else one for a task."""

    def __init__(self, connection: Connection, password: str | None = None, *, checks: bool = False) -> None:
        if connection.dialect not in SUPPORTED_WAREHOUSES:
            raise ConfigurationError(
                f"the warehouse dialect {connection.dialect!r} is not supported; etl-craft runs SQL tasks on "
                f"{' and '.join(SUPPORTED_WAREHOUSES)}: set Warehouse.dialect to one of them")
        self.connection = connection
        self.checks = checks
        self.dialect = dialect_for(connection.dialect)
        url = make_url(connection.url).set(drivername=_DRIVERS[connection.dialect])
        if password is not None:
            url = url.set(password=password)
        self.display = str(connection.path) if connection.path else make_url(connection.url).render_as_string()
        connect_args = self._pg_connect_args() if connection.dialect == "postgresql" else {}
        # An in-memory DuckDB (etl-craft test) lives as long as its one connection: keep that connection.
        pool = sa.pool.StaticPool if connection.url == IN_MEMORY_DUCKDB else sa.pool.NullPool
        self.engine = sa.create_engine(url, poolclass=pool, connect_args=connect_args)
        event.listen(self.engine, "connect", self._on_connect)

    def _pg_connect_args(self) -> dict[str, object]:
        limit = {"statement_timeout": f"{timeout(self.connection, 'statement')}s"} if self.checks else {}
        return connecting.connect_args(_query(self.connection.url), timeout(self.connection, "connect"),
                                       before=limit, after={})

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
        with self.connect() as conn:
            yield conn

    def connect(self) -> sa.Connection:
        """A new connection; a DuckDB file another process holds is waited for (Warehouse.busy_timeout_seconds).
        WarehouseError says why none could be had."""
        busy = timeout(self.connection, "busy")
        deadline = time.monotonic() + busy
        while True:
            try:
                return self.engine.connect()
            except sa.exc.DBAPIError as exc:
                if _busy(exc) and time.monotonic() > deadline:
                    raise WarehouseError(
                        f"cannot open the warehouse {self.display}: another process held the file for {busy} s "
                        f"(Warehouse.busy_timeout_seconds) ({_first_line(exc)}); a DuckDB file is open in one "
                        "process at a time: make the tasks that use it depend on each other, end the other process, "
                        "or raise Warehouse.busy_timeout_seconds") from exc
                if not _busy(exc):
                    raise WarehouseError(self.failure(exc)) from exc
                log.info("the warehouse %s is open in another process; waiting for it", self.display)
                time.sleep(0.2)

    def failure(self, exc: BaseException) -> str:
        """Why a connection could not be opened, naming the Warehouse section, its secret variable and the remedy."""
        if self.dialect.name != "postgresql" and isinstance(exc, sa.exc.DBAPIError) and _busy(exc):
            return (f"cannot open the warehouse {self.display}: another process has the file open "
                    f"({_first_line(exc)}); a DuckDB file is open in one process at a time: wait for that process to "
                    "end, then try again")
        if self.dialect.name != "postgresql":
            return (f"cannot open the warehouse {self.display}: {_first_line(exc)}; check Warehouse.path in "
                    "craft-connector.yml and that etl-craft may read and write that file")
        return connect_failure(self.connection, exc)

    def statement_failure(self, exc: BaseException) -> str | None:
        """The message for a statement etl-craft's checks sent that ran out of time; None for any other error."""
        text = _first_line(exc)
        if not (self.checks and connecting.is_statement_timeout(text)):
            return None
        return connecting.statement_timeout(f"the warehouse at {self.display}", timeout(self.connection, "statement"),
                                            "Warehouse.statement_timeout_seconds", None)

    def dispose(self) -> None:
        self.engine.dispose()


def connect_failure(connection: Connection, exc: BaseException) -> str:
    """Why a session with the PostgreSQL warehouse could not be opened: the server, what happened, the Warehouse
    section's key or secret variable involved (never the password) and the remedy."""
    url = connection.url
    server = connecting.Server(
        what="the warehouse", shown=make_url(url).render_as_string(), address=connecting.address(url),
        user=connecting.user(url), url_key="Warehouse.url in craft-connector.yml", secret=connection.secret,
        secret_key="Warehouse.secret", timeout_key="Warehouse.connect_timeout_seconds",
        connect_timeout=timeout(connection, "connect"))
    return connecting.connect_failure(server, str(getattr(exc, "orig", None) or exc))


def _busy(exc: sa.exc.DBAPIError) -> bool:
    """A DuckDB file that another process holds open (DuckDB allows one writing process per file)."""
    return "Could not set lock on file" in str(exc.orig)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__


def open_warehouse(config: ProjectConfig, *, checks: bool = False) -> Warehouse:
    """The project's warehouse (craft-connector.yml, section Warehouse), its password read from its variable;
    `checks` for etl-craft's own reads, whose statements have a time limit (a task's have none from etl-craft)."""
    return Warehouse(config.warehouse, config.secret_value(config.warehouse), checks=checks)


def driver_errors() -> tuple[type[BaseException], ...]:
    """What a warehouse statement may raise: SQLAlchemy's DBAPIError and the base error of each warehouse driver
    this process has imported. A driver never imported raised nothing, so `etl-craft test` (DuckDB) does not pay for
    importing psycopg, nor a PostgreSQL warehouse for DuckDB."""
    drivers = (sys.modules.get("psycopg"), sys.modules.get("duckdb"))
    return (sa.exc.DBAPIError, *(module.Error for module in drivers if module is not None))


def driver_message(exc: BaseException) -> str:
    """The warehouse's own words for a failed statement, without SQLAlchemy's wrapping."""
    return _first_line(exc)
