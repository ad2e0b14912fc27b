"""Pool contract tests (seed S5.J): one module, parametrized over the local provider (task processes of the process
that supervises the run: `etl-craft run` or `etl-craft server`) and the queue provider (a CFG_POOLS row with PROVIDER
'QUEUE', served by separate `etl-craft worker` processes with distinct --name). PostgreSQL only.

Each task execution leaves a marker (marks/<task>.<attempt>.start, written by the task process itself), so a test
counts executions, not only attempt rows. Leases are short (LEASE_SECONDS, heartbeats of a second) to keep the
module fast. `make test` runs each scenario once; `make soak` ETL_CRAFT_SOAK_ITERATIONS (20) times.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.cli.context import CliContext
from etlcraft.config.loader import load_config
from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.migrations import migrate
from etlcraft.engine.settings import engine_id
from etlcraft.services.runs import run_settings
from etlcraft.supervisor.local import LocalSupervisor
from etlcraft.supervisor.pools import UNKNOWN, AttemptSpec, ExecutionHandle, LocalPool, Pool, QueuePool
from tests.py.conftest import TEST_ACTOR, PgServer
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = [pytest.mark.process, pytest.mark.postgres]

ITERATIONS = int(os.environ.get("ETL_CRAFT_SOAK_ITERATIONS", "1"))
LEASE_SECONDS = 5  # heartbeats every second (write_project: a fifth of the lease)
POOL = "farm"
PROVIDERS = ["local", "queue"]


@dataclass
class Setup:
    """A project on a fresh PostgreSQL Engine DB, and the processes a test started (killed at its end)."""

    root: Path
    provider: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    dbs: list[EngineDB] = field(default_factory=list)

    def db(self) -> EngineDB:
        db = CliContext.create(str(self.root), None, None).engine_db()
        self.dbs.append(db)
        return db

    def rows(self, sql: str, **params: Any) -> list[dict[str, Any]]:
        db = self.dbs[0] if self.dbs else self.db()
        with db.read() as conn:
            found = conn.execute(sa.text(sql.format(S=f"{db.schema}.")), params).mappings().all()
        return [{k.lower(): v for k, v in row.items()} for row in found]

    def start(self, *args: str, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        process = start_etl_craft(*args, cwd=self.root, log=self.root / f"{name}.log",
                                  env={**os.environ, **(env or {})})
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text() if path.exists() else ""

    def worker(self, name: str, slots: int = 2, env: dict[str, str] | None = None,
               *extra: str) -> subprocess.Popen[bytes]:
        """An `etl-craft worker` of the pool, registered (ACTIVE) when this returns."""
        process = self.start("worker", "--pool", POOL, "--ingestion-slots", str(slots), "--warehouse-slots",
                             str(slots), "--name", name, "--heartbeat-seconds", "1", "--lease-seconds",
                             str(LEASE_SECONDS), *extra, name=name, env=env)
        wait_for(lambda: process.poll() is not None or bool(self.rows(
            "SELECT 1 FROM {S}AUD_WORKERS WHERE WORKER_NAME = :name AND STATUS = 'ACTIVE'", name=name)),
            timeout=60, what=f"worker {name} to register")
        assert process.poll() is None, self.log(name)
        return process

    def server(self, name: str, *extra: str) -> subprocess.Popen[bytes]:
        process = self.start("server", "--log-format", "json", *extra, name=name)
        wait_for(lambda: "leading as overseer" in self.log(name) or process.poll() is not None, timeout=60,
                 what=f"{name} to lead")
        assert process.poll() is None, self.log(name)
        return process

    def init_run(self, pipeline: str) -> int:
        created = etl_craft("run", "--pipeline-code", pipeline, "--init-only", "--format", "json", cwd=self.root)
        assert created.code == 0, created.err
        return int(json.loads(created.out)["pipeline_run_id"])

    def run_status(self, run_id: int) -> str:
        return str(self.rows("SELECT STATUS FROM {S}AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = :r",
                             r=run_id)[0]["status"])

    def attempts(self, run_id: int) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT a.ATTEMPT_ID, t.TASK_CODE, a.STATUS, a.OWNER_ID, a.CLAIMED_AT, a.ENDED_AT, a.ERROR_MESSAGE, "
            "a.CANCEL_ACKNOWLEDGED_AT FROM {S}AUD_TASK_ATTEMPTS a "
            "JOIN {S}AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID "
            "JOIN {S}CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE tr.PIPELINE_RUN_ID = :r ORDER BY a.ATTEMPT_ID",
            r=run_id)

    def executions(self) -> Counter[str]:
        return Counter(path.name.split(".")[0] for path in (self.root / "marks").glob("*.start"))

    def wait_started(self, task: str, count: int = 1, timeout: float = 60) -> None:
        wait_for(lambda: self.executions()[task] >= count, timeout=timeout, what=f"{task} to start ({count})")

    def wait_ended(self, run_id: int, timeout: float = 120) -> str:
        wait_for(lambda: self.run_status(run_id) not in ("QUEUED", "IN-PROGRESS"), timeout=timeout,
                 what=f"run {run_id} to end")
        return self.run_status(run_id)

    def worker_owner(self, name: str) -> str:
        return str(self.rows("SELECT OWNER_ID FROM {S}AUD_WORKERS WHERE WORKER_NAME = :n ORDER BY WORKER_ID DESC",
                             n=name)[0]["owner_id"])


@pytest.fixture
def pg_url_fresh(pg_server: PgServer, request: pytest.FixtureRequest) -> Iterator[str]:
    name = pg_server.create()
    yield pg_server.url_for(name)
    pg_server.drop(name)


@contextlib.contextmanager
def _setup(tmp_path: Path, url: str, provider: str, pipelines: dict[str, list[Task]],
           edges: list[tuple[str, str, str]] | None = None, *, slots: int = 4, sql: str = "") -> Iterator[Setup]:
    root = write_project(tmp_path / "p", url, pipelines, edges or [], lease_seconds=LEASE_SECONDS, slots=slots)
    extra = sql
    if provider == "queue":
        extra += (f"INSERT INTO CFG_POOLS (POOL_NAME, PROVIDER) VALUES ('{POOL}', 'QUEUE');\n"
                  f"UPDATE CFG_PROJECTS SET DEFAULT_POOL = '{POOL}';\n")
    if extra:
        (root / "migrations" / "0002_pools.sql").write_text(extra)
    migrated = etl_craft("migrate", cwd=root)
    assert migrated.code == 0, migrated.err
    setup = Setup(root, provider)
    try:
        yield setup
    finally:
        for process in setup.processes:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        for db in setup.dbs:
            db.dispose()


# -- submit is idempotent per attempt ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_submit_twice_starts_one_process(provider: str, iteration: int, tmp_path: Path, pg_url_fresh: str) -> None:
    with _setup(tmp_path, pg_url_fresh, provider, {"p": [Task("a", {"hold": "a"})]}) as setup:
        run_id = setup.init_run("p")
        db = setup.db()
        me = f"contract-test-{os.getpid()}"
        call(db, "start_run", run_id=run_id, owner_id=me, lease_seconds=120)
        task = next(t for t in call(db, "ready_tasks", run_id=run_id) if t.decision == "RUN")
        queued = call(db, "queue_attempt", run_id=run_id, task_id=task.task_id)[0]
        attempt = setup.rows("SELECT ATTEMPT_ID, TASK_RUN_ID, POOL, SLOT_KIND FROM {S}AUD_TASK_ATTEMPTS "
                             "WHERE ATTEMPT_ID = :a", a=queued.attempt_id)[0]
        spec = AttemptSpec(int(attempt["attempt_id"]), int(attempt["task_run_id"]), run_id, "proc", "p", "a",
                           "PYTHON", str(attempt["pool"]), str(attempt["slot_kind"]), None, LEASE_SECONDS)
        pool: Pool
        supervisor = None
        if provider == "local":
            config = load_config(setup.root)
            settings = run_settings(db, config, "p", run_id, None, me, engine_id(db))
            supervisor = LocalSupervisor(db, me, settings.child, 2, settings.log_dir)
            pool = LocalPool(db, supervisor)
        else:
            pool = QueuePool(db, POOL)
        first = pool.submit(spec)
        second = pool.submit(spec)
        assert first == second
        assert pool.status(ExecutionHandle(spec.pool, pool.provider, 10**9)).status == UNKNOWN
        if supervisor is not None:
            assert list(supervisor.children) == [spec.attempt_id]
            assert pool.status(first).status in ("CLAIMED", "RUNNING")
        else:
            assert pool.status(first).status == "QUEUED"  # submit started nothing: the pool's workers run it
            setup.worker("w1")
        setup.wait_started("a")
        assert pool.submit(spec) == first  # once it runs, too
        release(setup.root, "a")
        if supervisor is not None:
            deadline = time.monotonic() + 60
            while supervisor.children and time.monotonic() < deadline:
                supervisor.wait(0.5)
        wait_for(lambda: pool.status(first).status == "SUCCESS", timeout=60, what="the attempt to succeed")
        assert setup.executions() == Counter({"a": 1})
        assert [a["status"] for a in setup.attempts(run_id)] == ["SUCCESS"]


# -- a killed owner: LOST after the lease, run again elsewhere; its late completion refused ------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_kill_9_of_the_owner__lost__rerun_by_the_next__late_completion_refused(
        provider: str, iteration: int, tmp_path: Path, pg_url_fresh: str) -> None:
    with _setup(tmp_path, pg_url_fresh, provider, {"p": [Task("a", {"hold": "a"})]}) as setup:
        run_id = setup.init_run("p")
        if provider == "local":
            first = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="first")
            setup.wait_started("a")
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            time.sleep(LEASE_SECONDS + 1)  # the run's and the attempt's leases expire
            nxt = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="next")
        else:
            w1 = setup.worker("w1", slots=1)
            nxt = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="run")
            setup.wait_started("a")
            setup.worker("w2", slots=1)
            os.kill(w1.pid, signal.SIGKILL)
            w1.wait(timeout=10)
        setup.wait_started("a", count=2, timeout=60)  # run again by the next owner while the first still runs
        lost = [a for a in setup.attempts(run_id) if a["status"] == "LOST"]
        assert len(lost) == 1, setup.attempts(run_id)
        release(setup.root, "a")  # both executions finish: the LOST one's completion comes late
        assert nxt.wait(timeout=90) == 0, setup.log("next" if provider == "local" else "run")
        orphan = int((setup.root / "marks" / f"a.{lost[0]['attempt_id']}.start").read_text().split()[1])
        wait_for(lambda: not _alive(orphan), timeout=30, what="the orphaned execution to end")
        attempts = setup.attempts(run_id)
        assert [a["status"] for a in attempts] == ["LOST", "SUCCESS"], attempts  # the late completion was refused
        assert setup.run_status(run_id) == "SUCCESS"
        if provider == "queue":
            assert attempts[1]["owner_id"] == setup.worker_owner("w2")


# -- a lost acknowledgement: claimed, then the claimant is gone before RUNNING ---------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_lost_acknowledgement_is_reconciled_not_run_twice(provider: str, iteration: int, tmp_path: Path,
                                                          pg_url_fresh: str) -> None:
    fault = {"ETL_CRAFT_FAULT": "attempt_claimed:kill"}
    with _setup(tmp_path, pg_url_fresh, provider, {"p": [Task("a")]}) as setup:
        run_id = setup.init_run("p")
        if provider == "local":
            first = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="first", env=fault)
            assert first.wait(timeout=60) == 137, setup.log("first")
            time.sleep(LEASE_SECONDS + 1)
            nxt = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="next")
        else:
            w1 = setup.worker("w1", 1, fault)
            nxt = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="run")
            assert w1.wait(timeout=60) == 137, setup.log("w1")
            setup.worker("w2", slots=1)
        assert nxt.wait(timeout=90) == 0, setup.log("next" if provider == "local" else "run")
        attempts = setup.attempts(run_id)
        assert [a["status"] for a in attempts] == ["LOST", "SUCCESS"], attempts
        assert setup.executions() == Counter({"a": 1})  # the claimed attempt never ran: run once in all


# -- the server restarts while the tasks run ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_server_restart_while_tasks_run__nothing_lost_or_doubled(provider: str, iteration: int, tmp_path: Path,
                                                                 pg_url_fresh: str) -> None:
    tasks = [Task(code, {"seconds": 0.5}) for code in ("a", "b", "c", "d")]
    edges = [("b", "a", "SUCCESS"), ("c", "a", "SUCCESS"), ("d", "b", "SUCCESS"), ("d", "c", "SUCCESS")]
    with _setup(tmp_path, pg_url_fresh, provider, {"p": tasks}, edges) as setup:
        if provider == "queue":
            setup.worker("w1")
        first = setup.server("first")
        run_id = setup.init_run("p")
        setup.wait_started("b")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        second = setup.server("second")
        assert setup.wait_ended(run_id) == "SUCCESS"
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
        attempts = setup.attempts(run_id)
        assert not [a for a in attempts if a["status"] in ("QUEUED", "CLAIMED", "RUNNING")], attempts
        successes = Counter(a["task_code"] for a in attempts if a["status"] == "SUCCESS")
        assert successes == Counter({"a": 1, "b": 1, "c": 1, "d": 1}), attempts
        lost = Counter(a["task_code"] for a in attempts if a["status"] == "LOST")
        executions = setup.executions()
        if provider == "queue":  # the worker ran on: nothing was lost, nothing ran twice
            assert not lost, attempts
            assert executions == Counter({"a": 1, "b": 1, "c": 1, "d": 1})
        for task in "abcd":
            assert 1 <= executions[task] <= 1 + lost[task], (task, executions, attempts)


# -- cancellation reaches the owner, which acknowledges it -----------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_cancellation_reaches_the_owner_and_is_acknowledged(provider: str, iteration: int, tmp_path: Path,
                                                            pg_url_fresh: str) -> None:
    with _setup(tmp_path, pg_url_fresh, provider, {"p": [Task("a", {"hold": "never"})]}) as setup:
        run_id = setup.init_run("p")
        if provider == "queue":
            setup.worker("w1")
        runner = setup.start("run", "--pipeline-code", "p", "--run-id", str(run_id), name="run")
        setup.wait_started("a")
        cancelled = etl_craft("cancel", "--pipeline-code", "p", "--run-id", str(run_id), "--reason", "contract",
                              cwd=setup.root)
        assert cancelled.code == 0, cancelled.err
        assert setup.wait_ended(run_id, timeout=30) == "CANCELLED"
        runner.wait(timeout=30)
        attempts = setup.attempts(run_id)
        assert [a["status"] for a in attempts] == ["CANCELLED"], attempts
        assert attempts[0]["cancel_acknowledged_at"] is not None, attempts  # the owner acknowledged it
        pid = int((next((setup.root / "marks").glob("a.*.start"))).read_text().split()[1])
        wait_for(lambda: not _alive(pid), timeout=15, what="the cancelled task process to be stopped")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (not reaped yet) has stopped
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# -- limits hold under a burst ---------------------------------------------------------------------------------------


BURST = 1000
LIMIT = 3
SAMPLE = 30  # attempts of the burst that run before the run is cancelled


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_pipeline_limit_holds_under_a_burst_of_1000_ready_tasks(provider: str, iteration: int, tmp_path: Path,
                                                                pg_url_fresh: str) -> None:
    """A root, then 999 tasks ready at once: every one is queued in one turn, and claimants with more free slots
    than the pipeline's MAX_PARALLEL_TASKS (LIMIT) claim from that burst. AUD_TASK_ATTEMPTS is sampled while it
    runs (each sample one statement, so one snapshot): never more than LIMIT attempts CLAIMED or RUNNING. Once
    SAMPLE attempts have run, the run is cancelled (running all 1,000 would only take longer). CLAIMED_AT and
    ENDED_AT are not compared afterwards: they are their transactions' start times, and a claim that began before a
    completion committed (and counted after it) would look like an overlap that never was."""
    # The 999 tasks and their edges in two statements: one statement per row would make migrate the slow part.
    fan_out = (
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT p.PIPELINE_ID, "
        f"'t' || lpad(g::text, 4, '0'), 'PYTHON', 'work.py' FROM CFG_PIPELINES p, generate_series(1, {BURST - 1}) g "
        "WHERE p.PIPELINE_CODE = 'burst';\n"
        "INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT t.TASK_ID, r.TASK_ID, "
        "'SUCCESS' FROM CFG_TASKS t, CFG_TASKS r WHERE t.TASK_CODE LIKE 't%' AND r.TASK_CODE = 'root';\n")
    limit = fan_out + f"UPDATE CFG_PIPELINES SET MAX_PARALLEL_TASKS = {LIMIT} WHERE PIPELINE_CODE = 'burst';\n"
    for_status = "SELECT STATUS, COUNT(*) AS N FROM {S}AUD_TASK_ATTEMPTS GROUP BY STATUS"  # one snapshot
    with _setup(tmp_path, pg_url_fresh, provider, {"burst": [Task("root")]}, [], slots=8, sql=limit) as setup:
        if provider == "queue":  # 8 slots in all: more than the pipeline may use
            setup.worker("w1", slots=4)
            setup.worker("w2", slots=4)
        setup.server("server", "--slots", "8")
        run_id = setup.init_run("burst")
        most_queued = most_live = 0

        def enough() -> bool:
            nonlocal most_queued, most_live
            counts = {r["status"]: int(r["n"]) for r in setup.rows(for_status)}
            most_queued = max(most_queued, counts.get("QUEUED", 0))
            most_live = max(most_live, counts.get("CLAIMED", 0) + counts.get("RUNNING", 0))
            return counts.get("SUCCESS", 0) >= SAMPLE

        wait_for(enough, timeout=120, what=f"{SAMPLE} attempts of the burst to succeed")
        cancelled = etl_craft("cancel", "--pipeline-code", "burst", "--run-id", str(run_id), "--reason", "sampled",
                              cwd=setup.root)
        assert cancelled.code == 0, cancelled.err
        assert setup.wait_ended(run_id, timeout=60) == "CANCELLED"
        # The burst was there: more attempts waited at once than the limit lets run (the workers claim while the
        # overseer is still queueing, so the queue of the queue provider is shorter than 999).
        assert most_queued >= 3 * LIMIT, most_queued
        assert 1 < most_live <= LIMIT, most_live  # they ran in parallel, and the limit held them
        claimed = [a for a in setup.attempts(run_id) if a["claimed_at"] is not None]
        assert len(claimed) >= SAMPLE and all(a["ended_at"] is not None for a in claimed), claimed


# -- priority: the high-priority pipeline's attempts are claimed first ---------------------------------------------


@pytest.mark.parametrize("provider", ["queue"])  # local: test_local_provider__a_high_priority_run_does_not_wait...
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_high_priority_pipeline_runs_first(provider: str, iteration: int, tmp_path: Path,
                                           pg_url_fresh: str) -> None:
    pipelines = {"low": [Task(f"l{i}") for i in range(3)], "high": [Task(f"h{i}") for i in range(3)]}
    priority = "UPDATE CFG_PIPELINES SET PRIORITY = 10 WHERE PIPELINE_CODE = 'high';\n"
    with _setup(tmp_path, pg_url_fresh, provider, pipelines, sql=priority) as setup:
        server = setup.server("server")
        low, high = setup.init_run("low"), setup.init_run("high")  # the low one first: older in the queue
        wait_for(lambda: len(setup.rows("SELECT 1 FROM {S}AUD_TASK_ATTEMPTS WHERE STATUS = 'QUEUED'")) == 6,
                 timeout=60, what="every attempt to wait in the queue")
        # Said on the driver's next turn after it queued them, which a loaded machine can delay past the queueing.
        wait_for(lambda: "pool farm has no active worker; 3 attempts wait" in setup.log("server"), timeout=30,
                 what="the server to say that no worker serves the pool")
        setup.worker("w1", slots=1)
        assert setup.wait_ended(low) == "SUCCESS" and setup.wait_ended(high) == "SUCCESS"
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        last_high = max(a["claimed_at"] for a in setup.attempts(high))
        first_low = min(a["claimed_at"] for a in setup.attempts(low))
        assert last_high <= first_low, (setup.attempts(high), setup.attempts(low))


@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_local_provider__a_high_priority_run_does_not_wait_behind_a_low_priority_runs_queue(
        iteration: int, tmp_path: Path, pg_url_fresh: str) -> None:
    """The server drives several runs through one set of local slots, each run claiming its own attempts: the run
    that claims a freed slot is the highest-priority one, so high's tasks start before low's queued ones."""
    pipelines = {"low": [Task("l0", {"hold": "l0"}), Task("l1"), Task("l2")],
                 "high": [Task(f"h{i}") for i in range(3)]}
    priority = "UPDATE CFG_PIPELINES SET PRIORITY = 10 WHERE PIPELINE_CODE = 'high';\n"
    with _setup(tmp_path, pg_url_fresh, "local", pipelines, slots=1, sql=priority) as setup:
        server = setup.server("server", "--slots", "1")
        low = setup.init_run("low")
        setup.wait_started("l0")  # low holds the only slot; l1 and l2 wait in the queue
        high = setup.init_run("high")
        wait_for(lambda: len(setup.rows("SELECT 1 FROM {S}AUD_TASK_ATTEMPTS WHERE STATUS = 'QUEUED'")) == 5,
                 timeout=60, what="l1, l2 and h0 to h2 to wait in the queue")
        release(setup.root, "l0")
        assert setup.wait_ended(low) == "SUCCESS" and setup.wait_ended(high) == "SUCCESS"
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        order = sorted((a["claimed_at"], a["task_code"]) for run in (low, high) for a in setup.attempts(run))
        assert [code for _, code in order] == ["l0", "h0", "h1", "h2", "l1", "l2"], order


# -- draining finishes what runs and takes nothing new --------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_draining_finishes_attempts_and_takes_no_new_ones(provider: str, iteration: int, tmp_path: Path,
                                                          pg_url_fresh: str) -> None:
    tasks = [Task("a", {"hold": "a"}), Task("b")]
    with _setup(tmp_path, pg_url_fresh, provider, {"p": tasks}, [("b", "a", "SUCCESS")]) as setup:
        if provider == "local":  # the server drains on SIGTERM: its grace lets what runs finish
            owner = setup.server("server")
            run_id = setup.init_run("p")
        else:
            owner = setup.worker("w1", 1, None, "--drain-seconds", "60")
            setup.server("server")
            run_id = setup.init_run("p")
        setup.wait_started("a")
        owner.send_signal(signal.SIGTERM)
        if provider == "queue":
            wait_for(lambda: bool(setup.rows("SELECT 1 FROM {S}AUD_WORKERS WHERE WORKER_NAME = 'w1' "
                                             "AND STATUS = 'DRAINING'")), timeout=15, what="w1 to drain")
        else:  # a task that ends before the server has taken the signal in is followed by its successor
            wait_for(lambda: "stopping: no run is started" in setup.log("server"), timeout=15,
                     what="the server to stop dispatching")
        release(setup.root, "a")
        assert owner.wait(timeout=60) == 0
        attempts = setup.attempts(run_id)
        assert [(a["task_code"], a["status"]) for a in attempts][:1] == [("a", "SUCCESS")], attempts
        assert setup.executions() == Counter({"a": 1})  # b was not taken by the draining owner
        if provider == "queue":
            assert [a["status"] for a in attempts if a["task_code"] == "b"] == ["QUEUED"], attempts
            setup.worker("w2", slots=1)
        else:
            setup.server("successor")
        assert setup.wait_ended(run_id) == "SUCCESS"
        assert setup.executions() == Counter({"a": 1, "b": 1})


# -- a worker of another version refuses to start -------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["queue"])  # the local provider is the process that runs etl-craft itself
@pytest.mark.parametrize("iteration", range(ITERATIONS))
def test_a_worker_of_another_version_refuses_to_start(provider: str, iteration: int, tmp_path: Path,
                                                      pg_server: PgServer) -> None:
    name = pg_server.create()
    try:
        db = EngineDB(pg_server.url_for(name))
        with acting_as(TEST_ACTOR):
            migrate(db, up_to="0018")  # an Engine DB of the etl-craft before workers: its migrations differ
        db.dispose()
        root = write_project(tmp_path / "p", pg_server.url_for(name), {"p": [Task("a")]}, [])
        done = etl_craft("worker", "--pool", POOL, "--name", "other", cwd=root, timeout=30)
        assert done.code == 5, done.err
        assert "missing 0019" in done.err, done.err
    finally:
        pg_server.drop(name)
