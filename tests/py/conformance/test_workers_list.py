"""The etl-craft/workers/1 document (`workers list`, GET /api/v1/workers) on both dialects: each worker with the slots
its live attempts take per kind, and the queue of every pool and slot kind, due or not; its text's slot bars."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.services.workers import bar, list_workers, pool_size, render
from tests.py.support.attempts import Attempts

POOL = "remote"
OWNER = "worker-a:77:1700000000:0c0c0c0c"


def test_bar__slots_in_use__one_filled_cell_each_scaled_past_the_width() -> None:
    assert (bar(0, 3), bar(2, 4), bar(4, 4)) == ("[---]", "[##--]", "[####]")
    assert bar(16, 32, width=8) == "[####----]"
    assert bar(0, 0) == "[]"


def test_pool_size__two_plus_one_per_eight_slots() -> None:
    assert (pool_size(1), pool_size(8), pool_size(20), pool_size(64)) == (2, 3, 4, 10)


def test_list_workers__no_worker__empty_list_and_the_queue_per_pool_and_kind(engine_db: EngineDB) -> None:
    attempts = Attempts(engine_db)
    attempts.queue("load", key="k1")
    attempts.queue("ingest", key="k1")
    attempts.queue("load", key="k2", not_before=engine_db.clock.now() + timedelta(hours=1))
    doc = list_workers(engine_db)
    assert doc["schema"] == "etl-craft/workers/1" and doc["workers"] == []
    assert doc["queue"] == [{"pool": "default", "slot_kind": "ingestion", "queued": 1, "due": 1},
                            {"pool": "default", "slot_kind": "warehouse", "queued": 2, "due": 1}]
    assert render(doc).splitlines() == [
        "no worker registered (start one with etl-craft worker --pool P)", "queue:",
        "  default ingestion: 1 queued, 1 due", "  default warehouse: 2 queued, 1 due"]


def test_list_workers__a_worker_running_attempts__slots_in_use_per_kind(engine_db: EngineDB) -> None:
    if not engine_db.is_postgres:
        pytest.skip("a worker registers for a QUEUE pool, which needs PostgreSQL")
    with engine_db.write() as conn:
        conn.execute(sa.text(f"INSERT INTO {engine_db.qualify('CFG_POOLS')} (POOL_NAME, PROVIDER) "
                             f"VALUES ('{POOL}', 'QUEUE')"))
    worker_id = call(engine_db, "register_worker", owner_id=OWNER, worker_name="w1", pool=POOL, host="host-w",
                     pid=77, version="1.0", ingestion_slots=2, warehouse_slots=3, heartbeat_seconds=10)[0].worker_id
    attempts = Attempts(engine_db)
    attempts.running("ingest", owner=OWNER, key="k1", pool=POOL)
    attempts.claimed("load", owner=OWNER, key="k2", pool=POOL)
    attempts.queue("load", key="k3", pool=POOL)
    doc = list_workers(engine_db)
    (worker,) = doc["workers"]
    assert (worker["worker_id"], worker["name"], worker["status"], worker["pool"]) == (worker_id, "w1", "ACTIVE",
                                                                                       POOL)
    assert worker["slots"] == {"ingestion": {"total": 2, "in_use": 1}, "warehouse": {"total": 3, "in_use": 1}}
    assert 0 <= worker["seconds_since_heartbeat"] < 60  # by the Engine DB's clock (AUD_V_WORKERS)
    assert doc["queue"] == [{"pool": POOL, "slot_kind": "warehouse", "queued": 1, "due": 1}]
    text = render(doc)
    assert "  ingestion [#-] 1/2" in text and "  warehouse [#--] 1/3" in text
    assert f"worker {worker_id} w1  pool {POOL}  ACTIVE  host-w pid 77" in text
