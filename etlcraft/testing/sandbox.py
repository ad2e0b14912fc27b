"""The in-memory databases a hermetic test runs in, made cheap to get, and the time budget that stops them.

Engine DB: the engine's own migrations are applied once per process, to a template SQLite database in memory;
each project's Engine DB is a copy of it (SQLite's backup API) to which only the project's migrations are applied.
Nothing is cached on disk, so no state outside the process can change a result.

Warehouse: opening an in-memory DuckDB costs tens of milliseconds, more than a small test itself, so a process
keeps one (per thread). Each test gets a database of its own on it, attached in memory, made the default catalog
(USE) and detached when the test ends: no table, view or macro of one test is seen by the next. When a test
fails, is interrupted or leaves a temporary object behind, the connection is closed instead and the next test
opens a new one. The connection runs on one thread: a test's tables hold a few rows, and starting the threads of a
parallel plan for each of its small statements costs more than the statement itself (about twice as much on a
machine with two cores).

Time budget: a timer interrupts the DuckDB statement running when the test's budget ends (the connection's
interrupt()); whatever error that statement then raises is reported as the budget's safety violation.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from etlcraft.config.loader import Connection
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import Migration, migrate
from etlcraft.testing.files import Deadline
from etlcraft.warehouse.connection import IN_MEMORY_DUCKDB, Warehouse

_local = threading.local()
_names = itertools.count(1)
#: Threads of the shared in-memory DuckDB (see the module docstring).
DUCKDB_THREADS = 1
#: What a test may have left outside its own database: any of it means the connection is closed, not reused.
_LEFT_BEHIND = ("SELECT (SELECT COUNT(*) FROM duckdb_tables())"
                " + (SELECT COUNT(*) FROM duckdb_views() WHERE NOT internal)")


@functools.cache
def _engine_template() -> sqlite3.Connection:
    """An in-memory SQLite database holding the engine's schema, migrated once per process."""
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
        migrate(db, project=project, command="test")
        yield db
    finally:
        db.dispose()


class _Timer:
    """Interrupts the connection's running statement when `seconds` have passed, unless stopped before."""

    def __init__(self, seconds: float, interrupt: Any) -> None:
        self.fired = False
        self._lock = threading.Lock()
        self._active = True
        self._interrupt = interrupt
        self._thread = threading.Timer(max(seconds, 0.0), self._fire)
        self._thread.daemon = True
        self._thread.start()

    def _fire(self) -> None:
        with self._lock:
            if self._active:
                self.fired = True
                self._interrupt()

    def stop(self) -> bool:
        """Stop the timer; whether it fired."""
        with self._lock:
            self._active = False
        self._thread.cancel()
        return self.fired


def _shared_warehouse() -> Warehouse:
    warehouse: Warehouse | None = getattr(_local, "warehouse", None)
    if warehouse is None:
        warehouse = Warehouse(Connection(dialect="duckdb", url=IN_MEMORY_DUCKDB, section="Warehouse"))
        with warehouse.engine.connect() as conn:
            dbapi: Any = conn.connection.dbapi_connection
            dbapi.execute(f"SET threads = {DUCKDB_THREADS}")
        _local.warehouse = warehouse
    return warehouse


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
    with warehouse.engine.connect() as conn:
        dbapi: Any = conn.connection.dbapi_connection
        dbapi.execute(f"ATTACH ':memory:' AS {name}")
        dbapi.execute(f"USE {name}")
    timer = _Timer(deadline.remaining(), dbapi.interrupt)
    clean = False
    try:
        yield warehouse
        clean = True
    except Exception:
        if timer.stop():
            raise deadline.expired("DuckDB ran a statement (it was interrupted)") from None
        raise
    finally:
        if timer.stop() or not clean or not _detach(dbapi, name):
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


__all__ = ["engine_db", "warehouse_for_test"]
