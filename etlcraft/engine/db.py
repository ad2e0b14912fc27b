"""Connections to the Engine DB (PostgreSQL or SQLite), marked with the actor on every write.

PostgreSQL: a write transaction starts with set_config('etl_craft.actor', ...,  true), which the guard triggers
require. SQLite has no sessions: each connection registers etl_craft_actor(), etl_craft_actor_kind(),
etl_craft_migration(), etl_craft_now() and etl_craft_note(), backed by per-connection state that write() fills
for the length of one transaction. A connection from any other tool lacks those functions, so the guard
triggers refuse its writes.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from etlcraft.core import connecting
from etlcraft.core.actor import Actor, current_actor
from etlcraft.core.errors import (
    ConfigurationError,
    EngineDbError,
    EngineUnreachableError,
    EtlCraftError,
    class_for_code,
)
from etlcraft.core.stops import holding_stops
from etlcraft.engine.latency import time_statements
from etlcraft.engine.sqlite_file import open_problem
from etlcraft.engine.timeouts import EngineTimeouts

if TYPE_CHECKING:
    import psycopg

DEFAULT_SCHEMA = "etl_craft"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_CODE_PREFIX = re.compile(r"^(EC\d{3}): ")
_STATE_KEY = "etl_craft.state"
_BEGIN_KEY = "etl_craft.begin"
_IDLE_SINCE_KEY = "etl_craft.idle_since"
#: A pooled PostgreSQL connection idle this long is pinged when it is taken from the pool (issue 27).
PING_AFTER_IDLE_SECONDS = 1.0
#: The read transaction shared_read() holds open, with its EngineDB, in this thread or task.
_shared_reads: contextvars.ContextVar[tuple[EngineDB, sa.Connection] | None] = contextvars.ContextVar(
    "etl_craft_shared_read", default=None)


def format_timestamp(value: datetime) -> str:
    """The Engine DB's text form of a time on SQLite: UTC, microseconds, offset (sorts as it compares)."""
    return value.astimezone(UTC).isoformat(sep=" ", timespec="microseconds")


@dataclass
class Clock:
    """The Engine DB's clock as etl-craft sees it; tests pin it to move time without sleeping."""

    pinned: datetime | None = None

    def now(self) -> datetime:
        return self.pinned if self.pinned is not None else datetime.now(UTC)

    def pin(self, value: datetime | None) -> None:
        if value is not None and value.tzinfo is None:
            raise ValueError("pin the clock with an aware datetime (tzinfo=UTC)")
        self.pinned = value


@dataclass
class _SqliteState:
    """What the functions registered on one SQLite connection answer during the current transaction."""

    actor: str | None = None
    kind: str | None = None
    migration: str | None = None
    now: str | None = None
    notes: list[str] = field(default_factory=list)
    failure: tuple[str, str] | None = None

    def note(self, text: str | None) -> int:
        self.notes.append(text or "")
        return 1

    def fail(self, code: str, message: str | None) -> None:
        """etl_craft_fail(code, message): remember the error for map_error, then abort the statement."""
        self.failure = (code, message or "")
        raise RuntimeError(f"{code}: {message}")


def _register_sqlite_functions(dbapi_conn: sqlite3.Connection, state: _SqliteState, clock: Clock) -> None:
    dbapi_conn.create_function("etl_craft_actor", 0, lambda: state.actor)
    dbapi_conn.create_function("etl_craft_actor_kind", 0, lambda: state.kind or "HUMAN")
    dbapi_conn.create_function("etl_craft_migration", 0, lambda: state.migration)
    dbapi_conn.create_function("etl_craft_now", 0, lambda: state.now or format_timestamp(clock.now()))
    dbapi_conn.create_function("etl_craft_note", 1, state.note)
    dbapi_conn.create_function("etl_craft_fail", 2, state.fail)
    dbapi_conn.create_function("etl_craft_add_seconds", 2, _add_seconds)


def _add_seconds(value: str | None, seconds: float | None) -> str | None:
    if value is None or seconds is None:
        return None
    return format_timestamp(datetime.fromisoformat(value) + timedelta(seconds=seconds))


def sqlite_script_statements(script: str) -> list[str]:
    """Split a SQLite script into statements, keeping CREATE TRIGGER ... END; bodies whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip() and not all(
                part.strip().startswith("--") or not part.strip() for part in buffer.splitlines()
            ):
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not all(p.strip().startswith("--") or not p.strip() for p in buffer.splitlines()):
        statements.append(buffer.strip())
    return statements


class EngineDB:
    """One Engine DB: its SQLAlchemy engine, dialect, schema and clock."""

    def __init__(self, url: str, *, schema: str = DEFAULT_SCHEMA, password: str | None = None,
                 timeouts: EngineTimeouts | None = None, secret: str | None = None,
                 pool_size: int | None = None) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise ConfigurationError(
                f"the Engine DB URL {url!r} is not a URL; expected postgresql://user@host:5432/db or sqlite:///path"
            ) from exc
        backend = parsed.get_backend_name()
        if backend not in ("postgresql", "sqlite"):
            raise ConfigurationError(
                f"the Engine DB URL names the database {backend!r}; etl-craft's Engine DB is PostgreSQL or SQLite"
            )
        if not _SCHEMA_NAME.match(schema):
            raise EngineDbError(
                f"the Engine DB schema {schema!r} is not a plain lower-case name; use letters, digits and _"
            )
        self.dialect = backend
        self.schema = schema if backend == "postgresql" else ""
        self.clock = Clock()
        self.timeouts = timeouts or EngineTimeouts()
        self.secret = secret
        if password is not None:
            parsed = parsed.set(password=password)
        self.url = parsed
        self.display_url = parsed.render_as_string(hide_password=True)
        if backend == "postgresql":
            self._connect_args = self._pg_connect_args()
            # pool_size: a fixed budget of connections (the server's Db_pool_size, a worker's 2 + slots/8, S5.H),
            # never exceeded; without it,
            # SQLAlchemy's default pool.
            sizing: dict[str, int] = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": 0}
            self.engine = sa.create_engine(parsed.set(drivername="postgresql+psycopg"),
                                           connect_args=self._connect_args, **sizing)
            _ping_when_idle(self.engine)
        else:
            self.engine = sa.create_engine(parsed.set(drivername="sqlite+pysqlite"))
            self._install_sqlite_events()
        time_statements(self.engine)

    def new_connection(self) -> sa.Connection:
        """A connection opened now and never pooled, for one held for a process's life (the server's leader lock,
        its LISTEN): a pooled one may have been opened before a fork, and a copy of its socket in a task process
        that outlives this one would keep its session, and a lock it holds, alive."""
        if not self.is_postgres:
            raise ValueError("new_connection is for a PostgreSQL Engine DB")
        unpooled = sa.create_engine(self.engine.url, connect_args=self._connect_args, poolclass=sa.pool.NullPool)
        try:
            return unpooled.connect()
        except sa.exc.DBAPIError as exc:
            raise self.map_error(exc) from exc

    def _pg_connect_args(self) -> dict[str, object]:
        """The connect timeout, and the session's settings: the statement timeout (which the URL's options may
        change, with --engine-url), then the schema and jit off. jit off: the Engine DB's statements read and write
        a few rows by index, and on large tables their estimates cross jit_above_cost, which costs tens of
        milliseconds of compilation per statement."""
        return connecting.connect_args(
            self._query(), self.timeouts.connect, before={"statement_timeout": f"{self.timeouts.statement}s"},
            after={"search_path": self.schema, "jit": "off"})

    def _query(self) -> dict[str, str]:
        return {k: v if isinstance(v, str) else v[-1] for k, v in self.url.query.items()}

    def _statement_seconds(self) -> float:
        """The statement timeout sessions get: the URL's options may change it (with --engine-url)."""
        from_url = connecting.options_statement_timeout(self._query().get("options"))
        return from_url if from_url is not None else self.timeouts.statement

    def _server(self) -> connecting.Server:
        configured = self.timeouts.configured
        url = self.url.render_as_string(hide_password=True)
        return connecting.Server(
            what="the Engine DB", shown=self.display_url, address=connecting.address(url), user=self.url.username,
            url_key=self.timeouts.url_key,
            secret=self.secret, secret_key="Engine.secret" if configured else None,
            timeout_key=self.timeouts.key("connect"),
            connect_timeout=connecting.url_connect_timeout(self._query(), self.timeouts.connect))

    # -- SQLite plumbing -------------------------------------------------------------------------------------

    def _install_sqlite_events(self) -> None:
        clock = self.clock
        busy_ms = self.timeouts.busy * 1000

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: sqlite3.Connection, record: Any) -> None:
            # The driver stops managing transactions; etl-craft sends BEGIN itself (SQLAlchemy's pysqlite recipe).
            dbapi_conn.isolation_level = None
            state = _SqliteState()
            record.info[_STATE_KEY] = state
            _register_sqlite_functions(dbapi_conn, state, clock)
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql(conn.info.get(_BEGIN_KEY, "BEGIN"))

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @property
    def now_sql(self) -> str:
        """SQL for the Engine DB's clock: the transaction's time, or the time tests pinned."""
        return f"{self.schema}.clock_now()" if self.is_postgres else "etl_craft_now()"

    def qualify(self, name: str) -> str:
        """A table or function name as SQL should spell it on this Engine DB."""
        return f"{self.schema}.{name}" if self.is_postgres else name

    # -- transactions ----------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def read(self) -> Iterator[sa.Connection]:
        """A read-only transaction. SIGTERM and SIGHUP wait for its end (etlcraft.core.stops). Inside
        shared_read() of this Engine DB, the shared transaction."""
        shared = _shared_reads.get()
        if shared is not None and shared[0] is self:
            yield shared[1]
            return
        with holding_stops(), self._mapped_errors(None), self.engine.connect() as conn, conn.begin():
            yield conn

    @contextlib.contextmanager
    def read_alone(self) -> Iterator[sa.Connection]:
        """Reads that need no common snapshot: on PostgreSQL each statement is its own transaction (the driver in
        autocommit: no BEGIN and COMMIT round trips), which is what each statement of a read() at READ COMMITTED
        sees anyway; not for read_snapshot(). SQLite: read(). Inside shared_read() of this Engine DB, the shared
        transaction."""
        shared = _shared_reads.get()
        if not self.is_postgres or (shared is not None and shared[0] is self):
            with self.read() as conn:
                yield conn
            return
        with self.single_statement() as conn:
            yield conn

    @contextlib.contextmanager
    def shared_read(self) -> Iterator[None]:
        """One read transaction for every read() of this Engine DB made inside the block (in this thread or task):
        an HTTP request that only reads takes one connection from the pool and sends one BEGIN and one COMMIT,
        however many services it calls, and every read sees one snapshot (REPEATABLE READ on PostgreSQL, as a
        SQLite read transaction does). Writes inside the block open their own transactions as always, and reads
        after them still see the block's snapshot: use it for requests that read."""
        if _shared_reads.get() is not None:
            yield
            return
        with holding_stops(), self._mapped_errors(None), self.engine.connect() as conn:
            if self.is_postgres:  # BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY: no SET TRANSACTION round trip
                conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            with conn.begin():
                token = _shared_reads.set((self, conn))
                try:
                    yield
                finally:
                    _shared_reads.reset(token)

    def read_snapshot(self, conn: sa.Connection) -> None:
        """Make the read transaction just begun on `conn` see one snapshot for all its statements (PostgreSQL reads
        committed data per statement by default; a SQLite read transaction is a snapshot already). Nothing to do
        inside shared_read(), whose transaction is one."""
        shared = _shared_reads.get()
        if self.is_postgres and not (shared is not None and shared[1] is conn):
            conn.execute(sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))

    @contextlib.contextmanager
    def write(self, actor: Actor | None = None, *, mark: bool = True) -> Iterator[sa.Connection]:
        """A write transaction marked with `actor` (default: the current actor), committed on success.

        On SQLite it starts with BEGIN IMMEDIATE, so it holds the write lock from its first statement. On
        PostgreSQL `mark=False` skips the marker statement for a transaction whose only work is one write-API
        function given p_actor (it marks the transaction itself), saving a round trip on the hot path.
        """
        with holding_stops(), self._mapped_errors(None), self.engine.connect() as conn, \
                self.transaction(conn, actor, mark=mark):
            yield conn

    @contextlib.contextmanager
    def single_statement(self, conn: sa.Connection | None = None) -> Iterator[sa.Connection]:
        """PostgreSQL: the block sends one statement that is its own transaction (a write-API function, which marks
        itself with its actor), on `conn` (not in a transaction) or on a connection of the pool: the driver is in
        autocommit for it, so no BEGIN and COMMIT round trips. Errors, connecting included, are mapped as in
        write(); SIGTERM and SIGHUP wait for its end."""
        assert self.is_postgres
        with holding_stops(), self._mapped_errors(None), contextlib.ExitStack() as stack:
            if conn is None:
                conn = stack.enter_context(self.engine.connect())
            driver = conn.connection.driver_connection
            assert driver is not None
            driver.autocommit = True
            try:
                yield conn
            finally:
                driver.autocommit = False

    @contextlib.contextmanager
    def transaction(self, conn: sa.Connection, actor: Actor | None = None, *, mark: bool = True) -> Iterator[None]:
        """A marked write transaction on a connection the caller keeps open (a worker's loop). SIGTERM and SIGHUP
        wait for its end (etlcraft.core.stops)."""
        with holding_stops():
            yield from self._transaction(conn, actor, mark=mark)

    def _transaction(self, conn: sa.Connection, actor: Actor | None, *, mark: bool) -> Iterator[None]:
        who = actor or current_actor()
        now = self.clock.now()
        state = self._sqlite_state(conn)
        with self._mapped_errors(state):
            if state is not None:
                conn.info[_BEGIN_KEY] = "BEGIN IMMEDIATE"
                state.actor, state.kind, state.now = who.name, str(who.kind), format_timestamp(now)
                state.notes.clear()
                state.failure = None
            try:
                with conn.begin():
                    if state is None and (mark or self.clock.pinned):
                        conn.execute(
                            sa.text(
                                "SELECT set_config('etl_craft.actor', :actor, true),"
                                " set_config('etl_craft.actor_kind', :kind, true),"
                                " set_config('etl_craft.now', :now, true)"
                            ),
                            {"actor": who.name, "kind": str(who.kind),
                             "now": now.isoformat() if self.clock.pinned else ""},
                        )
                    yield
            finally:
                if state is not None:
                    conn.info.pop(_BEGIN_KEY, None)
                    state.actor = state.kind = state.migration = state.now = None

    def without_statement_timeout(self, conn: sa.Connection) -> None:
        """PostgreSQL: no statement timeout for the rest of `conn`'s transaction. For migrate and grant only, which
        wait for each other's lock and may rebuild or analyze large tables: their work must not stop half-way."""
        if self.is_postgres:
            conn.exec_driver_sql("SET LOCAL statement_timeout = 0")

    def set_migration(self, conn: sa.Connection, name: str | None) -> None:
        """Name the project migration whose changes the CFG_ triggers record (None: no migration)."""
        state = self._sqlite_state(conn)
        if state is not None:
            state.migration = name
        else:
            conn.execute(sa.text("SELECT set_config('etl_craft.migration', :name, true)"), {"name": name or ""})

    def execute_script(self, conn: sa.Connection, script: str) -> None:
        """Run a rendered multi-statement script inside the connection's transaction."""
        dbapi = conn.connection.driver_connection
        assert dbapi is not None
        if self.is_postgres:
            with dbapi.cursor() as cursor:
                cursor.execute(script)
            return
        cursor = dbapi.cursor()
        try:
            for statement in sqlite_script_statements(script):
                cursor.execute(statement)
        finally:
            cursor.close()

    def dispose(self) -> None:
        self.engine.dispose()

    # -- errors ----------------------------------------------------------------------------------------------

    @staticmethod
    def _sqlite_state(conn: sa.Connection) -> _SqliteState | None:
        state = conn.info.get(_STATE_KEY)
        return state if isinstance(state, _SqliteState) else None

    @contextlib.contextmanager
    def _mapped_errors(self, state: _SqliteState | None) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            # psycopg's errors are known only once a PostgreSQL Engine DB has imported it (see _psycopg_errors).
            if isinstance(exc, EtlCraftError) or not isinstance(exc, (DBAPIError, sqlite3.Error,
                                                                     *_psycopg_errors("Error"))):
                raise
            raise self.map_error(exc, state) from exc

    def map_error(self, exc: BaseException, state: _SqliteState | None = None) -> EtlCraftError:
        """Turn a driver error into etl-craft's exception: ECnnn codes into their classes, the rest into
        EngineDbError naming the Engine DB."""
        orig: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        if isinstance(orig, _psycopg_errors("Error")):
            pg_error = cast("psycopg.Error", orig)
            code = pg_error.sqlstate or ""
            message = pg_error.diag.message_primary or str(orig)
            # The Engine DB puts its code first ("EC020: attempt 3 is SUCCESS, ...") for psql's readers; the
            # exception class says it here.
            message = message.removeprefix(f"{code}: ") if code.startswith("EC") else message
        elif state is not None and state.failure is not None:
            code, message = state.failure
            state.failure = None
        else:
            text = str(orig)
            match = _CODE_PREFIX.match(text)
            code = match.group(1) if match else ""
            message = text[len(match.group(0)):] if match else text
            if match and state is not None and state.notes and state.notes[-1]:
                message = state.notes[-1]
        cls = class_for_code(code) if code else None
        if cls is not None:
            return cls(message)
        if self.dialect == "sqlite" and _is_connect_error(orig) and self.url.database not in (None, "", ":memory:"):
            problem = open_problem(Path(self.url.database))
            if problem is not None:  # no outage to ride out: the file cannot be where it is named
                return EngineDbError(problem)
        if (isinstance(exc, DBAPIError) and exc.connection_invalidated) or _is_connect_error(orig):
            return EngineUnreachableError(connecting.connect_failure(self._server(), message))
        if code == "57014" and connecting.is_statement_timeout(message):
            statement = exc.statement if isinstance(exc, DBAPIError) else None
            return EngineDbError(connecting.statement_timeout(
                f"the Engine DB at {self.display_url}", self._statement_seconds(), self.timeouts.key("statement"),
                statement))
        if isinstance(orig, sqlite3.OperationalError) and "database is locked" in message:
            return EngineDbError(
                f"the Engine DB file {self.url.database} stayed locked by another process for "
                f"{self.timeouts.busy} s ({self.timeouts.key('busy')}); a SQLite Engine DB has one writer at a "
                "time: wait for the other etl-craft command to end (or end it) and try again, raise the limit, or "
                "use PostgreSQL for an Engine DB that several processes share"
            )
        return EngineDbError(f"the Engine DB at {self.display_url} refused the statement: {message.strip()}")


def _psycopg_errors(name: str) -> tuple[type[BaseException], ...]:
    """psycopg's error class `name`, or none when psycopg was never imported (a SQLite Engine DB, whose commands
    need not pay for importing it): no psycopg error can have been raised then."""
    module = sys.modules.get("psycopg")
    return (getattr(module, name),) if module is not None else ()


def _is_connect_error(orig: BaseException) -> bool:
    """A failure to reach the database at all, or a connection the server dropped: no SQLSTATE, class 08
    (connection exception), or the server shutting down, starting up or restarting (57P01 to 57P03)."""
    if isinstance(orig, _psycopg_errors("OperationalError")):
        sqlstate = cast("psycopg.OperationalError", orig).sqlstate
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in ("57P01", "57P02", "57P03")
    return isinstance(orig, sqlite3.OperationalError) and "unable to open" in str(orig)


def _ping_when_idle(engine: sa.Engine) -> None:
    """Ping a pooled connection when it is taken from the pool after PING_AFTER_IDLE_SECONDS idle, and replace it
    when the ping fails (the server restarted, or a network device dropped the idle session), instead of
    SQLAlchemy's pool_pre_ping, which pings on every checkout: a round trip per transaction on the hot path, where
    a connection is taken back milliseconds after it was returned. A connection that breaks while in use fails its
    statement as before, and is replaced: the callers ride out such an outage for as long as the lease
    (etlcraft.engine.outage)."""

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE_KEY] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.pop(_IDLE_SINCE_KEY, None)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # the pool discards this connection and checks out another (up to three tries)
            raise sa.exc.DisconnectionError(f"a pooled Engine DB connection failed its ping: {exc}") from exc
        if not alive:
            raise sa.exc.DisconnectionError("a pooled Engine DB connection failed its ping")
