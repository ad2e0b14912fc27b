"""The Pool interface's rules that need no task process (etlcraft.supervisor.pools), on both dialects where they
apply: an unknown handle is UNKNOWN, never an exception; submit refuses what is not the pool's to run; the queue
provider starts nothing, answers the same handle twice, cancels a queued attempt at once and says what it cannot
confirm; the local provider's slots are shared by both kinds and it reconciles a claim that has no process. Running
attempts for real is tests/py/process/test_pool_contract.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import ConfigurationError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.supervisor.child import ChildRequest
from etlcraft.supervisor.local import LocalSupervisor
from etlcraft.supervisor.pools import (
    LOCAL,
    QUEUE,
    UNKNOWN,
    AttemptSpec,
    ExecutionHandle,
    LocalPool,
    Providers,
    QueuePool,
)
from tests.py.support.attempts import OWNER, Attempts, Queued

POOL = "remote"
ME = "pool-test-owner:1:1700000000:abcdef01"


def _spec(queued: Queued, pool: str = "default", kind: str = "warehouse", code: str = "load") -> AttemptSpec:
    return AttemptSpec(queued.attempt_id, queued.task_run_id, queued.run_id, "proj", "p", code, "SQL", pool, kind,
                       None, 30)


def _local(db: EngineDB, tmp_path: Path, slots: int = 2) -> LocalPool:
    request = ChildRequest(attempt_id=0, owner_id=ME, project_dir=str(tmp_path), engine_url=str(db.url),
                           engine_schema=db.schema or "etl_craft", engine_password=None, log_path="",
                           actor_name="pool test", actor_kind="SYSTEM", lease_seconds=30)
    return LocalPool(db, LocalSupervisor(db, ME, request, slots, tmp_path / "logs"))


def _queue_pool(db: EngineDB) -> None:
    with db.write() as conn:
        conn.execute(sa.text(f"INSERT INTO {db.qualify('CFG_POOLS')} (POOL_NAME, PROVIDER) VALUES (:n, 'QUEUE')"),
                     {"n": POOL})


def _status(db: EngineDB, attempt_id: int) -> str:
    return str(Attempts(db).project.scalar("SELECT STATUS FROM {AUD_TASK_ATTEMPTS} WHERE ATTEMPT_ID = :a",
                                           a=attempt_id))


def test_local_pool__unknown_handle_is_unknown__slots_shared_by_kind(engine_db: EngineDB, tmp_path: Path) -> None:
    pool = _local(engine_db, tmp_path, slots=3)
    found = pool.status(ExecutionHandle("default", LOCAL, 987654))
    assert found.status == UNKNOWN and "not in the Engine DB" in found.message
    capacity = pool.capacity()
    assert capacity.shared and dict(capacity.slots) == {"ingestion": 3, "warehouse": 3}
    assert dict(capacity.free) == {"ingestion": 3, "warehouse": 3}


def test_local_pool__refuses_another_owners_attempt_and_an_ended_one(engine_db: EngineDB, tmp_path: Path) -> None:
    attempts = Attempts(engine_db)
    theirs = attempts.claimed("load", owner=OWNER)
    pool = _local(engine_db, tmp_path)
    with pytest.raises(StaleTransitionError, match=rf"attempt {theirs.attempt_id} \(load\) cannot be submitted to "
                                                   rf"pool default: it is CLAIMED \(owner {OWNER}\)"):
        pool.submit(_spec(theirs))
    assert not pool.supervisor.children
    call(engine_db, "finish_attempt", attempt_id=theirs.attempt_id, owner_id=OWNER, status="SUCCESS")
    with pytest.raises(StaleTransitionError, match="it is SUCCESS"):
        pool.submit(_spec(theirs))


def test_local_pool__reconcile_confirms_a_claim_without_a_process_is_not_running(engine_db: EngineDB,
                                                                                   tmp_path: Path) -> None:
    orphan = Attempts(engine_db).claimed("load", owner=ME)
    pool = _local(engine_db, tmp_path)
    found = pool.reconcile()
    assert found.complete
    assert [(s.handle.attempt_id, s.status, s.alive) for s in found.statuses] == [(orphan.attempt_id, "CLAIMED",
                                                                                     False)]


def test_queue_pool__refused_on_sqlite(engine_db: EngineDB) -> None:
    if engine_db.is_postgres:
        QueuePool(engine_db, POOL)  # accepted
        return
    with pytest.raises(ConfigurationError, match="pool remote has PROVIDER 'QUEUE', which needs a PostgreSQL"):
        QueuePool(engine_db, POOL)


@pytest.fixture
def pg_db(engine_db: EngineDB) -> EngineDB:
    if not engine_db.is_postgres:
        pytest.skip("QUEUE pools need a PostgreSQL Engine DB (the SQLite refusal has its own test)")
    _queue_pool(engine_db)
    return engine_db


def test_queue_pool__submit_twice_one_handle__starts_nothing__cancel_ends_it_at_once(pg_db: EngineDB) -> None:
    queued = Attempts(pg_db).queue("ingest", pool=POOL)
    pool = QueuePool(pg_db, POOL)
    spec = _spec(queued, POOL, "ingestion", "ingest")
    first = pool.submit(spec)
    assert pool.submit(spec) == first == ExecutionHandle(POOL, QUEUE, queued.attempt_id)
    assert pool.status(first).status == "QUEUED" and _status(pg_db, queued.attempt_id) == "QUEUED"
    assert pool.status(ExecutionHandle(POOL, QUEUE, 987654)).status == UNKNOWN
    assert dict(pool.capacity().slots) == {"ingestion": 0, "warehouse": 0}  # no worker yet
    pool.cancel(first, grace_seconds=1)
    assert _status(pg_db, queued.attempt_id) == "CANCELLED"
    pool.cancel(first, grace_seconds=1)  # ended already: its outcome stands, nothing is raised


def test_queue_pool__refuses_an_attempt_of_another_pool(pg_db: EngineDB) -> None:
    queued = Attempts(pg_db).queue("ingest")
    with pytest.raises(StaleTransitionError, match=rf"attempt {queued.attempt_id} \(ingest\) cannot be submitted "
                                                   "to QUEUE pool remote: it is in pool default"):
        QueuePool(pg_db, POOL).submit(_spec(queued, "default", "ingestion", "ingest"))


def test_queue_pool__reconcile_says_what_it_cannot_confirm(pg_db: EngineDB) -> None:
    attempts = Attempts(pg_db)
    waiting = attempts.queue("load", key="k1", pool=POOL)
    held = attempts.running("ingest", owner=OWNER, key="k2", pool=POOL)  # no worker has this owner id
    found = QueuePool(pg_db, POOL).reconcile()
    assert not found.complete
    assert f"attempt {held.attempt_id} (RUNNING by {OWNER}: no worker)" in found.message
    by_id = {s.handle.attempt_id: s for s in found.statuses}
    assert by_id[waiting.attempt_id].status == "QUEUED" and by_id[held.attempt_id].alive is None
    capacity_before = QueuePool(pg_db, POOL).capacity()
    call(pg_db, "register_worker", owner_id="w-owner", worker_name="w1", pool=POOL, host="h", pid=1, version="x",
         ingestion_slots=2, warehouse_slots=1, heartbeat_seconds=10)
    assert dict(capacity_before.slots) == {"ingestion": 0, "warehouse": 0}
    assert dict(QueuePool(pg_db, POOL).capacity().slots) == {"ingestion": 2, "warehouse": 1}


def test_providers__a_pool_without_a_row_is_local(pg_db: EngineDB) -> None:
    providers = Providers(pg_db)
    providers.read()
    assert providers.of(POOL) == QUEUE and providers.of("default") == LOCAL and providers.queue_pools() == [POOL]
