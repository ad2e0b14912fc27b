"""ride_out (etlcraft/engine/outage.py): a call is tried again while the Engine DB is unreachable, within a time
limit; any other error goes through at once."""

from __future__ import annotations

import pytest

from etlcraft.core.errors import EngineUnreachableError, StaleTransitionError
from etlcraft.engine.outage import ride_out


def flaky(failures: int, error: Exception) -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise error
        return "done"
    return calls, call


def test_tries_again_while_unreachable_then_returns_the_answer() -> None:
    calls, call = flaky(3, EngineUnreachableError("server closed the connection"))
    told: list[str] = []
    pauses: list[float] = []
    assert ride_out(call, seconds=60, on_wait=lambda exc: told.append(str(exc)), sleep=pauses.append) == "done"
    assert len(calls) == 4 and pauses == [0.2, 0.5, 1.0]
    assert told == ["server closed the connection"], "told once per outage"


def test_gives_up_when_the_time_is_spent() -> None:
    calls, call = flaky(10**6, EngineUnreachableError("down"))
    with pytest.raises(EngineUnreachableError, match="down"):
        ride_out(call, seconds=0.05, sleep=lambda _: None)
    assert len(calls) >= 1


def test_any_other_error_goes_through_at_once() -> None:
    calls, call = flaky(1, StaleTransitionError("attempt 3 is LOST"))
    with pytest.raises(StaleTransitionError):
        ride_out(call, seconds=60, sleep=lambda _: None)
    assert len(calls) == 1
