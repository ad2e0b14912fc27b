"""Races on PostgreSQL between real processes: claims are disjoint and exactly once; one run per key."""

from __future__ import annotations

import multiprocessing as mp
from datetime import date

import psycopg
import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.errors import NotFoundError, StaleTransitionError
from etlcraft.core.states import ActorKind
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_on

pytestmark = pytest.mark.postgres
ATTEMPTS, CLAIMERS = 2000, 8
WORKER = Actor("worker@test", ActorKind.WORKER)


def _seed_queue(url: str, attempts: int) -> None:
    """One run of `attempts` tasks, each with one QUEUED attempt (set-based inserts through the marker)."""
    dsn = url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT set_config('etl_craft.actor', 'tester@pytest', true)")
        conn.execute("INSERT INTO etl_craft.cfg_projects (project_code) VALUES ('p')")
        conn.execute("INSERT INTO etl_craft.cfg_pipelines (project_id, pipeline_code) VALUES (1, 'pl')")
        conn.execute("""
            INSERT INTO etl_craft.cfg_tasks (pipeline_id, task_code, handler, action, sql_file)
            SELECT 1, 't' || g, 'SQL', 'APPEND_TABLE', 't.sql' FROM generate_series(1, %(n)s) g""", {"n": attempts})
        if not attempts:
            return
        conn.execute("""
            INSERT INTO etl_craft.aud_pipelines_run_log
              (pipeline_id, run_key, trigger_kind, run_date, status, queued_at, start_date, started_by, started_by_kind)
            VALUES (1, 'manual:queue', 'MANUAL', DATE '2026-01-01', 'IN-PROGRESS', now(), now(), 't', 'HUMAN')""")
        conn.execute("""
            INSERT INTO etl_craft.aud_task_run_log (pipeline_run_id, task_id, status, attempt_count)
            SELECT 1, task_id, 'IN-PROGRESS', 1 FROM etl_craft.cfg_tasks""")
        conn.execute("""
            INSERT INTO etl_craft.aud_task_attempts
              (task_run_id, attempt_number, status, queued_at, requested_by, requested_by_kind)
            SELECT task_run_id, 1, 'QUEUED', clock_timestamp(), 't', 'HUMAN' FROM etl_craft.aud_task_run_log""")


def _claimer(url: str, owner: str, start: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = EngineDB(url)
    claimed: list[int] = []
    with acting_as(WORKER), db.engine.connect() as conn:
        start.wait()
        while rows := call_on(db, conn, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id=owner):
            claimed.extend(r.attempt_id for r in rows)
    db.dispose()
    out.put((owner, claimed))


def test_b1_eight_processes_claim_2000_attempts_each_exactly_once(pg_url: str) -> None:
    _seed_queue(pg_url, ATTEMPTS)
    start, out = mp.Barrier(CLAIMERS), mp.Queue()
    workers = [mp.Process(target=_claimer, args=(pg_url, f"w{i}", start, out)) for i in range(CLAIMERS)]
    for worker in workers:
        worker.start()
    results = dict(out.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    every = [attempt for claimed in results.values() for attempt in claimed]
    assert len(every) == ATTEMPTS == len(set(every)), "every attempt claimed exactly once"
    assert sum(1 for claimed in results.values() if claimed) > 1, "the claimers shared the queue"
    db = EngineDB(pg_url)
    with db.read() as conn:
        owners = dict(conn.exec_driver_sql(
            "SELECT attempt_id, owner_id FROM etl_craft.aud_task_attempts WHERE status = 'CLAIMED'").all())
    db.dispose()
    assert owners == {attempt: owner for owner, claimed in results.items() for attempt in claimed}


def _creator(url: str, start: mp.Barrier, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = EngineDB(url)
    with acting_as(Actor("racer@test", ActorKind.HUMAN)):
        start.wait()
        row = call(db, "create_run", pipeline_id=1, run_key="orchestrator:dag_run_1", run_date=date(2026, 1, 1))[0]
    db.dispose()
    out.put((row.pipeline_run_id, row.created))


def test_b23_two_create_run_for_one_key_at_once_create_one_run(pg_url: str) -> None:
    _seed_queue(pg_url, 0)
    start, out = mp.Barrier(2), mp.Queue()
    racers = [mp.Process(target=_creator, args=(pg_url, start, out)) for _ in range(2)]
    for racer in racers:
        racer.start()
    results = [out.get(timeout=60) for _ in racers]
    for racer in racers:
        racer.join(timeout=30)
    assert {run_id for run_id, _ in results} == {results[0][0]}, "both callers got the same run"
    assert sorted(created for _, created in results) == [False, True], "exactly one created it"


def test_a_call_sent_as_its_own_transaction__a_refusal_raises_its_error__changes_nothing__the_connection_goes_on(
        pg_url: str) -> None:
    """Unpinned, call() and call_on() send one function call as its own transaction (the driver in autocommit, no
    BEGIN and COMMIT): a refusal still raises its error class and leaves the connection ready for the next call."""
    _seed_queue(pg_url, 1)
    db = EngineDB(pg_url)
    with acting_as(WORKER):
        with pytest.raises(StaleTransitionError, match="attempt 1 is QUEUED"):
            call(db, "finish_attempt", attempt_id=1, owner_id="w1", status="SUCCESS")
        with db.engine.connect() as conn:
            with pytest.raises(NotFoundError, match="attempt 999 does not exist"):
                call_on(db, conn, "finish_attempt", attempt_id=999, owner_id="w1", status="SUCCESS")
            driver = conn.connection.driver_connection
            assert driver is not None and driver.autocommit is False and not conn.in_transaction()
            claimed = call_on(db, conn, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id="w1")
            assert [c.attempt_id for c in claimed] == [1]
            done = call_on(db, conn, "finish_attempt", attempt_id=1, owner_id="w1", status="SUCCESS", rows_written=4)
            assert (done[0].status, done[0].task_run_status) == ("SUCCESS", "SUCCESS")
    db.dispose()
