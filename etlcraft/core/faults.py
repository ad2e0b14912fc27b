"""Fault points for tests: ETLCRAFT_FAULT=name raises InjectedFaultError at the point called `name`, and
ETLCRAFT_FAULT=name:kill ends the process at once with exit code 137. A no-op when the variable is unset."""

from __future__ import annotations

import os

from etlcraft.core.errors import InjectedFaultError

VARIABLE = "ETLCRAFT_FAULT"

#: Every fault point, in the order an attempt passes them (tests loop over these).
POINTS = (
    "run_created",  # the run exists and is owned, before any task
    "attempt_queued",  # after queue_attempt committed
    "attempt_claimed",  # after claim_attempt committed, before the child starts
    "child_started",  # in the child, after start_attempt committed
    "handler_done",  # in the child, after the handler returned, before finish_attempt
    "outcome_recorded",  # in the child, after finish_attempt committed
    "child_reaped",  # in the parent, after the child ended, before checking its attempt
    "before_finalize",  # in the parent, when nothing is left to run
)


def fault_point(name: str) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted:
        return
    point, _, mode = wanted.partition(":")
    if point != name:
        return
    if mode == "kill":
        os._exit(137)
    raise InjectedFaultError(f"fault point {name} fired ({VARIABLE}={wanted})")
