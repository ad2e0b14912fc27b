"""Pinned project bundles (sql/functions/039_bundles.sql.j2, create_run, create_scheduled_runs), the same on SQLite
and PostgreSQL: record_bundle records a new manifest and is a no-op for the latest one's, and a new run pins its
project's latest bundle (none when the project has none)."""

from __future__ import annotations

import hashlib
import json

import pytest
import sqlalchemy as sa

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.scenario import Project


def _publish(db: EngineDB, files: dict[str, str], project: str = "proj") -> tuple[int, bool]:
    text = json.dumps(files, sort_keys=True)
    row = call(db, "record_bundle", project_code=project, manifest=text,
               manifest_sha256=hashlib.sha256(text.encode()).hexdigest(), file_count=len(files), total_bytes=10,
               store_url="file:///srv/artifacts")[0]
    return int(row.bundle_id), bool(row.created)


def _pinned(db: EngineDB, run_id: int) -> int | None:
    with db.read() as conn:
        return conn.execute(sa.text(f"SELECT BUNDLE_ID FROM {db.qualify('AUD_PIPELINES_RUN_LOG')}"
                                    " WHERE PIPELINE_RUN_ID = :r"), {"r": run_id}).scalar()


def test_record_bundle__same_manifest_as_the_latest__records_nothing(engine_db: EngineDB) -> None:
    Project(engine_db).pipeline("p")
    first = _publish(engine_db, {"sql_files/a.sql": "1" * 64})
    assert first[1] is True
    assert _publish(engine_db, {"sql_files/a.sql": "1" * 64}) == (first[0], False)
    second = _publish(engine_db, {"sql_files/a.sql": "2" * 64})
    assert second[1] is True and second[0] > first[0]
    # the first content again is newer than the latest: it is recorded anew, so new runs pin it
    again = _publish(engine_db, {"sql_files/a.sql": "1" * 64})
    assert again[1] is True and again[0] > second[0]
    with engine_db.read() as conn:
        rows = conn.execute(sa.text("SELECT CREATED_BY, CREATED_BY_KIND, COUNT(*) FROM "
                                    f"{engine_db.qualify('AUD_PROJECT_BUNDLES')} GROUP BY CREATED_BY, "
                                    "CREATED_BY_KIND")).all()
    assert [tuple(r) for r in rows] == [("tester@pytest", "HUMAN", 3)]


def test_record_bundle__unknown_project_or_bad_digest__refused(engine_db: EngineDB) -> None:
    Project(engine_db).pipeline("p")
    with pytest.raises(NotFoundError, match="no active project nope"):
        _publish(engine_db, {"a": "1" * 64}, project="nope")
    with pytest.raises(RefusedByPolicyError, match="expected 64 lower-case hexadecimal digits"):
        call(engine_db, "record_bundle", project_code="proj", manifest="{}", manifest_sha256="abc", file_count=0,
             total_bytes=0, store_url="file:///x")


def test_create_run__pins_the_latest_bundle_of_its_project__none_without_one(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("p")
    assert _pinned(engine_db, project.run("p", "manual:1")) is None
    first, _ = _publish(engine_db, {"sql_files/a.sql": "1" * 64})
    second, _ = _publish(engine_db, {"sql_files/a.sql": "2" * 64})
    assert first < second
    assert _pinned(engine_db, project.run("p", "manual:2", status="QUEUED")) == second


def test_create_scheduled_runs__pin_the_latest_bundle(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    pipeline = project.pipeline("p", RUN_SCHEDULE="0 * * * *")
    bundle, _ = _publish(engine_db, {"sql_files/a.sql": "3" * 64})
    ticks = json.dumps([{"ord": 0, "pipeline_id": pipeline, "run_key": "schedule:1", "run_date": "2026-01-01",
                         "skip_reason": None, "catching_up": False}])
    [row] = call(engine_db, "create_scheduled_runs", ticks=ticks)
    assert _pinned(engine_db, int(row.pipeline_run_id)) == bundle


@pytest.mark.postgres
def test_budget_check__counts_the_server_pool_each_active_worker_and_live_attempts(pg_url: str) -> None:
    """S5.H: the server's pool, 2 + slots/8 (rounded up) per ACTIVE worker of AUD_WORKERS, one per attempt CLAIMED or
    RUNNING (a spare task process holds none); a worker that is GONE holds none."""
    from etlcraft.core.actor import acting_as
    from etlcraft.services.doctor_cluster import budget_check
    from tests.py.conformance.test_workers import queue_pool, register
    from tests.py.conftest import TEST_ACTOR

    db = EngineDB(pg_url)
    try:
        with acting_as(TEST_ACTOR):
            queue_pool(db)
            register(db, "w-a:1:1:aa", ingestion_slots=4, warehouse_slots=16)  # 2 + ceil(20 / 8) = 5
            gone = register(db, "w-b:2:2:bb", ingestion_slots=1, warehouse_slots=0)
            call(db, "stop_worker", worker_id=gone, owner_id="w-b:2:2:bb", reason="test")
        check = budget_check(db, 10)
    finally:
        db.dispose()
    assert check.status == "ok", check
    assert "15 of max_connections" in check.detail and "server pool 10 + 1 active worker(s) 5" in check.detail
    assert check.detail.endswith("+ 0 task attempt(s) claimed or running")
