"""How etl-craft talks to a PostgreSQL Engine DB: a write-API call in its own transaction is one statement sent in
autocommit (the function marks its own transaction), and every session runs without JIT."""

from __future__ import annotations

import pytest

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import EngineDbError, NotFoundError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_on
from tests.py.support.queue import seed_queue

pytestmark = pytest.mark.postgres
WORKER = Actor("worker@test", ActorKind.WORKER)


def test_a_call_sent_as_its_own_transaction__a_refusal_raises_its_error__changes_nothing__the_connection_goes_on(
        pg_url: str) -> None:
    """Unpinned, call() and call_on() send one function call as its own transaction (the driver in autocommit, no
    BEGIN and COMMIT): a refusal still raises its error class and leaves the connection ready for the next call."""
    seed_queue(pg_url, 1)
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


def test_engine_db_sessions_run_without_jit(pg_url: str) -> None:
    """etl-craft's PostgreSQL sessions read and write a few rows by index: JIT compilation (tens of milliseconds once
    a large table's estimates cross jit_above_cost) is off for them, and their search_path is the Engine DB schema."""
    db = EngineDB(pg_url)
    with db.read() as conn:
        assert conn.exec_driver_sql("SHOW jit").scalar() == "off"
        assert conn.exec_driver_sql("SHOW search_path").scalar() == "etl_craft"
    db.dispose()


def test_a_call_to_an_engine_db_that_cannot_be_reached_names_it_and_the_remedy() -> None:
    """Connecting is part of the call: an unreachable server is etl-craft's EngineDbError, not a driver error."""
    db = EngineDB("postgresql://nobody@127.0.0.1:1/nowhere")
    with acting_as(WORKER), pytest.raises(EngineDbError, match=r"(?s)cannot reach the Engine DB at postgresql://nobody@"
                                                               r"127\.0\.0\.1:1/nowhere: the connection was refused "
                                                               r"\(nothing listens on 127\.0\.0\.1:1\); check "
                                                               r"--engine-url and that the server is running"):
        call(db, "pause_pipeline", pipeline_id=1, reason="maintenance")
    db.dispose()
