"""The in-memory databases a hermetic test runs in, made cheap to get, and the time budget that stops them.

Engine DB: the engine's own migrations are applied to a template SQLite database in memory, once per process, or
read from the image a previous run saved in the user's cache (etlcraft/testing/image.py: keyed by every source that
shapes it, verified by its digest, built again when absent or in doubt); each project's Engine DB is a copy of it
(SQLite's backup API) to which only the project's migrations are applied. Nothing of a project is cached.

Warehouse: opening an in-memory DuckDB costs tens of milliseconds, more than a small test itself, so a process
keeps one (per thread). Each test gets a database of its own on it, attached in memory, made the default catalog
(USE) and detached when the test ends: no table, view or macro of one test is seen by the next. When a test
fails, is interrupted or leaves a temporary object behind, the connection is closed instead and the next test
opens a new one. The connection runs on one thread: a test's tables hold a few rows, and starting the threads of a
parallel plan for each of its small statements costs more than the statement itself (about twice as much on a
machine with two cores).

Time budget: a watchdog thread, started once, interrupts the DuckDB statement running when the test's budget ends
(the connection's interrupt()); whatever error that statement then raises is reported as the budget's safety violation.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from etlcraft.config.loader import Connection
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import Migration, migrate
from etlcraft.testing import image
from etlcraft.testing.files import Deadline
from etlcraft.warehouse.connection import IN_MEMORY_DUCKDB, Session, Warehouse

_local = threading.local()
_names = itertools.count(1)
#: After a test's budget ends, its statements are interrupted again this often until the test has stopped.
INTERRUPT_AGAIN_SECONDS = 0.05
#: Threads of the shared in-memory DuckDB (see the module docstring).
DUCKDB_THREADS = 1
#: What a test may have left outside its own database: any of it means the connection is closed, not reused. (One
#: count over a UNION ALL: about a quarter cheaper for DuckDB than the sum of two scalar subqueries.)
_LEFT_BEHIND = ("SELECT COUNT(*) FROM (SELECT 1 FROM duckdb_tables()"
                " UNION ALL SELECT 1 FROM duckdb_views() WHERE NOT internal) etl_left")


@functools.cache
def _engine_template() -> sqlite3.Connection:
    """An in-memory SQLite database holding the engine's schema: the image a previous run saved when it can be
    trusted (etlcraft/testing/image.py), else migrated here, once per process, and saved for the next run."""
    key = image.image_key()
    template = image.load(key)
    if template is None:
        template = _migrated_template()
        image.store(key, template)
    return template


def _migrated_template() -> sqlite3.Connection:
    db = EngineDB("sqlite://")
    try:
        migrate(db, command="test")
        template = sqlite3.connect(":memory:", check_same_thread=False)
        with db.engine.connect() as conn:
            source = conn.connection.driver_connection
            assert isinstance(source, sqlite3.Connection)
            source.backup(template)
    finally:
        db.dispose()
    return template


@contextlib.contextmanager
def engine_db(project: list[Migration]) -> Iterator[EngineDB]:
    """A new in-memory Engine DB: a copy of the migrated engine schema, with `project`'s migrations applied."""
    db = EngineDB("sqlite://")
    try:
        # sqlite:// keeps one connection per thread for the engine's life: the copy lives in it.
        with db.engine.connect() as conn:
            target = conn.connection.driver_connection
            assert isinstance(target, sqlite3.Connection)
            _engine_template().backup(target)
        migrate(db, project=project, command="test", engine_current=True, record=False)
        yield db
    finally:
        db.dispose()


class _Watchdog:
    """Interrupts the running statement of the test armed on it when that test's time is up. One daemon thread per
    thread that runs tests, started once: a timer thread per test (threading.Timer) cost a thread start, and on a busy
    machine a wait for the scheduler, for each test."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._armed: tuple[float, Any] | None = None  # (time.monotonic() deadline, interrupt)
        self._fired = False
        threading.Thread(target=self._watch, name="etl-craft-test-budget", daemon=True).start()

    def arm(self, seconds: float, interrupt: Any) -> None:
        with self._changed:
            self._armed, self._fired = (time.monotonic() + max(seconds, 0.0), interrupt), False
            self._changed.notify()

    def disarm(self) -> bool:
        """Stop watching; whether the budget ran out (and the statement then running was interrupted)."""
        with self._changed:
            fired, self._armed, self._fired = self._fired, None, False
            return fired

    def _watch(self) -> None:
        with self._changed:
            while True:
                if self._armed is None:
                    self._changed.wait()
                    continue
                end, interrupt = self._armed
                if time.monotonic() < end:
                    self._changed.wait(end - time.monotonic())
                    continue
                # DuckDB forgets an interrupt that came between two statements: interrupt again until disarmed,
                # so a statement that starts after the budget ended is stopped too.
                self._fired = True
                interrupt()
                self._changed.wait(INTERRUPT_AGAIN_SECONDS)


def _watchdog() -> _Watchdog:
    watchdog: _Watchdog | None = getattr(_local, "watchdog", None)
    if watchdog is None:
        watchdog = _local.watchdog = _Watchdog()
    return watchdog


class _HeldWarehouse(Warehouse):
    """The shared in-memory warehouse, its one connection checked out once and held: a transaction begins and ends
    on it, where Warehouse.transaction checks a connection out of the pool and back in each time (the check-in's
    reset is one more DuckDB statement, a ROLLBACK, for every transaction of every test)."""

    held: sa.Connection | None = None

    def held_connection(self) -> sa.Connection:
        if self.held is None:
            self.held = self.connect()
        return self.held

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        conn = self.held_connection()
        with conn.begin():
            yield Session(conn, self.dialect)

    def dispose(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            with contextlib.suppress(Exception):  # a connection in doubt is discarded whatever its close says
                held.close()
        super().dispose()


def _shared_warehouse() -> _HeldWarehouse:
    warehouse: _HeldWarehouse | None = getattr(_local, "warehouse", None)
    if warehouse is None:
        warehouse = _HeldWarehouse(Connection(dialect="duckdb", url=IN_MEMORY_DUCKDB, section="Warehouse"))
        dbapi: Any = warehouse.held_connection().connection.dbapi_connection
        dbapi.execute(f"SET threads = {DUCKDB_THREADS}")
        # A statement running for seconds would otherwise draw DuckDB's progress bar into the report on stdout.
        dbapi.execute("SET enable_progress_bar = false")
        # Hermetic: a test's SQL reads its fixtures and nothing else, not a file (read_csv, COPY) nor a URL;
        # once off, DuckDB refuses to turn this back on while the database runs.
        dbapi.execute("SET enable_external_access = false")
        _local.warehouse = warehouse
    return warehouse


def load_driver() -> None:
    """Load what the first test's warehouse would load, without making it: DuckDB's SQLAlchemy dialect (duckdb_engine,
    with the PostgreSQL dialect it builds on; its import opens and closes an in-memory DuckDB to probe a feature) and
    the list of DuckDB's settings duckdb_engine reads on its first connect (another in-memory DuckDB, opened and
    closed). Called before a suite's workers are forked, so each inherits them instead of paying again. The dialect
    itself is not made here: making one runs a query on DuckDB's default connection, which then keeps its threads
    for the life of the process, and a process with threads must not fork (etlcraft/testing/workers.py)."""
    import duckdb_engine  # noqa: F401 - loaded for the workers to inherit

    # duckdb_engine keeps that list in a cached function of its own; one guarded look-up here, so a release of
    # duckdb_engine without it costs the worker its own first connect, nothing more.
    settings = getattr(sys.modules.get("duckdb_engine.config"), "get_core_config", None)
    if callable(settings):
        settings()


#: What a forked worker inherited from its parent and must neither use nor close (see forget_inherited).
_inherited: list[Any] = []


def forget_inherited() -> None:
    """In a forked worker (etlcraft/testing/workers.py): set aside the parent's DuckDB connection and watchdog, if
    it had made them, so the worker opens its own. They are kept, never closed: closing the parent's connection
    from a copy of the process could disturb the parent's."""
    for name in ("warehouse", "watchdog"):
        _inherited.append(getattr(_local, name, None))
        setattr(_local, name, None)


def _close_shared() -> None:
    warehouse: Warehouse | None = getattr(_local, "warehouse", None)
    _local.warehouse = None
    if warehouse is not None:
        warehouse.dispose()


@contextlib.contextmanager
def warehouse_for_test(deadline: Deadline) -> Iterator[Warehouse]:
    """A warehouse whose default catalog is a new, empty in-memory database, for one test; its statements are
    interrupted when `deadline` passes (SafetyViolation "timeout", exit 4)."""
    warehouse = _shared_warehouse()
    name = f"etl_craft_test_{next(_names)}"
    dbapi: Any = warehouse.held_connection().connection.dbapi_connection
    dbapi.execute(f"ATTACH ':memory:' AS {name}")
    dbapi.execute(f"USE {name}")
    watchdog = _watchdog()
    watchdog.arm(deadline.remaining(), dbapi.interrupt)
    clean = fired = False
    try:
        yield warehouse
        clean = True
    except Exception:
        fired = watchdog.disarm()
        if fired:
            raise deadline.expired("DuckDB ran a statement (it was interrupted)") from None
        raise
    finally:
        fired = watchdog.disarm() or fired
        if fired or not clean or not _detach(dbapi, name):
            _close_shared()


def _detach(dbapi: Any, name: str) -> bool:
    """Detach the test's database; False when anything of the test would outlive it (a temporary table, an object
    made outside its database): the connection must not serve another test then."""
    try:
        dbapi.execute("USE memory")
        dbapi.execute(f"DETACH {name}")
        left = dbapi.execute(_LEFT_BEHIND).fetchone()
    except Exception:  # any doubt about the connection's state: the next test gets a new one
        return False
    return left is not None and left[0] == 0


__all__ = ["engine_db", "forget_inherited", "load_driver", "warehouse_for_test"]
