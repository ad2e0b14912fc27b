"""Riding out a short Engine DB outage (B27): a restart or a network cut shorter than the lease neither aborts a
run nor makes work run twice.

`ride_out(call, seconds=...)` makes the call again, with a growing pause, while it fails with
EngineUnreachableError (the statement never took effect: the connection was refused or dropped), for at most
`seconds`, then lets the error through. Every write of the Engine DB is a compare-and-set, so a call repeated after
an answer was lost in transit is refused as stale rather than applied twice; callers that can meet that case say
what they check (the task process's own outcome, in etlcraft.supervisor.child).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from etlcraft.core.errors import EngineUnreachableError

T = TypeVar("T")

#: Pauses between tries, in seconds; the last one repeats.
PAUSES = (0.2, 0.5, 1.0, 2.0)


def ride_out(call: Callable[[], T], *, seconds: float, on_wait: Callable[[EngineUnreachableError], None] | None = None,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """`call()`, tried again while the Engine DB is unreachable, for at most `seconds` in all; on_wait is told of
    the first failure of each outage."""
    deadline = time.monotonic() + seconds
    tries = 0
    while True:
        try:
            return call()
        except EngineUnreachableError as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            if tries == 0 and on_wait is not None:
                on_wait(exc)
            sleep(min(PAUSES[min(tries, len(PAUSES) - 1)], left))
            tries += 1
