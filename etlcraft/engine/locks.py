"""Named mutation locks held through the Engine DB, so processes on any host that share it take turns.

PostgreSQL: a session advisory lock on a connection kept for the length of the lock, keyed by the first 8 bytes of
sha256 of the name. SQLite: an exclusive fcntl lock on a file beside the Engine DB file (one file per name, in
`<engine db>.locks/`); an in-memory SQLite Engine DB has no file, so its locks only order this process's threads.

`target(db, name)` is the lock every SQL action holds on its target from before it reads MAX(ROW_ID) until after
its warehouse transaction commits (S3.G.5); rehash and table replacement hold the same lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

from etlcraft.core.errors import EngineDbError
from etlcraft.engine.db import EngineDB

log = logging.getLogger(__name__)

_MEMORY_LOCKS: dict[str, threading.Lock] = {}
_MEMORY_GUARD = threading.Lock()


def lock_key(name: str) -> int:
    """The advisory lock key of `name`: a signed 64-bit integer."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big", signed=True)


def target(db: EngineDB, name: str) -> contextlib.AbstractContextManager[None]:
    """Hold the mutation lock of warehouse table `name` (its lower-case qualified name)."""
    return hold(db, f"etl-craft:target:{name.lower()}")


@contextlib.contextmanager
def hold(db: EngineDB, name: str) -> Iterator[None]:
    """Wait for the lock called `name`, hold it for the block, release it after (also when the block raises)."""
    started = time.monotonic()
    if db.is_postgres:
        manager = _advisory(db, name)
    else:
        path = _lock_file(db, name)
        manager = _file_lock(path, name) if path is not None else _memory_lock(name)
    with manager:
        waited = time.monotonic() - started
        if waited > 1:
            log.info("waited %.1f s for the lock %s", waited, name)
        yield


@contextlib.contextmanager
def _advisory(db: EngineDB, name: str) -> Iterator[None]:
    key = lock_key(name)
    try:
        conn = db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    except sa.exc.DBAPIError as exc:
        raise db.map_error(exc) from exc
    try:
        # Another task may write the target for hours: the wait has no statement timeout; RESET restores the
        # session's own (the Engine section's) for the statements after it.
        conn.exec_driver_sql("SET statement_timeout = 0")
        conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": key})
        conn.exec_driver_sql("RESET statement_timeout")
    except BaseException:
        conn.invalidate()  # a wait cut short may still get the lock server-side: end the session, which frees it
        conn.close()
        raise
    try:
        yield
    finally:
        try:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        except sa.exc.DBAPIError:
            conn.invalidate()  # closing the session releases every lock it holds
        conn.close()


def _lock_file(db: EngineDB, name: str) -> Path | None:
    database = db.url.database
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    folder = Path(database).absolute().with_name(Path(database).name + ".locks")
    return folder / f"{hashlib.sha256(name.encode('utf-8')).hexdigest()[:32]}.lock"


def _open_lock_file(path: Path, name: str) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise EngineDbError(f"cannot create the lock file {path} for {name}: {exc.strerror}; make its folder "
                            "writable for etl-craft") from exc


@contextlib.contextmanager
def _file_lock(path: Path, name: str) -> Iterator[None]:
    fd = _open_lock_file(path, name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"{name}\npid {os.getpid()}\n".encode())
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextlib.contextmanager
def _memory_lock(name: str) -> Iterator[None]:
    with _MEMORY_GUARD:
        lock = _MEMORY_LOCKS.setdefault(name, threading.Lock())
    with lock:
        yield


class HeldLock:
    """A lock taken without waiting and held until release(): the server's leadership. On PostgreSQL it lives as
    long as its dedicated connection's session, so `alive()` asks that connection; a file lock cannot be lost while
    this process keeps its file open."""

    def __init__(self, name: str, conn: sa.Connection | None = None, fd: int | None = None) -> None:
        self.name, self._conn, self._fd = name, conn, fd

    def alive(self) -> bool:
        if self._conn is None:
            return True
        try:
            self._conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError:
            return False
        return True

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):  # a session already gone holds no lock
                self._conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": lock_key(self.name)})
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self._conn.invalidate()
                self._conn.close()
            self._conn = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = None


def try_hold(db: EngineDB, name: str) -> HeldLock | None:
    """Take the lock called `name` if nobody holds it, and keep it until HeldLock.release() (or this process ends);
    None when another session or process holds it. An in-memory SQLite Engine DB has no file to lock: its lock only
    orders this process's threads."""
    if db.is_postgres:
        conn = db.new_connection().execution_options(isolation_level="AUTOCOMMIT")
        try:
            taken = conn.execute(sa.text("SELECT pg_try_advisory_lock(:key)"), {"key": lock_key(name)}).scalar()
        except sa.exc.DBAPIError as exc:
            raise db.map_error(exc) from exc
        if not taken:
            conn.close()
            return None
        return HeldLock(name, conn=conn)
    path = _lock_file(db, name)
    if path is None:
        with _MEMORY_GUARD:
            lock = _MEMORY_LOCKS.setdefault(name, threading.Lock())
        return HeldLock(name) if lock.acquire(blocking=False) else None
    fd = _open_lock_file(path, name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{name}\npid {os.getpid()}\n".encode())
    return HeldLock(name, fd=fd)
