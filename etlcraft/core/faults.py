"""Fault points for tests, named by ETL_CRAFT_FAULT=name[:mode], a no-op when the variable is unset.

At the point called `name`: with no mode, InjectedFaultError is raised; with `kill` the process ends at once with
exit code 137 (as if killed: no cleanup, no outcome recorded); with `pause` it sleeps up to PAUSE_SECONDS, so a
test can signal it exactly there (a SIGTERM handler runs during the sleep). Each firing first writes one line to
the process's stderr (a task process's stderr is its attempt's log), so a test can tell that it fired.
"""

from __future__ import annotations

import os
import sys
import time

from etlcraft.core.errors import InjectedFaultError

VARIABLE = "ETL_CRAFT_FAULT"
MODES = ("raise", "kill", "pause")
PAUSE_SECONDS = 60.0

#: Every write boundary an attempt passes, in order, on the path of `etl-craft run` (tests loop over these):
#: a process killed at any of them leaves an Engine DB that the next run completes consistently.
POINTS = (
    "run_created",  # in the parent, after start_run committed: the run is owned, before any task
    "attempt_queued",  # in the parent, after queue_attempts (or queue_attempt) committed, per task
    "attempt_claimed",  # in the parent, after claim_attempt committed, before the task process starts
    "child_entered",  # in the task process, before its handler: CLAIMED, or RUNNING when handed to a spare started
    "child_started",  # in the task process, once start_attempt committed (RUNNING), by itself or its supervisor
    "handler_done",  # in the task process, after the handler returned, before its outcome is sent or recorded
    "outcome_received",  # in the parent, once a task process sent its outcome, before the parent records it
    "outcome_recorded",  # in the task process, once finish_attempt committed (SUCCESS or FAILED, with the offset),
    # by its supervisor or by itself
    "child_reaped",  # in the parent, once a task process reported its outcome or ended, before the run goes on
    "failure_recorded",  # in the parent, after it recorded FAILED for a task process that recorded nothing
    "attempt_timed_out",  # in the parent, after time_out_attempt committed, before the task process is stopped
    "before_finalize",  # in the parent, when nothing is left to run, before finalize_run
)

#: Fault points off an attempt's path (the loop over POINTS does not reach them; each has its own test).
OTHER_POINTS = (
    "alerts_claimed",  # in the alert outbox, after claim_alert_deliveries committed, before any channel is called
)


def fault_point(name: str) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted:
        return
    point, _, mode = wanted.partition(":")
    if point != name:
        return
    mode = mode or "raise"
    print(f"etl-craft: fault point {name} fired in process {os.getpid()} ({VARIABLE}={wanted})", file=sys.stderr,
          flush=True)
    if mode == "kill":
        os._exit(137)
    if mode == "pause":
        time.sleep(PAUSE_SECONDS)
        return
    if mode != "raise":
        raise InjectedFaultError(f"{VARIABLE}={wanted} names the mode {mode!r}; expected one of {', '.join(MODES)}")
    raise InjectedFaultError(f"fault point {name} fired ({VARIABLE}={wanted})")
