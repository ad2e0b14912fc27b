"""B3: a stop signal (SIGTERM, SIGHUP) that arrives during an Engine DB transaction waits for the transaction to end,
so the handler that stops etl-craft run (it raises) never cuts a statement in half and leaves a connection that
can be used at once to release the run."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType

import pytest
import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call


class Stopped(Exception):
    pass


@pytest.fixture
def raising_on_sigterm() -> Iterator[None]:
    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.mark.parametrize("transaction", ["read", "write"])
def test_b3_a_stop_during_a_transaction_is_raised_once_it_has_ended__the_connection_pool_stays_usable(
        engine_db: EngineDB, raising_on_sigterm: None, transaction: str) -> None:
    reached = []
    with pytest.raises(Stopped):
        with engine_db.read() if transaction == "read" else engine_db.write() as conn:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered at once to this (main) thread: now held
            reached.append(conn.execute(sa.text("SELECT 1")).scalar())
    assert reached == [1], "the transaction ran to its end before the stop was raised"
    assert call(engine_db, "record_action", command="run", arguments="{}"), "the pool hands out a clean connection"

