"""Spare task processes start without waiting for the fork server's answer (UnawaitedProcess). The fork server is
forked from `etl-craft run` only when no SQLite connection to the Engine DB is open in it:
SQLite keeps an open database's locks and WAL index mapping per process, and a task process forked with a copy of
them would skip the locks its own connection needs (a task process that outlived its supervisor corrupted the
Engine DB as it recorded its outcome: tests/py/process/test_local_runs.py, the kill -9 test)."""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from etlcraft.engine.db import EngineDB
from etlcraft.supervisor.forkserver import CONTEXT, UnawaitedProcess, _sqlite_closed


def _open_files(folder: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder.resolve())):
            found.append(Path(target).name)
    return sorted(found)


def test_sqlite_closed__closes_the_pooled_connections__a_connection_in_use_keeps_the_database_open(
        tmp_path: Path) -> None:
    db = EngineDB(f"sqlite:///{tmp_path / 'engine.db'}")
    try:
        with db.engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (a INT)")
        assert _open_files(tmp_path) == ["engine.db", "engine.db-shm", "engine.db-wal"]  # kept by the pool
        assert _sqlite_closed(db)
        assert _open_files(tmp_path) == []
        held = db.engine.connect()
        try:
            held.exec_driver_sql("SELECT count(*) FROM t").scalar()
            assert not _sqlite_closed(db), "a connection in use cannot be closed: the standard fork server is used"
        finally:
            held.close()
    finally:
        db.dispose()


def test_sqlite_closed__postgresql_needs_nothing_closed(pg_url: str) -> None:
    db = EngineDB(pg_url)
    try:
        assert _sqlite_closed(db)
    finally:
        db.dispose()


def _send_pid(channel: Connection) -> None:
    channel.send(os.getpid())


@pytest.mark.process
def test_an_unawaited_process_starts_without_waiting_for_the_fork__its_pid_and_exit_are_read_later() -> None:
    """A spare's start() sends its request to the fork server and returns: the fork server's answer (the child's
    PID) is read when the PID is first needed; the process then runs, reports and is joined as any other."""
    ours, theirs = CONTEXT.Pipe(duplex=False)
    process = UnawaitedProcess(target=_send_pid, args=(theirs,))
    process.start()
    theirs.close()
    try:
        assert process._popen._pid is None  # type: ignore[attr-defined]
        assert ours.recv() == process.pid
        process.join(timeout=30)
        assert process.exitcode == 0
    finally:
        ours.close()
        if process.is_alive():
            process.kill()


def test_an_unawaited_process_is_polled_without_waiting_for_its_pid() -> None:
    """Every Process.start() polls the processes started before it: polling one whose fork server has not answered
    yet says it is running, without waiting for the answer (else each spare's start waits for the fork before it);
    once the PID and then the exit code arrive, poll reads them."""
    from multiprocessing import forkserver

    from etlcraft.supervisor.forkserver import _Unawaited

    read, write = os.pipe()
    os.set_blocking(read, False)  # a read that would wait fails instead (poll takes it for a fork server gone)
    popen = _Unawaited.__new__(_Unawaited)
    popen.returncode, popen.sentinel = None, read
    try:
        assert popen.poll() is None
        assert popen._pid is None  # nothing was read: the fork server has not answered
        forkserver.write_signed(write, 4242)  # the fork server's first answer: the child's PID
        assert popen.poll() is None
        assert popen.pid == 4242
        forkserver.write_signed(write, 3)  # its second: the exit code
        assert popen.poll() == 3
    finally:
        os.close(read)
        os.close(write)
