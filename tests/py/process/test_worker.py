"""`etl-craft worker` through real processes on the local PostgreSQL: it runs the queued attempts of a QUEUE pool
end to end; SIGTERM drains (running attempts finish, nothing new is claimed); a worker killed with kill -9 is
declared GONE by another worker's reap after 3 heartbeats and its attempt runs again there; a cancelled run
reaches the worker and is acknowledged within one heartbeat; an Engine DB with other migrations, and SQLite, are
refused before anything is recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.cli.context import CliContext
from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.migrations import migrate
from tests.py.conftest import TEST_ACTOR, PgServer
from tests.py.support.cli import descendants, descendants_alive, etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = [pytest.mark.process, pytest.mark.postgres]

POOL = "remote"
FLOW = {"flow": [Task("a", {"hold": "a"}), Task("b", {"hold": "b"}), Task("c")]}
#: The pool, every task in it, and one retry at once (a lost attempt runs again on another worker).
POOL_MIGRATION = f"""INSERT INTO CFG_POOLS (POOL_NAME, PROVIDER) VALUES ('{POOL}', 'QUEUE');
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'POOL', '{POOL}'
  FROM CFG_TASKS;
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'RETRIES', '1'
  FROM CFG_TASKS;
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'RETRY_DELAY_SECONDS', '0'
  FROM CFG_TASKS;
"""


@pytest.fixture
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    pg: PgServer = request.getfixturevalue("pg_server")
    name = pg.create()
    request.addfinalizer(lambda: pg.drop(name))
    root = write_project(tmp_path / "p", pg.url_for(name), FLOW, [])
    (root / "migrations" / "0002_remote_pool.sql").write_text(POOL_MIGRATION)
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    workers: list[subprocess.Popen[bytes]] = []
    request.node.workers = workers
    yield root
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=10)


def start_worker(root: Path, request: pytest.FixtureRequest, name: str, *args: str,
                 heartbeat: int = 1) -> subprocess.Popen[bytes]:
    log = root / f"{name}.log"
    worker = start_etl_craft("worker", "--pool", POOL, "--name", name, "--heartbeat-seconds", str(heartbeat),
                             "--ingestion-slots", "2", "--warehouse-slots", "1", *args, cwd=root, log=log)
    request.node.workers.append(worker)
    wait_for(lambda: "serves pool" in log.read_text() or worker.poll() is not None, what=f"{name} to register")
    assert worker.poll() is None, log.read_text()
    return worker


def engine(root: Path) -> EngineDB:
    return CliContext.create(str(root), None, None).engine_db()


def queue_run(root: Path, key: str = "manual:1") -> int:
    """A new IN-PROGRESS run of `flow` with a QUEUED attempt of each task (in pool remote): as the overseer queues
    them, through create_run and queue_attempt."""
    db = engine(root)
    try:
        with acting_as(TEST_ACTOR), db.read() as conn:
            pipeline_id, = conn.execute(sa.text("SELECT PIPELINE_ID FROM etl_craft.CFG_PIPELINES")).one()
            tasks = [r[0] for r in conn.execute(sa.text("SELECT TASK_ID FROM etl_craft.CFG_TASKS ORDER BY TASK_ID"))]
        with acting_as(TEST_ACTOR):
            run_id = int(call(db, "create_run", pipeline_id=pipeline_id, run_key=key,
                              run_date=date(2026, 1, 1))[0].pipeline_run_id)
            for task_id in tasks:
                call(db, "queue_attempt", run_id=run_id, task_id=task_id)
        return run_id
    finally:
        db.dispose()


def attempts(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Each task's attempts, oldest first."""
    db = engine(root)
    try:
        with db.read() as conn:
            rows = conn.execute(sa.text(
                "SELECT t.TASK_CODE, a.* FROM etl_craft.AUD_TASK_ATTEMPTS a JOIN etl_craft.AUD_TASK_RUN_LOG r"
                " ON r.TASK_RUN_ID = a.TASK_RUN_ID JOIN etl_craft.CFG_TASKS t ON t.TASK_ID = r.TASK_ID"
                " ORDER BY a.ATTEMPT_ID")).mappings().all()
    finally:
        db.dispose()
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        found.setdefault(row["task_code"], []).append(dict(row))
    return found


def workers(root: Path) -> list[dict[str, Any]]:
    done = etl_craft("workers", "list", "--format", "json", cwd=root)
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["schema"] == "etl-craft/workers/1"
    return list(doc["workers"])


def statuses(root: Path) -> dict[str, list[str]]:
    return {task: [a["status"] for a in rows] for task, rows in attempts(root).items()}


def test_worker__queued_attempts_of_its_pool__run_end_to_end(project: Path, request: pytest.FixtureRequest) -> None:
    worker = start_worker(project, request, "w1", "--ingestion-slots", "3")
    queue_run(project)
    wait_for(lambda: statuses(project) == {"a": ["RUNNING"], "b": ["RUNNING"], "c": ["SUCCESS"]},
             what="the three to run on the worker at once")
    release(project, "a")
    release(project, "b")
    wait_for(lambda: all(s == ["SUCCESS"] for s in statuses(project).values()), what="every attempt to succeed")
    rows = attempts(project)
    owners = {row[0]["owner_id"] for row in rows.values()}
    (listed,) = workers(project)
    assert (listed["name"], listed["pool"], listed["status"]) == ("w1", POOL, "ACTIVE")
    assert {a["pool"] for r in rows.values() for a in r} == {POOL}
    db = engine(project)
    with db.read() as conn:
        owner = conn.execute(sa.text("SELECT OWNER_ID FROM etl_craft.AUD_WORKERS")).scalar()
    db.dispose()
    assert owners == {owner}  # every attempt ran under the worker's owner id, each in its own process
    assert len({row[0]["pid"] for row in rows.values()}) == 3
    text = etl_craft("workers", "list", cwd=project)
    assert "w1" in text.out and "ingestion [---] 0/3" in text.out and "remote" in text.out, text.out
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert workers(project)[0]["status"] == "GONE"


def test_worker__sigterm__drains_running_attempts_and_claims_nothing_new(project: Path,
                                                                         request: pytest.FixtureRequest) -> None:
    worker = start_worker(project, request, "w1", "--ingestion-slots", "1")
    queue_run(project)
    wait_for(lambda: statuses(project) == {"a": ["RUNNING"], "b": ["QUEUED"], "c": ["QUEUED"]},
             what="a to run on the one slot, b and c queued")
    worker.send_signal(signal.SIGTERM)
    wait_for(lambda: workers(project)[0]["status"] == "DRAINING", what="the worker to drain")
    time.sleep(1.5)  # a heartbeat and more: a draining worker claims nothing, although b and c are due
    assert statuses(project) == {"a": ["RUNNING"], "b": ["QUEUED"], "c": ["QUEUED"]}
    release(project, "a")
    assert worker.wait(timeout=30) == 0, (project / "w1.log").read_text()
    assert statuses(project) == {"a": ["SUCCESS"], "b": ["QUEUED"], "c": ["QUEUED"]}
    assert workers(project)[0]["status"] == "GONE"
    assert "drained: every attempt it ran has ended" in (project / "w1.log").read_text()


def test_worker__killed__declared_gone_by_another_and_its_attempts_retried_there(
        project: Path, request: pytest.FixtureRequest) -> None:
    first = start_worker(project, request, "w1", "--ingestion-slots", "3")
    queue_run(project)
    wait_for(lambda: statuses(project) == {"a": ["RUNNING"], "b": ["RUNNING"], "c": ["SUCCESS"]},
             what="a and b to run on w1")
    orphans = descendants(first.pid)
    request.addfinalizer(lambda: [os.kill(pid, signal.SIGKILL) for pid in descendants_alive(orphans)])
    start_worker(project, request, "w2", "--ingestion-slots", "3")
    first.kill()
    first.wait(timeout=10)
    wait_for(lambda: statuses(project).get("a") == ["LOST", "RUNNING"] and
             statuses(project).get("b") == ["LOST", "RUNNING"], timeout=20, what="w2 to reap w1 and run a and b again")
    listed = {w["name"]: w for w in workers(project)}
    assert listed["w1"]["status"] == "GONE"
    assert "declared gone: missed 3 heartbeats (every 1 s)" in listed["w1"]["stop_reason"]
    assert listed["w2"]["status"] == "ACTIVE"
    rows = attempts(project)
    assert "its worker" in rows["a"][0]["error_message"] and "missed 3 heartbeats" in rows["a"][0]["error_message"]
    assert rows["a"][1]["owner_id"] != rows["a"][0]["owner_id"]
    release(project, "a")
    release(project, "b")
    wait_for(lambda: statuses(project) == {"a": ["LOST", "SUCCESS"], "b": ["LOST", "SUCCESS"], "c": ["SUCCESS"]},
             what="the retries to succeed on w2 (the orphans' late writes refused)")


def test_worker__run_cancelled__stops_and_acknowledges_within_one_heartbeat(
        project: Path, request: pytest.FixtureRequest) -> None:
    start_worker(project, request, "w1", "--ingestion-slots", "3", heartbeat=2)
    run_id = queue_run(project)
    wait_for(lambda: statuses(project) == {"a": ["RUNNING"], "b": ["RUNNING"], "c": ["SUCCESS"]},
             what="a and b to run")
    pids = [rows[0]["pid"] for task, rows in attempts(project).items() if task in ("a", "b")]
    done = etl_craft("cancel", "--pipeline-code", "flow", "--run-id", str(run_id), "--reason", "stop it", cwd=project)
    assert done.code == 0, done.err
    wait_for(lambda: statuses(project) == {"a": ["CANCELLED"], "b": ["CANCELLED"], "c": ["SUCCESS"]}, timeout=10,
             what="the worker to acknowledge the cancellation")
    for task in ("a", "b"):
        row = attempts(project)[task][0]
        assert row["cancel_acknowledged_at"] is not None
        waited = (row["cancel_acknowledged_at"] - row["cancel_requested_at"]).total_seconds()
        assert waited <= 2 + 1.0, f"{task}: acknowledged {waited:.2f} s after the request; heartbeat 2 s"
    wait_for(lambda: not descendants_alive(pids), timeout=15, what="the cancelled task processes to end")
    assert "cancelled: its task process is stopped" in (project / "w1.log").read_text()


def test_worker__engine_db_with_other_migrations__refused(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pg: PgServer = request.getfixturevalue("pg_server")
    name = pg.create()
    request.addfinalizer(lambda: pg.drop(name))
    db = EngineDB(pg.url_for(name))
    with acting_as(TEST_ACTOR):
        migrate(db, up_to="0018")
    db.dispose()
    root = write_project(tmp_path / "p", pg.url_for(name), FLOW, [])
    done = etl_craft("worker", "--pool", POOL, "--name", "old", cwd=root, timeout=30)
    assert done.code == 5, done.err
    assert "has ENGINE migrations up to 0018 (missing 0019" in done.err
    assert "run etl-craft migrate" in done.err


def test_worker__sqlite_engine_db__refused(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", None, FLOW, [])
    done = etl_craft("worker", "--pool", POOL, cwd=root, timeout=30)
    assert done.code == 3, done.err
    assert "etl-craft worker needs a PostgreSQL Engine DB" in done.err and "is SQLite" in done.err


SLEEPY_TASK = f"""INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
  SELECT PIPELINE_ID, 'sleep', 'SQL', 'APPEND_TABLE', 'sleep.sql', 'public.slept' FROM CFG_PIPELINES;
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'POOL', '{POOL}'
  FROM CFG_TASKS;
"""


def sleeping_queries(url: str) -> list[int]:
    """The backends of the warehouse that run the sleepy task's query now."""
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(120)%'"
            " AND pid <> pg_backend_pid()")]


def test_worker__cancelled_postgresql_query__cancelled_on_the_server_and_logged(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    pg: PgServer = request.getfixturevalue("pg_server")
    name = pg.create()
    request.addfinalizer(lambda: pg.drop(name))
    url = pg.url_for(name)
    root = write_project(tmp_path / "p", url, {"sleepy": []}, [])
    config = (root / "craft-connector.yml").read_text()
    duckdb, postgres = "  dialect: duckdb\n  path: warehouse.duckdb\n", f"  dialect: postgresql\n  url: {url}\n"
    (root / "craft-connector.yml").write_text(config.replace(f"Warehouse:\n{duckdb}", f"Warehouse:\n{postgres}"))
    (root / "sql_files").mkdir()
    (root / "sql_files" / "sleep.sql").write_text("SELECT q.x FROM (SELECT 1 AS x, pg_sleep(120) AS s) q\n")
    (root / "migrations" / "0002_remote_pool.sql").write_text(
        f"INSERT INTO CFG_POOLS (POOL_NAME, PROVIDER) VALUES ('{POOL}', 'QUEUE');\n" + SLEEPY_TASK)
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    request.node.workers = []
    start_worker(root, request, "w1")
    run_id = queue_run(root)
    wait_for(lambda: bool(sleeping_queries(url)), what="the task's query to run in the warehouse")
    done = etl_craft("cancel", "--pipeline-code", "sleepy", "--run-id", str(run_id), "--reason", "too slow", cwd=root)
    assert done.code == 0, done.err
    wait_for(lambda: statuses(root) == {"sleep": ["CANCELLED"]}, timeout=10, what="the cancellation")
    wait_for(lambda: not sleeping_queries(url), timeout=10, what="the warehouse query to be cancelled")
    log = Path(attempts(root)["sleep"][0]["log_path"])
    wait_for(lambda: "the query was cancelled on the PostgreSQL server" in log.read_text(), timeout=10,
             what="the attempt log to say the query was cancelled")


@pytest.mark.parametrize("how", ["drain_seconds", "second_signal"])
def test_worker__drain_ends_first__remaining_attempts_recorded_failed_worker_drained(
        project: Path, request: pytest.FixtureRequest, how: str) -> None:
    options = ("--drain-seconds", "1") if how == "drain_seconds" else ()
    worker = start_worker(project, request, "w1", "--ingestion-slots", "1", *options)
    queue_run(project)
    wait_for(lambda: statuses(project).get("a") == ["RUNNING"], what="a to run")
    pid = attempts(project)["a"][0]["pid"]
    worker.send_signal(signal.SIGTERM)
    if how == "second_signal":
        wait_for(lambda: workers(project)[0]["status"] == "DRAINING", what="the worker to drain")
        worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, (project / "w1.log").read_text()
    first = attempts(project)["a"][0]
    assert first["status"] == "FAILED"
    assert first["error_message"].startswith("worker drained: worker w1 was stopped and ")
    assert ("a second signal" if how == "second_signal" else "its 1 s drain") in first["error_message"]
    assert statuses(project)["a"] == ["FAILED", "QUEUED"]  # the retry rule applies: another worker runs it
    assert statuses(project)["b"] == ["QUEUED"]
    assert not descendants_alive([pid])
    assert workers(project)[0]["status"] == "GONE"


def test_worker__declared_gone_while_running__kills_its_task_processes_records_nothing_exits_20(
        project: Path, request: pytest.FixtureRequest) -> None:
    worker = start_worker(project, request, "w1", "--ingestion-slots", "1")
    queue_run(project)
    wait_for(lambda: statuses(project).get("a") == ["RUNNING"], what="a to run")
    pid = attempts(project)["a"][0]["pid"]
    db = engine(project)
    try:
        with db.read() as conn:
            worker_id, owner = conn.execute(sa.text("SELECT WORKER_ID, OWNER_ID FROM etl_craft.AUD_WORKERS")).one()
        with acting_as(TEST_ACTOR):  # what reap_workers does to a worker cut off for 3 heartbeats
            call(db, "stop_worker", worker_id=worker_id, owner_id=owner, reason="declared gone by the test")
    finally:
        db.dispose()
    assert worker.wait(timeout=15) == 20
    log = (project / "w1.log").read_text()
    assert f"worker {worker_id} (w1) was declared GONE by the Engine DB" in log
    assert "task process(es) were killed at once and nothing was recorded" in log
    wait_for(lambda: not descendants_alive([pid]), timeout=5, what="its task process to be killed")
    lost = attempts(project)["a"][0]
    assert lost["status"] == "LOST" and "declared gone by the test" in lost["error_message"]
