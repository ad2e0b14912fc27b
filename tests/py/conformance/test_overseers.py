"""The server's leadership record (AUD_OVERSEERS) on both dialects: register_overseer closes the rows of servers
that died without stopping, renew_overseer is one heartbeat for the server and every run and attempt it owns, and a
server recorded stopped is refused its heartbeat."""

from __future__ import annotations

from datetime import timedelta

import pytest

from etlcraft.core.actor import acting_as
from etlcraft.core.errors import StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all
from tests.py.conftest import TEST_ACTOR
from tests.py.support.attempts import Attempts, as_utc
from tests.py.support.scenario import Project


def _overseers(db: EngineDB) -> list[dict[str, object]]:
    with db.read() as conn:
        return fetch_all(db, conn, "overseers")


def test_a_new_leader_closes_the_row_of_a_server_that_died_without_stopping(engine_db: EngineDB) -> None:
    first = call(engine_db, "register_overseer", owner_id="h:1:a", host="h", pid=1, version="0.1")[0]
    assert first.closed == 0
    second = call(engine_db, "register_overseer", owner_id="h:2:b", host="h", pid=2, version="0.1")[0]
    assert second.closed == 1
    rows = {r["overseer_id"]: r for r in _overseers(engine_db)}
    assert rows[first.overseer_id]["stopped_at"] is not None
    assert "replaced by the server on h pid 2" in str(rows[first.overseer_id]["stop_reason"])
    assert rows[second.overseer_id]["stopped_at"] is None


def test_renew_overseer_renews_every_run_and_attempt_the_server_owns(engine_db: EngineDB) -> None:
    attempts = Attempts(engine_db)
    queued = attempts.claimed(owner="srv")
    call(engine_db, "start_run", run_id=queued.run_id, owner_id="srv")
    other = attempts.run("manual:2")  # IN-PROGRESS, owned by nobody: not the server's
    overseer = call(engine_db, "register_overseer", owner_id="srv", host="h", pid=1, version="0.1")[0]
    engine_db.clock.pin(engine_db.clock.now() + timedelta(seconds=30))
    renewed = call(engine_db, "renew_overseer", overseer_id=overseer.overseer_id, owner_id="srv", lease_seconds=90)
    assert [(r.kind, r.id) for r in renewed] == [("run", queued.run_id)]
    expected = engine_db.clock.now() + timedelta(seconds=90)
    with engine_db.read() as conn:
        run = fetch_all(engine_db, conn, "run_header", run_id=queued.run_id)[0]
        attempt = fetch_all(engine_db, conn, "attempt_row", attempt_id=queued.attempt_id)[0]
        leader = fetch_all(engine_db, conn, "overseer_open")[0]
        unowned = fetch_all(engine_db, conn, "run_header", run_id=other)[0]
    assert as_utc(run["lease_expires_at"]) == expected
    assert as_utc(attempt["lease_expires_at"]) == expected
    assert as_utc(leader["heartbeat_at"]) == engine_db.clock.now()
    assert unowned["owner_id"] is None


def test_a_server_recorded_stopped_is_refused_its_heartbeat(engine_db: EngineDB) -> None:
    overseer = call(engine_db, "register_overseer", owner_id="srv", host="h", pid=1, version="0.1")[0]
    stopped = call(engine_db, "stop_overseer", overseer_id=overseer.overseer_id, reason="SIGTERM")[0]
    assert stopped.stopped_at is not None
    with pytest.raises(StaleTransitionError, match="recorded stopped"):
        call(engine_db, "renew_overseer", overseer_id=overseer.overseer_id, owner_id="srv")
    again = call(engine_db, "stop_overseer", overseer_id=overseer.overseer_id, reason="later")[0]
    assert again.stopped_at == stopped.stopped_at  # the first ending stands


@pytest.mark.postgres
def test_work_made_elsewhere_notifies_a_listening_server_when_it_commits(pg_url: str) -> None:
    import psycopg

    db = EngineDB(pg_url)
    with acting_as(TEST_ACTOR), psycopg.connect(pg_url, autocommit=True) as listener:
        attempts = Attempts(db)
        pipeline_id = attempts.project.pipelines[attempts.pipeline()]
        listener.execute("LISTEN etl_craft_events")
        run_id = attempts.run(status="QUEUED")
        call(db, "cancel_run", run_id=run_id, reason="test")
        heard = [n.payload for n in listener.notifies(timeout=2, stop_after=2)]
    db.dispose()
    assert heard == [f"create_run:{pipeline_id}", f"cancel_run:{run_id}"]


def test_a_run_past_its_sla_is_recorded_breached_while_it_runs_and_finalize_keeps_it(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("slow", SLA_MINUTES=10)
    project.pipeline("no_sla")
    slow, other = project.run("slow"), project.run("no_sla")
    engine_db.clock.pin(engine_db.clock.now() + timedelta(minutes=9))
    assert call(engine_db, "breach_slas") == []
    engine_db.clock.pin(engine_db.clock.now() + timedelta(minutes=2))
    breached = call(engine_db, "breach_slas")
    assert [(r.pipeline_run_id, r.pipeline_code, r.sla_minutes) for r in breached] == [(slow, "slow", 10)]
    assert [r.pipeline_run_id for r in call(engine_db, "breach_slas")] == [slow]  # still listed, recorded once
    ended = call(engine_db, "finalize_run", run_id=slow)[0]
    assert (ended.status, ended.sla_status) == ("SUCCESS", "BREACHED")
    assert call(engine_db, "finalize_run", run_id=other)[0].sla_status is None
