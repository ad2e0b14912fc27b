"""The fork server that task processes are forked from: a fork of this warm process, so that a task process
starts with etl-craft imported and its caches filled (write-API functions, named queries, handlers) and pays
neither an interpreter start nor an import.

It is the standard library's fork server loop (multiprocessing.forkserver.main), run in a copy of this process
made with os.fork() instead of in a new interpreter, and registered where multiprocessing looks for its fork
server, so `multiprocessing.get_context("forkserver").Process(...).start()` uses it unchanged. Forking is safe
only while this process has one thread; otherwise (a server running runs in threads) the standard fork server
is started as usual, with etl-craft and the dialect's warm-up preloaded (etlcraft.supervisor.warm).
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import socket
import sys
import threading
from multiprocessing import connection, forkserver, popen_forkserver, reduction, resource_tracker, spawn, util
from multiprocessing.context import set_spawning_popen
from typing import Any

from etlcraft.engine.db import EngineDB
from etlcraft.supervisor.warm import warm

CONTEXT = multiprocessing.get_context("forkserver")
_connection: Any = connection  # arbitrary_address is not in the type stubs


class _Unawaited(popen_forkserver.Popen):
    """The fork server's Popen, without waiting for the fork: the standard one blocks start() until the fork
    server has forked and sent the child's PID back, about 4 ms of a large warm process's fork on this machine,
    during which a supervisor starting a spare could do nothing else (release/benchmarks/overhead.md, round 5).
    Here the PID is read when it is first needed (pid, poll), by when the fork server has long sent it."""

    _pid: int | None = None

    def _launch(self, process_obj: Any) -> None:
        # The standard library's _launch (3.11 to 3.13) but its last line, which reads the PID.
        prep_data = spawn.get_preparation_data(process_obj._name)
        buf = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)  # type: ignore[attr-defined]
        parent_w = os.dup(w)
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))  # type: ignore[attr-defined]
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())

    @property
    def pid(self) -> int:
        if self._pid is None:
            self._pid = forkserver.read_signed(self.sentinel)  # the fork server's first answer: the child's PID
        return self._pid

    @pid.setter
    def pid(self, value: int) -> None:
        self._pid = value

    def poll(self, flag: int = os.WNOHANG) -> int | None:
        if self.returncode is None and self._pid is None:
            if flag == os.WNOHANG and not connection.wait([self.sentinel], 0):
                # Not forked yet (no answer): it has not ended. Every Process.start() polls the processes started
                # before it (multiprocessing.process._cleanup), and reading the PID here would make the next spare's
                # start wait for this one's fork after all.
                return None
            try:
                self.pid  # noqa: B018 - read before the sentinel can mean the exit code
            except (OSError, EOFError):  # the fork server went without forking it
                self.returncode = 255
                return self.returncode
        return super().poll(flag)


class UnawaitedProcess(CONTEXT.Process):  # type: ignore[name-defined]
    """A process of the fork server whose start() does not wait for the fork (_Unawaited): for spare task
    processes, started ahead of any attempt."""

    @staticmethod
    def _Popen(process_obj: Any) -> _Unawaited:
        return _Unawaited(process_obj)


def preload(dialect: str) -> list[str]:
    """What the standard fork server imports before it forks the first task process: the main module (else every
    task process runs an installed console script again to import it), the task process's code, and the warm-up
    of the Engine DB's dialect."""
    return ["__main__", "etlcraft.supervisor.child", f"etlcraft.supervisor.warm.{dialect}"]


def ensure_fork_server(db: EngineDB) -> None:
    """Warm this process for task processes on `db`'s dialect and make sure a fork server runs: forked from this
    process when it has a single thread (call it before starting any) and, on SQLite, no connection to the
    database open (_sqlite_closed); else the standard one."""
    if threading.current_thread() is not threading.main_thread() or threading.active_count() > 1 \
            or not _sqlite_closed(db):
        CONTEXT.set_forkserver_preload(preload(db.dialect))
        return
    warm(db.dialect)
    _fork_server()


def _sqlite_closed(db: EngineDB) -> bool:
    """On a SQLite Engine DB, close this process's pooled connections and tell whether no file of the database is
    left open in this process (Linux's /proc says; False where it cannot tell). SQLite keeps the state of an open
    database per process: its locks and the mapping of its WAL index. A fork would copy that state into every task
    process, whose own connection would then take it for its own and skip the locks that tell other processes the
    WAL index is in use: a task process that records its outcome after its supervisor died could write through an
    index another process had rebuilt, and corrupt the database. True on PostgreSQL."""
    if db.is_postgres:
        return True
    db.engine.dispose()
    path = db.engine.url.database
    if not path or path == ":memory:":
        return False
    files = {os.path.realpath(path) + suffix for suffix in ("", "-wal", "-shm", "-journal")}
    try:
        descriptors = os.listdir("/proc/self/fd")
    except OSError:
        return False
    for fd in descriptors:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") in files:
                return False
        except OSError:  # the listing's own descriptor, closed since
            continue
    return True


def _fork_server() -> None:
    """multiprocessing.forkserver.ForkServer.ensure_running, with os.fork() where it starts a new interpreter."""
    server: Any = forkserver._forkserver  # its private state, which ensure_running() fills the same way
    with server._lock:
        resource_tracker.ensure_running()
        if server._forkserver_pid is not None:
            pid, _ = os.waitpid(server._forkserver_pid, os.WNOHANG)
            if not pid:
                return  # still serving
            os.close(server._forkserver_alive_fd)
            server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None
        sys.stdout.flush()  # else the copy's buffers would print this process's pending output a second time
        sys.stderr.flush()
        with socket.socket(socket.AF_UNIX) as listener:
            address = _connection.arbitrary_address("AF_UNIX")
            listener.bind(address)
            if not util.is_abstract_socket_namespace(address):
                os.chmod(address, 0o600)
            listener.listen()
            alive_r, alive_w = os.pipe()  # this process holds the write end: the server ends when it is closed
            pid = os.fork()
            if pid == 0:
                _serve(listener.fileno(), alive_r, alive_w)
            os.close(alive_r)
        server._forkserver_address = address
        server._forkserver_alive_fd = alive_w
        server._forkserver_pid = pid


def _serve(listener_fd: int, alive_r: int, alive_w: int) -> None:
    """In the fork: serve fork requests until the parent goes; never return (no atexit hook of the parent runs)."""
    try:
        os.close(alive_w)
        gc.freeze()  # what the parent left is never collected here: no finalizer may close a connection it shares
        forkserver.main(listener_fd, alive_r, [])
    finally:
        os._exit(0)
