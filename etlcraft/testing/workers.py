"""Spreading a suite's tests over the machine's cores: copies of this process, forked once the project is loaded.

A test costs tens of milliseconds, mostly DuckDB statements on one thread, so a suite of many tests can use every
core. The parent loads the project (imports, Engine DB, metadata) once, then forks workers: each inherits that warm
state, opens its own in-memory DuckDB, runs every Nth test and sends its reports back through a pipe; the parent
runs its own share meanwhile. Reports are put back in manifest order, so a report does not depend on how many
workers ran it. A worker runs no other program and opens no socket: it is this process, continued.

Forking is done only where it is safe and pays: on a platform with os.fork, from a process with one thread (a
thread holding a lock when the process forks would leave it held for ever in the copy; the CLI has one thread
until its first test, and threads a library started, such as DuckDB's, count too), and with at least
MIN_TESTS_PER_WORKER tests for each worker. A worker that dies or sends nothing readable costs nothing but time: the
parent runs its tests itself.
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any

#: Fewer tests than this per worker do not pay for a fork and a new in-memory DuckDB (about 35 ms).
MIN_TESTS_PER_WORKER = 8

Report = dict[str, Any]


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worker_count(tests: int, requested: int | None) -> int:
    """How many processes run `tests` tests: `requested` (at least 1), else one per available CPU; never more than
    one per MIN_TESTS_PER_WORKER tests, and 1 where forking is unavailable or unsafe (see the module docstring)."""
    wanted = available_cpus() if requested is None else max(1, requested)
    if not hasattr(os, "fork") or _threads() > 1:
        return 1
    return max(1, min(wanted, tests // MIN_TESTS_PER_WORKER))


def _threads() -> int:
    """This process's threads: the operating system's count where it can be read, since threads a library started
    (DuckDB's, once a database is open) are not in threading's; else threading's."""
    try:
        return max(len(os.listdir("/proc/self/task")), threading.active_count())
    except OSError:
        return threading.active_count()


def run_spread(items: list[str], run: Callable[[str], Report], workers: int,
               after_fork: Callable[[], None]) -> list[Report]:
    """run(item) for every item, over `workers` processes (this one included); the reports in items' order.
    `after_fork` runs first in each worker (to drop what it must not share with the parent)."""
    if workers <= 1:
        return [run(item) for item in items]
    shares = [list(range(w, len(items), workers)) for w in range(workers)]
    sys.stdout.flush()
    sys.stderr.flush()
    children = [_fork(items, shares[w], run, after_fork) for w in range(1, workers)]
    reports: dict[int, Report] = {i: run(items[i]) for i in shares[0]}
    for (pid, reader), share in zip(children, shares[1:], strict=True):
        received = _collect(pid, reader)
        for i in share:  # a share the worker did not send back is run here
            reports[i] = received[i] if i in received else run(items[i])
    return [reports[i] for i in range(len(items))]


def _fork(items: list[str], share: list[int], run: Callable[[str], Report],
          after_fork: Callable[[], None]) -> tuple[int, int]:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid:
        os.close(writer)
        return pid, reader
    status = 1
    try:  # the worker: its share, pickled down the pipe; it never returns into the caller's code
        os.close(reader)
        after_fork()
        data = pickle.dumps({i: run(items[i]) for i in share}, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(writer, "wb") as out:
            out.write(data)
        status = 0
    finally:
        os._exit(status)  # no atexit handler, no buffered output of the parent written twice


def _collect(pid: int, reader: int) -> dict[int, Report]:
    """The reports a worker sent, once it has ended; {} when it failed or sent nothing readable."""
    with os.fdopen(reader, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return {}
    try:
        received = pickle.loads(data)  # written by this process's own fork, through its own pipe
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError):
        return {}
    return received if isinstance(received, dict) else {}


__all__ = ["MIN_TESTS_PER_WORKER", "available_cpus", "run_spread", "worker_count"]
