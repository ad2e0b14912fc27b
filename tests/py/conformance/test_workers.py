"""Workers of QUEUE pools (AUD_WORKERS, issue 25) on both dialects where they can run: register, heartbeat,
drain, stop and reap, and what a worker declared gone may no longer do. A QUEUE pool needs PostgreSQL: a SQLite
Engine DB refuses one, and so every worker function that needs one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import Attempts, as_utc
from tests.py.support.views import read_view

POOL = "remote"
WORKER_OWNER = "worker-a:77:1700000000:0c0c0c0c"


def queue_pool(db: EngineDB, name: str = POOL) -> None:
    with db.write() as conn:
        conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_POOLS')} (POOL_NAME, PROVIDER) VALUES (:n, 'QUEUE')"),
                     {"n": name})


def register(db: EngineDB, owner: str = WORKER_OWNER, *, heartbeat_seconds: int = 10, **overrides: Any) -> int:
    args: dict[str, Any] = {"owner_id": owner, "worker_name": "w1", "pool": POOL, "host": "host-w", "pid": 77,
                            "version": "0.1", "ingestion_slots": 2, "warehouse_slots": 1,
                            "heartbeat_seconds": heartbeat_seconds, **overrides}
    row = call(db, "register_worker", **args)[0]
    assert row.status == "ACTIVE"
    return int(row.worker_id)


def worker_row(db: EngineDB, worker_id: int) -> dict[str, Any]:
    with db.read() as conn:
        found = conn.execute(sa.text(f"SELECT * FROM {db.qualify('AUD_WORKERS')} WHERE WORKER_ID = :w"),
                             {"w": worker_id}).mappings().one()
    return {k.upper(): v for k, v in found.items()}


@pytest.fixture
def pg_db(engine_db: EngineDB) -> EngineDB:
    if not engine_db.is_postgres:
        pytest.skip("QUEUE pools and their workers need a PostgreSQL Engine DB (the SQLite refusal has its own test)")
    return engine_db


def test_sqlite_refuses_a_queue_pool_with_a_clear_error(engine_db: EngineDB) -> None:
    if engine_db.is_postgres:
        queue_pool(engine_db)  # accepted
        assert Attempts(engine_db).project.scalar("SELECT PROVIDER FROM {CFG_POOLS} WHERE POOL_NAME = 'remote'") \
            == "QUEUE"
        return
    with pytest.raises(RefusedByPolicyError, match="pool remote has PROVIDER QUEUE.*PostgreSQL"):
        queue_pool(engine_db)


def test_a_worker_registers_once_and_only_for_a_queue_pool(pg_db: EngineDB) -> None:
    with pytest.raises(RefusedByPolicyError, match="pool remote is not configured, so LOCAL, expected a QUEUE pool"):
        register(pg_db)
    queue_pool(pg_db)
    worker_id = register(pg_db)
    row = worker_row(pg_db, worker_id)
    assert (row["POOL"], row["INGESTION_SLOTS"], row["WAREHOUSE_SLOTS"], row["STATUS"]) == (POOL, 2, 1, "ACTIVE")
    with pytest.raises(RefusedByPolicyError, match=f"owner {WORKER_OWNER} is already recorded as worker {worker_id}"):
        register(pg_db)
    with pytest.raises(RefusedByPolicyError, match="heartbeat_seconds of at least 1"):
        register(pg_db, "other-owner", heartbeat_seconds=0)


def test_heartbeat_renews_every_live_attempt_of_the_owner_and_returns_cancel_requests(pg_db: EngineDB) -> None:
    queue_pool(pg_db)
    attempts = Attempts(pg_db)
    worker_id = register(pg_db)
    first = attempts.running("ingest", owner=WORKER_OWNER, key="k1", pool=POOL)
    second = attempts.claimed("load", owner=WORKER_OWNER, key="k2", pool=POOL)
    mine_elsewhere = attempts.claimed("ingest", owner="somebody-else", key="k3", pool=POOL)
    call(pg_db, "cancel_attempt", attempt_id=second.attempt_id, reason="operator stop")
    pg_db.clock.pin(pg_db.clock.now() + timedelta(seconds=20))
    rows = call(pg_db, "heartbeat_worker", worker_id=worker_id, owner_id=WORKER_OWNER, lease_seconds=45)
    assert [(r.attempt_id, r.cancel_requested) for r in rows] == [(second.attempt_id, True)]
    expected = pg_db.clock.now() + timedelta(seconds=45)
    assert as_utc(attempts.attempt(first.attempt_id)["LEASE_EXPIRES_AT"]) == expected
    assert as_utc(attempts.attempt(second.attempt_id)["LEASE_EXPIRES_AT"]) == expected
    assert as_utc(attempts.attempt(mine_elsewhere.attempt_id)["LEASE_EXPIRES_AT"]) != expected
    assert as_utc(worker_row(pg_db, worker_id)["HEARTBEAT_AT"]) == pg_db.clock.now()
    # a run cancelled is a cancel request for each of its live attempts
    call(pg_db, "cancel_run", run_id=first.run_id, reason="operator stop")
    rows = call(pg_db, "heartbeat_worker", worker_id=worker_id, owner_id=WORKER_OWNER, lease_seconds=45)
    assert sorted(r.attempt_id for r in rows) == sorted([first.attempt_id, second.attempt_id])


def test_heartbeat_drain_and_stop_refuse_another_owner_and_an_unknown_worker(pg_db: EngineDB) -> None:
    queue_pool(pg_db)
    worker_id = register(pg_db)
    for function, extra in (("heartbeat_worker", {"lease_seconds": 30}), ("drain_worker", {"reason": "x"}),
                            ("stop_worker", {"reason": "x"})):
        with pytest.raises(StaleTransitionError, match=f"worker {worker_id} .* expected .*owned by intruder"):
            call(pg_db, function, worker_id=worker_id, owner_id="intruder", **extra)
        with pytest.raises(NotFoundError, match="worker 999 does not exist"):
            call(pg_db, function, worker_id=999, owner_id=WORKER_OWNER, **extra)
    assert worker_row(pg_db, worker_id)["STATUS"] == "ACTIVE"


def test_drain_then_stop_records_the_ending_and_loses_what_is_left(pg_db: EngineDB) -> None:
    queue_pool(pg_db)
    attempts = Attempts(pg_db)
    worker_id = register(pg_db)
    left = attempts.running("ingest", owner=WORKER_OWNER, pool=POOL)
    drained = call(pg_db, "drain_worker", worker_id=worker_id, owner_id=WORKER_OWNER, reason="SIGTERM")[0]
    assert drained.status == "DRAINING"
    assert call(pg_db, "drain_worker", worker_id=worker_id, owner_id=WORKER_OWNER, reason="again")[0].status \
        == "DRAINING"
    call(pg_db, "heartbeat_worker", worker_id=worker_id, owner_id=WORKER_OWNER, lease_seconds=30)  # still allowed
    stopped = call(pg_db, "stop_worker", worker_id=worker_id, owner_id=WORKER_OWNER, reason="drained")[0]
    assert (stopped.status, stopped.lost_attempts) == ("GONE", 1)
    lost = attempts.attempt(left.attempt_id)
    assert lost["STATUS"] == "LOST" and "its worker" in lost["ERROR_MESSAGE"]
    row = worker_row(pg_db, worker_id)
    assert row["STOP_REASON"] == "drained" and row["STOPPED_AT"] is not None
    again = call(pg_db, "stop_worker", worker_id=worker_id, owner_id=WORKER_OWNER, reason="later")[0]
    assert (again.status, again.lost_attempts) == ("GONE", 0)
    assert worker_row(pg_db, worker_id)["STOP_REASON"] == "drained"
    with pytest.raises(StaleTransitionError, match="is GONE .* expected ACTIVE or DRAINING"):
        call(pg_db, "drain_worker", worker_id=worker_id, owner_id=WORKER_OWNER, reason="x")
    with pytest.raises(StaleTransitionError, match="is GONE .* stop every task process at once"):
        call(pg_db, "heartbeat_worker", worker_id=worker_id, owner_id=WORKER_OWNER, lease_seconds=30)


def test_a_worker_three_heartbeats_late_is_reaped_and_its_attempt_retried(pg_db: EngineDB) -> None:
    queue_pool(pg_db)
    attempts = Attempts(pg_db)
    late = register(pg_db, heartbeat_seconds=10)
    alive = register(pg_db, "worker-b:78:1700000000:0d0d0d0d", heartbeat_seconds=10)
    running = attempts.running("ingest", owner=WORKER_OWNER, pool=POOL)
    with pg_db.write() as conn:  # the task may be retried once
        conn.execute(sa.text(f"INSERT INTO {pg_db.qualify('CFG_TASK_PARAMETERS')} (TASK_ID, PARAMETER_NAME,"
                             " PARAMETER_VALUE) VALUES (:t, 'RETRIES', '1')"), {"t": attempts.task_id("ingest")})
    pg_db.clock.pin(pg_db.clock.now() + timedelta(seconds=29))
    call(pg_db, "heartbeat_worker", worker_id=alive, owner_id="worker-b:78:1700000000:0d0d0d0d", lease_seconds=30)
    assert call(pg_db, "reap_workers") == []  # 29 s is not yet 3 heartbeats of 10 s
    pg_db.clock.pin(pg_db.clock.now() + timedelta(seconds=2))
    reaped = call(pg_db, "reap_workers")
    assert [(r.worker_id, r.owner_id, r.lost_attempts) for r in reaped] == [(late, WORKER_OWNER, 1)]
    row = worker_row(pg_db, late)
    assert row["STATUS"] == "GONE" and "missed 3 heartbeats" in row["STOP_REASON"]
    assert worker_row(pg_db, alive)["STATUS"] == "ACTIVE"
    lost = attempts.attempt(running.attempt_id)
    assert lost["STATUS"] == "LOST" and "declared gone" in lost["ERROR_MESSAGE"]
    retry = attempts.project.rows("SELECT STATUS, POOL, RETRY_NUMBER FROM {AUD_TASK_ATTEMPTS}"
                                  " WHERE TASK_RUN_ID = :t AND ATTEMPT_ID <> :a",
                                  t=running.task_run_id, a=running.attempt_id)
    assert retry == [("QUEUED", POOL, 1)]
    assert attempts.task_run(running.task_run_id)["STATUS"] == "IN-PROGRESS"
    # the reaped worker's late report changes nothing
    before = attempts.snapshot()
    with pytest.raises(StaleTransitionError, match=f"attempt {running.attempt_id} is LOST"):
        call(pg_db, "finish_attempt", attempt_id=running.attempt_id, owner_id=WORKER_OWNER, status="SUCCESS")
    assert attempts.snapshot() == before
    with pytest.raises(StaleTransitionError, match="declared gone"):
        call(pg_db, "heartbeat_worker", worker_id=late, owner_id=WORKER_OWNER, lease_seconds=30)


def test_the_workers_and_queue_depth_views(pg_db: EngineDB) -> None:
    pg_db.clock.pin(pg_db.clock.now())
    queue_pool(pg_db)
    attempts = Attempts(pg_db)
    worker_id = register(pg_db)
    attempts.running("ingest", owner=WORKER_OWNER, key="k1", pool=POOL)
    attempts.queue("load", key="k2", pool=POOL)
    attempts.queue("ingest", key="k3", pool=POOL, not_before=pg_db.clock.now() + timedelta(hours=1))
    pg_db.clock.pin(pg_db.clock.now() + timedelta(seconds=7))
    rows = read_view(pg_db, "AUD_V_WORKERS")
    assert [(r["WORKER_ID"], r["STATUS"], r["INGESTION_IN_USE"], r["WAREHOUSE_IN_USE"], r["SECONDS_SINCE_HEARTBEAT"])
            for r in rows] == [(worker_id, "ACTIVE", 1, 0, 7.0)]
    depth = [(r["POOL"], r["SLOT_KIND"], r["QUEUED"], r["DUE"]) for r in read_view(pg_db, "AUD_V_QUEUE_DEPTH")]
    assert depth == [(POOL, "ingestion", 1, 0), (POOL, "warehouse", 1, 1)]


def test_queue_pools_are_notified_when_attempts_are_queued_and_end(pg_db: EngineDB) -> None:
    queue_pool(pg_db)
    attempts = Attempts(pg_db)
    attempts.run("local"), attempts.run("remote")
    with pg_db.write() as conn:  # the remote task may be retried once
        conn.execute(sa.text("INSERT INTO etl_craft.CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME,"
                             " PARAMETER_VALUE) VALUES (:t, 'RETRIES', '1')"),
                     {"t": attempts.task_id("ingest", "remote")})
    dsn = pg_db.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN etl_craft_queue")
        listener.execute("LISTEN etl_craft_events")
        local = attempts.claimed("load", owner="local-run", key="local", pool="default")  # LOCAL: nothing new
        call(pg_db, "finish_attempt", attempt_id=local.attempt_id, owner_id="local-run", status="SUCCESS")
        assert [(n.channel, n.payload) for n in listener.notifies(timeout=0.5, stop_after=1)] == []
        remote = attempts.claimed("ingest", owner=WORKER_OWNER, key="remote", pool=POOL)
        call(pg_db, "finish_attempt", attempt_id=remote.attempt_id, owner_id=WORKER_OWNER, status="FAILED",
             error_message="boom")
        heard = {(n.channel, n.payload) for n in listener.notifies(timeout=1.0, stop_after=2)}
    assert heard == {("etl_craft_queue", POOL), ("etl_craft_events", f"attempt_ended:{POOL}")}
