"""Spare task processes and outcome reports (issue 27), on a real supervisor of task processes (LocalSupervisor) and
a fresh PostgreSQL Engine DB: an attempt runs in the task process that was forked before it was claimed, one process
per attempt still; the supervisor records the attempt's start and the outcome its task process sends, so a PYTHON
attempt's process never connects to the Engine DB; the outcome is recorded before the process ends, so its run goes
on (and its slot is free) even while the process lingers; spares that die are replaced and close() ends them. The
`etl-craft run` and `etl-craft server` suites run every attempt through the same supervisor."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from etlcraft.config.loader import load_config
from etlcraft.core.actor import current_actor
from etlcraft.core.process import process_start
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, read_then_call
from etlcraft.engine.settings import engine_id
from etlcraft.services.runs import run_settings
from etlcraft.supervisor import local
from etlcraft.supervisor.local import Ended, LocalSupervisor
from etlcraft.supervisor.pools import AttemptSpec, LocalPool
from tests.py.conftest import PgServer
from tests.py.process.test_pool_contract import Setup, _setup
from tests.py.support.project import MARK, Task, release, wait_for

pytestmark = [pytest.mark.process, pytest.mark.postgres]

#: A task that records its outcome, then blocks in logging.shutdown() (its own handler's close) as its process ends.
LINGER_SCRIPT = MARK + '''
import logging
import os
import time

from etlcraft.scripting import ScriptResult


class Blocking(logging.Handler):
    def emit(self, record):
        pass

    def close(self):
        time.sleep(300)


def run(task):
    logging.getLogger().addHandler(Blocking())
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    mark(marks / f"{task.task_code}.{task.attempt_id}.start", f"{time.time()} {os.getpid()}")
    return ScriptResult(row_count=1)
'''

#: A task that writes how many TCP connections to the Engine DB's port its own process opened: those in its file
#: table that its fork server's (its parent's) does not hold, which it inherited.
CONNECTIONS_SCRIPT = MARK + '''
import os
from pathlib import Path

from etlcraft.scripting import ScriptResult


def _sockets(pid):
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed since
            continue
    return found


def run(task):
    port = int(task.input_params["port"])
    inodes = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    opened = (_sockets("self") - _sockets(os.getppid())) & inodes
    marks = task.project_dir / "marks"
    marks.mkdir(exist_ok=True)
    mark(marks / f"{task.task_code}.{task.attempt_id}.connections", str(len(opened)))
    return ScriptResult(row_count=1, offset=task.attempt_id)
'''


@pytest.fixture
def fresh_pg(pg_server: PgServer) -> Iterator[str]:
    name = pg_server.create()
    yield pg_server.url_for(name)
    pg_server.drop(name)


@contextmanager
def _supervisor(setup: Setup, run_id: int, slots: int = 2) -> Iterator[tuple[EngineDB, LocalSupervisor, LocalPool]]:
    db = setup.db()
    me = f"spare-test-{os.getpid()}"
    call(db, "start_run", run_id=run_id, owner_id=me, lease_seconds=120)
    settings = run_settings(db, load_config(setup.root), "p", run_id, None, me, engine_id(db))
    supervisor = LocalSupervisor(db, me, settings.child, slots, settings.log_dir)
    try:
        yield db, supervisor, LocalPool(db, supervisor)
    finally:
        supervisor.stop_all("the test ended", grace_seconds=1)
        supervisor.close()


def _queued(setup: Setup, db: EngineDB, run_id: int, task_code: str) -> AttemptSpec:
    task = next(t for t in call(db, "ready_tasks", run_id=run_id) if t.task_code == task_code)
    queued = call(db, "queue_attempt", run_id=run_id, task_id=task.task_id)[0]
    row = setup.rows("SELECT TASK_RUN_ID, POOL, SLOT_KIND FROM {S}AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = :a",
                     a=queued.attempt_id)[0]
    return AttemptSpec(int(queued.attempt_id), int(row["task_run_id"]), run_id, "proc", "p", task_code, "PYTHON",
                       str(row["pool"]), str(row["slot_kind"]), None, 60)


def _ended(supervisor: LocalSupervisor, timeout: float = 30) -> list[Ended]:
    """What the supervisor reports within `timeout` seconds (waiting until something is reported)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = supervisor.wait(min(1.0, max(0.0, deadline - time.monotonic())))
        if ended:
            return ended
    return []


def _mark_pid(setup: Setup, task_code: str, attempt_id: int) -> int:
    return int((setup.root / "marks" / f"{task_code}.{attempt_id}.start").read_text().split()[1])


def test_an_attempt_runs_in_the_spare_task_process_forked_before_its_claim(tmp_path: Path, fresh_pg: str) -> None:
    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a", {"hold": "a"}), Task("b")]}) as setup:
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id) as (db, supervisor, pool):
            assert len(supervisor.spares) == 2  # one per slot (at most SPARES), started before any claim
            spare, other = (s.process for s in supervisor.spares)
            spec = _queued(setup, db, run_id, "a")
            pool.submit(spec)
            assert supervisor.children[spec.attempt_id].process is spare
            assert [s.process for s in supervisor.spares] == [other]  # the next is forked when it next waits
            setup.wait_started("a")
            assert _mark_pid(setup, "a", spec.attempt_id) == spare.pid
            release(setup.root, "a")
            assert [(e.attempt_id, e.status) for e in _ended(supervisor)] == [(spec.attempt_id, "SUCCESS")]
            assert setup.rows("SELECT PID FROM {S}AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = :a",
                              a=spec.attempt_id)[0]["pid"] == spare.pid
            assert len(supervisor.spares) == 2 and spare not in [s.process for s in supervisor.spares]
            second = _queued(setup, db, run_id, "b")  # one process per attempt: the next runs in another spare
            pool.submit(second)
            assert [(e.attempt_id, e.status) for e in _ended(supervisor)] == [(second.attempt_id, "SUCCESS")]
            assert _mark_pid(setup, "b", second.attempt_id) == other.pid
            assert setup.rows("SELECT COUNT(DISTINCT PID) AS n FROM {S}AUD_TASK_ATTEMPTS")[0]["n"] == 2


def test_a_supervisor_keeps_a_spare_per_slot_up_to_spares(tmp_path: Path, fresh_pg: str) -> None:
    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a")]}) as setup:
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id, slots=1) as (_db, supervisor, _pool):
            assert len(supervisor.spares) == 1
        with _supervisor(setup, run_id, slots=local.SPARES + 2) as (_db, supervisor, _pool):
            assert len(supervisor.spares) == local.SPARES == 4
            assert len({s.process.pid for s in supervisor.spares}) == 4


def test_an_outcome_is_reported_before_the_task_process_ends_and_its_slot_is_free(
        tmp_path: Path, fresh_pg: str) -> None:
    tasks = {"p": [Task("slow_exit", script="linger.py")]}
    with _setup(tmp_path, fresh_pg, "local", tasks) as setup:
        (setup.root / "ingestion_scripts" / "linger.py").write_text(LINGER_SCRIPT)
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id, slots=1) as (db, supervisor, pool):
            spec = _queued(setup, db, run_id, "slow_exit")
            pool.submit(spec)
            ended = _ended(supervisor)
            assert [(e.attempt_id, e.status, e.exit_code) for e in ended] == [(spec.attempt_id, "SUCCESS", 0)]
            child = supervisor.children[spec.attempt_id]
            assert child.process.is_alive()  # blocked in its logging handler's close(), after the report
            assert supervisor.free == 1  # it holds no slot: its attempt has ended
            assert supervisor.wait(0.5) == []  # reported once
            os.killpg(child.process.pid or 0, signal.SIGKILL)
            wait_for(lambda: not supervisor.wait(0.2) and not supervisor.children, timeout=30,
                     what="the lingering task process to be reaped")
            statuses = setup.rows("SELECT STATUS FROM {S}AUD_TASK_ATTEMPTS ORDER BY ATTEMPT_ID")
            assert [r["status"] for r in statuses] == ["SUCCESS"]  # its kill after the outcome changed nothing


def test_a_spare_that_died_is_replaced_and_close_ends_the_spares(tmp_path: Path, fresh_pg: str) -> None:
    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a")]}) as setup:
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id) as (db, supervisor, pool):
            dead = supervisor.spares[0].process
            os.kill(dead.pid or 0, signal.SIGKILL)
            dead.join(timeout=10)
            assert supervisor.wait(0.1) == []
            assert len(supervisor.spares) == 2 and dead not in [s.process for s in supervisor.spares]
            spec = _queued(setup, db, run_id, "a")
            pool.submit(spec)
            assert [(e.attempt_id, e.status) for e in _ended(supervisor)] == [(spec.attempt_id, "SUCCESS")]
            spares = [s.process for s in supervisor.spares]
            assert spares
            supervisor.close()
            assert supervisor.spares == []
            assert not any(p.is_alive() for p in spares)


def test_the_supervisor_starts_the_attempt_it_hands_to_a_spare_on_its_own_connection(
        tmp_path: Path, fresh_pg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attempt is RUNNING in the spare (its PID and process start) when submit returns, recorded by the
    supervisor's own start_attempt call, made with the read of the attempt's context (read_then_call: one round
    trip): the task process's new session does not plan start_attempt and its triggers on the chain link's path."""
    calls: list[dict[str, object]] = []

    def spy(db: EngineDB, query: str, params: dict[str, object], name: str,
            **arguments: object) -> tuple[list[dict[str, object]], list[object]]:
        assert (query, params, name) == ("attempt_context", {"attempt_id": arguments["attempt_id"]}, "start_attempt")
        calls.append(arguments)
        return read_then_call(db, query, params, name, **arguments)

    monkeypatch.setattr(local, "read_then_call", spy)
    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a", {"hold": "a"})]}) as setup:
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id) as (db, supervisor, pool):
            spare = supervisor.spares[0].process
            spec = _queued(setup, db, run_id, "a")
            pool.submit(spec)
            assert [(c["attempt_id"], c["pid"]) for c in calls] == [(spec.attempt_id, spare.pid)]
            row = setup.rows("SELECT STATUS, PID, PROCESS_START FROM {S}AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = :a",
                             a=spec.attempt_id)[0]
            assert (row["status"], row["pid"]) == ("RUNNING", spare.pid)
            assert row["process_start"] == process_start(spare.pid or 0)
            release(setup.root, "a")
            assert [(e.attempt_id, e.status) for e in _ended(supervisor)] == [(spec.attempt_id, "SUCCESS")]


def test_the_supervisor_records_the_outcome_its_task_process_sends__a_python_attempt_never_connects(
        tmp_path: Path, fresh_pg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The outcome (status, counts, offset, log) goes up the report channel and the supervisor records it with
    finish_attempt on its own connection, under the owner id and as the actor of the attempt; the task process of a
    PYTHON attempt, started by its supervisor with its context handed over, holds no Engine DB connection at all.
    Failed before: the spare connected ahead of its attempt and recorded the outcome itself."""
    calls: list[dict[str, object]] = []
    actors: list[tuple[str, str]] = []

    def spy(db: EngineDB, name: str, **arguments: object) -> object:
        if name == "finish_attempt":
            calls.append(arguments)
            actors.append((current_actor().name, str(current_actor().kind)))
        return call(db, name, **arguments)

    monkeypatch.setattr(local, "call", spy)
    port = make_url(fresh_pg).port or 5432
    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a", {"port": str(port)}, script="conn.py")]}) as setup:
        (setup.root / "ingestion_scripts" / "conn.py").write_text(CONNECTIONS_SCRIPT)
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id) as (db, supervisor, pool):
            spec = _queued(setup, db, run_id, "a")
            pool.submit(spec)
            assert [(e.attempt_id, e.status, e.exit_code) for e in _ended(supervisor)] == [(spec.attempt_id,
                                                                                            "SUCCESS", 0)]
            assert [(c["attempt_id"], c["owner_id"], c["status"], c["offset_value"]) for c in calls] == [
                (spec.attempt_id, supervisor.owner_id, "SUCCESS", str(spec.attempt_id))]
            held = (setup.root / "marks" / f"a.{spec.attempt_id}.connections").read_text()
            assert held == "0", f"the task process held {held} Engine DB connection(s)"
            row = setup.rows("SELECT a.STATUS, a.EXIT_CODE, a.TASK_LOG, o.OFFSET_VALUE FROM {S}AUD_TASK_ATTEMPTS a"
                             " JOIN {S}AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID"
                             " JOIN {S}AUD_TASK_OFFSETS o ON o.TASK_ID = tr.TASK_ID WHERE a.ATTEMPT_ID = :a",
                             a=spec.attempt_id)[0]
            assert (row["status"], row["exit_code"], row["offset_value"]) == ("SUCCESS", 0, str(spec.attempt_id))
            assert f"attempt {spec.attempt_id} of task a" in row["task_log"]
            assert actors == [(supervisor.request_base.actor_name, supervisor.request_base.actor_kind)]


def test_a_stop_while_a_spare_is_forked_stops_the_supervisor(
        tmp_path: Path, fresh_pg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: an exception raised while a spare was being forked (the stop signal's handler raises
    Interrupted wherever the supervisor is) was taken for a failure to start the spare and swallowed, so
    `etl-craft run` went on after SIGTERM."""

    class Stop(Exception):
        pass

    with _setup(tmp_path, fresh_pg, "local", {"p": [Task("a")]}) as setup:
        run_id = setup.init_run("p")
        with _supervisor(setup, run_id) as (_db, supervisor, _pool):
            idle = supervisor.spares.pop()
            idle.requests.close()
            idle.process.join(timeout=10)

            def interrupted(self: object) -> None:
                raise Stop("SIGTERM")

            monkeypatch.setattr(type(idle.process), "start", interrupted)
            with pytest.raises(Stop):
                supervisor.wait(0.1)
