"""One run's part of an overseer's loop: what can run now is queued, claimed and started within the run's slots,
what can never run is skipped, ended task processes are told, and the run is finalized by the Engine DB once
nothing is left to run. Every status change is a call to the Engine DB's functions.

A RunDriver never blocks: where the run has to wait (a retry's delay, a gate's next look, another owner's attempt)
it says when it wants to be looked at again (`wake_at`). The foreground `etl-craft run` (etlcraft.overseer.local)
drives one run this way, the server (etlcraft.overseer.server) every active run at once, with one supervisor of
task processes: one execution path for both.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etlcraft.core.actor import SYSTEM, acting_as
from etlcraft.core.enums import AttemptStatus
from etlcraft.core.errors import EngineUnreachableError, EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.core.stops import holding_stops
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.outage import ride_out
from etlcraft.engine.queries import fetch_all, fetch_one, statement
from etlcraft.supervisor.child import ChildRequest
from etlcraft.supervisor.local import Ended
from etlcraft.supervisor.pools import LOCAL, AttemptSpec, LocalPool


@dataclass(frozen=True)
class RunSettings:
    pipeline_code: str
    owner_id: str
    slots: int
    lease_seconds: int
    heartbeat_seconds: float
    log_dir: Path
    child: ChildRequest  # the template every task process starts from
    gate_wait_seconds: int = 0  # how long a task gate may wait for its upstream (Gate_wait_minutes)


@dataclass(frozen=True)
class TaskPolicy:
    timeout: float | None  # seconds; None: no limit
    retries: int  # how many retries the Engine DB's retry rule gives the task (retry_policy), for messages


@dataclass(frozen=True)
class RunState:
    """What a driver needs to know of its run at the start of a turn (the run_states query): one read for every run
    an overseer drives, instead of several per run."""

    cancel_requested: bool
    next_queued: datetime | None  # when its earliest QUEUED attempt is due (a retry's NOT_BEFORE, else now)
    next_check: datetime | None  # the next look at a task gate that waits
    foreign_live: int  # its attempts of LOCAL pools live under another owner
    queue_live: bool  # any of its attempts of QUEUE pools QUEUED, CLAIMED or RUNNING (workers run them)
    pause: dict[str, Any] | None  # its pipeline's open pause

    @property
    def next_due(self) -> datetime | None:
        """When something of the run is next due: a queued attempt, or a gate's next look."""
        due = [d for d in (self.next_queued, self.next_check) if d is not None]
        return min(due) if due else None


def read_states(db: EngineDB, owner_id: str, run_ids: Collection[int]) -> dict[int, RunState]:
    """The state of runs `run_ids`, by run id, in one read."""
    with db.read_alone() as conn:
        found = conn.execute(statement(db, "run_states").bindparams(sa.bindparam("run_ids", expanding=True)),
                             {"owner_id": owner_id, "run_ids": list(run_ids)}).mappings().all()
    rows = [{k.lower(): v for k, v in row.items()} for row in found]
    return {int(r["pipeline_run_id"]): RunState(
        cancel_requested=r["cancel_requested_at"] is not None,
        next_queued=as_utc(r["next_queued"]) if r["next_queued"] is not None else None,
        next_check=as_utc(r["next_check"]) if r["next_check"] is not None else None,
        foreign_live=int(r["foreign_live"] or 0),
        queue_live=bool(r["queue_live"]),
        pause=None if r["paused_at"] is None else {"pipeline_code": r["pipeline_code"], "paused_by": r["paused_by"],
                                                   "pause_reason": r["pause_reason"]},
    ) for r in rows}


@dataclass
class RunOutcome:
    pipeline_run_id: int
    status: str
    message: str
    ended: list[Ended] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


class RunDriver:
    """Drives one owned IN-PROGRESS run; with a scope, only the tasks in it (a task command), then ends the run only
    if every task of it has settled, else releases it IN-PROGRESS."""

    def __init__(self, db: EngineDB, run_id: int, settings: RunSettings, policies: Callable[[int], TaskPolicy],
                 on_event: Callable[[str], None], reconcile: Callable[[], object],
                 scope: frozenset[int] | None = None) -> None:
        self.db, self.run_id, self.settings = db, run_id, settings
        self.policies, self.on_event, self.reconcile, self.scope = policies, on_event, reconcile, scope
        self.waited_on: set[int] = set()
        self.gate_waiting: set[int] = set()
        self.children: set[int] = set()  # this run's attempts whose task processes the supervisor watches
        self.outcome = RunOutcome(run_id, "IN-PROGRESS", "")
        self.task_codes: dict[int, str] = {}
        self.tasks: dict[int, dict[str, Any]] = {}  # what a pool is told of each task (run_task_specs)
        self.wake_at = 0.0  # time.monotonic() of the next look; 0: now
        self.lost: str | None = None  # set when the run's lease was found lost
        self.starved = False  # its queued attempts found no free slot of the supervisor's
        self.new_gate_wait = False  # a task gate began to wait in this turn
        self.queue_waiting = False  # it waits for attempts that workers run (QUEUE pools): a notification wakes it
        self.next_queue_look = 0.0  # time.monotonic() of the next look at the workers it waits for
        self.no_worker: set[str] = set()  # QUEUE pools it said have no active worker (said once, until one comes)
        # Readiness: the first turn, and any turn after something this driver did not see end (another owner's or a
        # worker's attempt, an outage, a gate's next look), judges the whole run (ready_tasks); otherwise a turn
        # judges only the successors of the tasks whose attempts ended or that were skipped since the last turn
        # (ready_successors), and the run is finalized only after a whole-run pass found nothing more.
        self.full_pass = True
        self.last_pass_full = False
        self.settled: list[int] = []  # tasks settled since the last readiness pass, whose successors it judges
        self.attempt_tasks: dict[int, int] = {}  # attempt id -> task id, of the attempts this driver started
        # (pool, slot kind, provider) of the run's queued attempts as last read (_claim_and_start); None: read again
        self.queues: list[tuple[str, str, str]] | None = None

    # -- one turn ------------------------------------------------------------------------------------------------

    def step(self, pool: LocalPool, dispatch: bool = True, state: RunState | None = None) -> bool:
        """One turn; False once the run has nothing left to do here: then either outcome.message says why it was
        left (lease lost, paused) or the run is ready to be finalized (finish). With dispatch False (the overseer
        is stopping) nothing new is started. `state` is the run's state read at the start of the turn (read here
        when not given)."""
        now = time.monotonic()
        supervisor = pool.supervisor
        if self.lost:
            self.outcome.ended += supervisor.stop_all(f"stopped: {self.lost}", only=set(self.children))
            self.children.clear()
            self.outcome.message = f"the run's lease was lost ({self.lost}); it was left to its new owner"
            return False
        if state is None:
            state = self.read_state()
        if self.children and state.cancel_requested:
            self._stop_cancelled(pool)
        if self.waited_on and not state.foreign_live:
            # The other owner's attempts it waited for have ended, or were reconciled LOST (by the server's own
            # reconcile, between two of its turns): a LOST one runs again (requeue_lost) before anything is
            # dispatched, so that no task downstream of it is skipped as if it had failed.
            self.requeue_lost()
            self.waited_on.clear()
            self.full_pass = True  # their tasks ended out of this driver's sight
            state = self.read_state()  # what it queued again is due now
        if self.queue_waiting:
            self.full_pass = True  # workers ended attempts of the run out of this driver's sight
        if self.queue_waiting and self.requeue_lost():
            # It waited for workers' attempts: one recorded LOST meanwhile (its worker gone) runs again before
            # anything is dispatched or the run is finalized, as for another owner's attempts above.
            state = self.read_state()
        self.starved = False
        self.new_gate_wait = False
        started = self._dispatch(pool, state) if dispatch else False
        if self.new_gate_wait:  # a gate began to wait in this turn: its next look is not in the state read before
            state = self.read_state()
        if self.children:
            self.queue_waiting = state.queue_live
            self.wake_at = now + self._until_due(state)
            return True
        if not dispatch:
            return False
        if self.starved:  # its attempts wait for a slot of the supervisor's, which other runs hold
            self.wake_at = math.inf  # woken when a slot frees (the server's slot queue)
            return True
        if started:
            self.wake_at = now
            return True
        if state.foreign_live and self._foreign_attempts_live():
            return True
        self.queue_waiting = state.queue_live
        if self.queue_waiting:
            self._wait_for_workers()
            return True
        if state.pause is not None:  # before any wait for a retry or a gate: a paused run ends INCOMPLETE now
            self._paused(state.pause)
            return False
        due = state.next_due
        if due is None and not self.last_pass_full:
            # Only successors were judged: one whole-run pass confirms that nothing is left before the run ends.
            self.full_pass = True
            self.wake_at = now
            return True
        if due is None:
            return False
        left = (due - self.db.clock.now()).total_seconds()
        # Something due already that nothing could start (its pool is full with other runs' attempts) is looked at
        # again a quarter of a second later.
        self.wake_at = now + min(max(left, 0.25), self.settings.heartbeat_seconds)
        return True

    def ended(self, ended: Ended) -> None:
        """A task process of this run has gone (the supervisor recorded its outcome if it did not): its task's
        successors are judged in the next turn."""
        self.children.discard(ended.attempt_id)
        self._settled(self.attempt_tasks.pop(ended.attempt_id, None))
        self.outcome.ended.append(ended)
        self.on_event(f"{ended.task_code}: {ended.status}")
        self.wake_at = 0.0
        with contextlib.suppress(EngineUnreachableError):  # a message only: the Engine DB already decided
            self._say_retry(ended)

    def finish(self) -> None:
        """The run has nothing left to run here: finalize it (or, for a task command, release it while other tasks
        of it have not run)."""
        if self.outcome.message:
            return
        fault_point("before_finalize")
        ride_out(self._finalize, seconds=self.settings.lease_seconds)

    def stop(self, pool: LocalPool, reason: str) -> None:
        """Stop this run's task processes (their attempts recorded interrupted) and release the run, IN-PROGRESS."""
        self.outcome.ended += pool.supervisor.stop_all(reason, only=set(self.children))
        self.children.clear()
        self.release()

    def release_orphans(self, pool: LocalPool) -> None:
        """After an outage: an attempt this supervisor claimed whose answer was lost with the connection is CLAIMED
        by it but has no process. Nothing runs it, so it is recorded LOST at once (the retry rule or requeue_lost
        queues it again) instead of holding the run until its lease expires."""
        with self.db.read() as conn:
            claimed = fetch_all(self.db, conn, "run_own_claimed_attempts", run_id=self.run_id,
                                owner_id=self.settings.owner_id)
        for row in claimed:
            if row["attempt_id"] in pool.supervisor.children:
                continue
            self.full_pass = True
            with contextlib.suppress(StaleTransitionError):
                call(self.db, "lose_attempt", attempt_id=row["attempt_id"], owner_id=self.settings.owner_id,
                     message=f"attempt {row['attempt_id']} was claimed while the Engine DB connection broke and "
                             "never started")
                self.on_event(f"{row['task_code']}: attempt {row['attempt_id']} was claimed as the Engine DB "
                              "connection broke and never started; it is queued again")
        self.requeue_lost()

    # -- dispatch ------------------------------------------------------------------------------------------------

    def read_state(self) -> RunState:
        return read_states(self.db, self.settings.owner_id, [self.run_id])[self.run_id]

    def _dispatch(self, pool: LocalPool, state: RunState) -> bool:
        """Skip what can never run; queue, claim and start what can, within the free slots."""
        try:
            started = self._queue_ready(state)
        except BaseException:
            self.full_pass = True  # what was judged may not all have been acted on: the next turn judges the run
            raise
        waiting = started or (state.next_queued is not None and state.next_queued <= self.db.clock.now())
        if not waiting:  # nothing queued is due: no claim to try
            return started
        if pool.supervisor.free > 0:
            self._claim_and_start(pool)
        elif not self.children:
            self.starved = True  # woken when a slot frees (the server's slot queue)
        return started

    def _ready(self, state: RunState) -> list[Any]:
        """What can run now or never: of the whole run (ready_tasks) when this driver may not have seen everything
        that settled, else of the successors of the tasks that settled since the last turn (ready_successors), whose
        work does not grow with the pipeline."""
        if state.pause is not None:  # nothing is ready in a paused pipeline: judged as a whole once resumed
            self.full_pass = True
            return []
        if state.next_check is not None and state.next_check <= self.db.clock.now():
            self.full_pass = True  # a task gate's next look is due: ready_tasks returns its task again
        if self.full_pass:
            self.full_pass, self.last_pass_full = False, True
            self.settled.clear()
            self.queues = None  # attempts may have been queued out of this driver's sight
            return list(call(self.db, "ready_tasks", run_id=self.run_id))
        self.last_pass_full = False
        found: dict[int, Any] = {}
        for task_id in dict.fromkeys(self.settled):
            if task_id in self.tasks and not self.tasks[task_id]["has_successors"]:
                continue  # nothing of the pipeline depends on it (a fan-out's leaves): no call to make
            found.update((t.task_id, t) for t in call(self.db, "ready_successors", run_id=self.run_id,
                                                     task_id=task_id))
        self.settled.clear()
        return sorted(found.values(), key=lambda t: str(t.task_code))

    def _settled(self, task_id: int | None) -> None:
        """Task `task_id` ended or was skipped: its successors are judged in the next turn (a whole-run pass when
        the task is not known)."""
        if task_id is None:
            self.full_pass = True
        else:
            self.settled.append(task_id)

    def _queue_ready(self, state: RunState) -> bool:
        """Skip what can never run and queue what can; whether anything was skipped or queued."""
        started = False
        ready = [t for t in self._ready(state) if self.scope is None or t.task_id in self.scope]
        for task in (t for t in ready if t.decision == "SKIP"):
            call(self.db, "skip_task_run", run_id=self.run_id, task_id=task.task_id, reason=task.reason)
            self._settled(task.task_id)
            self.outcome.skipped.append((task.task_code, task.reason))
            self.on_event(f"{task.task_code}: SKIPPED ({task.reason})")
            started = True
        to_run = [t for t in ready if t.decision == "RUN"]  # all of them: a queued attempt holds no slot
        # One call queues them all (a fan-out's branches); a task whose gate on other pipelines must be judged is
        # left to queue_attempt (GATED), one call each.
        batch = {int(r.task_id): r for r in call(self.db, "queue_attempts", run_id=self.run_id,
                                                 task_ids=",".join(str(t.task_id) for t in to_run))} if to_run else {}
        for task in to_run:
            queued = batch[int(task.task_id)]
            if queued.outcome == "GATED":
                queued = call(self.db, "queue_attempt", run_id=self.run_id, task_id=task.task_id,
                              gate_wait_seconds=self.settings.gate_wait_seconds)[0]
                self.queues = None  # its pool is not known here
            elif self.queues is not None and not any(q[:2] == (queued.pool, queued.slot_kind) for q in self.queues):
                self.queues = None  # queued in a pool or slot kind the run had nothing queued in
            fault_point("attempt_queued")
            if queued.outcome == "WAITING":  # its gate waits for the upstream: no slot is held, ready_tasks skips it
                if task.task_id not in self.gate_waiting:  # said once; explain shows every look
                    self.gate_waiting.add(task.task_id)
                    self.new_gate_wait = True
                    self.on_event(f"{task.task_code}: {queued.reason}")
                continue
            if queued.outcome != "QUEUED":
                call(self.db, "skip_task_run", run_id=self.run_id, task_id=task.task_id, reason=queued.reason)
                self._settled(task.task_id)
                self.outcome.skipped.append((task.task_code, queued.reason))
                self.on_event(f"{task.task_code}: SKIPPED ({queued.reason})")
                started = True
                continue
            self.task_codes[task.task_id] = task.task_code
            started = True
        return started

    def _claim_and_start(self, pool: LocalPool) -> None:
        """Claim this run's queued attempts (every local pool and slot kind they wait in) and start their processes,
        within the supervisor's free slots: the pipeline's and project's limits are the Engine DB's (claim_attempt
        skips what is at its limit). The pools and slot kinds are read once (run_queued_pools, which reads every
        queued attempt of the run) and kept while this driver queues into them only; a claim that finds nothing
        where they were kept reads them again, for an attempt someone else queued elsewhere."""
        fresh = self.queues is None
        if self.queues is None:
            self.queues = self._queued_pools()
        took = self._claim_in(pool, self.queues)
        if not took and not fresh and not self.starved:
            self.queues = self._queued_pools()
            self._claim_in(pool, self.queues)

    def _queued_pools(self) -> list[tuple[str, str, str]]:
        """(pool, slot kind, provider) of each pool and slot kind the run has QUEUED attempts in."""
        with self.db.read_alone() as conn:
            return [(r["pool"], r["slot_kind"], r["provider"])
                    for r in fetch_all(self.db, conn, "run_queued_pools", run_id=self.run_id)]

    def _claim_in(self, pool: LocalPool, queues: list[tuple[str, str, str]]) -> int:
        """Claim and start within the free slots in each LOCAL pool and slot kind of `queues`; how many were
        claimed."""
        took = 0
        for name, kind, provider in queues:
            if provider != LOCAL:  # a QUEUE pool's attempts wait for its workers
                continue
            if pool.supervisor.free <= 0:
                # Every slot of the supervisor is taken (by other runs, where it drives several): starved.
                self.starved = True
                return took
            with holding_stops():  # a stop finds each claimed attempt started and supervised, never claimed only (B3)
                took += self._take(pool, name, kind)
        return took

    def _take(self, pool: LocalPool, name: str, kind: str) -> int:
        taken = pool.take(self.run_id, name, kind, pool.supervisor.free, self._spec, self.settings.log_dir)
        for done in taken:
            code = done.spec.task_code
            if done.error is not None:  # recorded FAILED (B2): the retry rule retries it or not
                self._settled(self.attempt_tasks.pop(done.spec.attempt_id, None))
                ended = Ended(done.spec.attempt_id, code, "FAILED", None)
                self.outcome.ended.append(ended)
                self.on_event(f"{code}: FAILED ({done.error})")
                self._say_retry(ended)
                continue
            self.children.add(done.spec.attempt_id)
            self.on_event(f"{code}: started attempt {done.spec.attempt_id}")
        return len(taken)

    def _spec(self, attempt: Any, pool: str, kind: str) -> AttemptSpec:
        """The spec of an attempt claim_attempt returned, from what the driver knows of its run (one read of the
        run's tasks, the first time)."""
        task_id = int(attempt.task_id)
        if task_id not in self.tasks:
            with self.db.read() as conn:
                rows = fetch_all(self.db, conn, "run_task_specs", run_id=self.run_id)
            self.tasks.update({int(r["task_id"]): r for r in rows})
            self.task_codes.update({int(r["task_id"]): str(r["task_code"]) for r in rows})
        task = self.tasks[task_id]
        self.attempt_tasks[int(attempt.attempt_id)] = task_id
        return AttemptSpec(
            attempt_id=int(attempt.attempt_id), task_run_id=int(attempt.task_run_id),
            pipeline_run_id=int(attempt.pipeline_run_id), project_code=str(task["project_code"]),
            pipeline_code=str(task["pipeline_code"]), task_code=str(task["task_code"]), handler=str(task["handler"]),
            pool=pool, slot_kind=kind, timeout_seconds=self.policies(task_id).timeout,
            lease_seconds=self.settings.lease_seconds)

    def _task_code(self, task_id: int) -> str:
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "run_task_rows", run_id=self.run_id)
        self.task_codes.update({int(r["task_id"]): str(r["task_code"]) for r in rows})
        return self.task_codes[task_id]

    # -- waiting -------------------------------------------------------------------------------------------------

    def _foreign_attempts_live(self) -> bool:
        """An attempt of this run still leased to another owner (a supervisor that died or let the run go while its
        task process runs on) may yet record its outcome, or its lease expires: reconcile, queue again what was
        lost, and look again a heartbeat later, rather than finalizing under it."""
        with self.db.read() as conn:
            foreign = fetch_all(self.db, conn, "run_foreign_live_attempts", run_id=self.run_id,
                                owner_id=self.settings.owner_id)
        if not foreign:
            return False
        for row in foreign:
            if row["attempt_id"] not in self.waited_on:
                self.waited_on.add(row["attempt_id"])
                self.on_event(f"{row['task_code']}: waiting for attempt {row['attempt_id']}, {row['status']} "
                              f"by {row['owner_id']}, to end or its lease to expire")
        self.reconcile()
        self.requeue_lost()
        self.wake_at = time.monotonic() + self.settings.heartbeat_seconds
        return True

    def _wait_for_workers(self) -> None:
        """Its attempts in QUEUE pools are the workers' to run: the run waits for their outcome without spinning,
        woken by the notification of an attempt's end (etl_craft_events) or, failing that, a heartbeat later. Once
        per heartbeat it records LOST the attempts of workers that stopped heartbeating (reap_workers), queues again
        a lost attempt (requeue_lost), and says once when a pool it waits on has no active worker."""
        now = time.monotonic()
        self.wake_at = now + self.settings.heartbeat_seconds
        if now < self.next_queue_look:
            return
        self.next_queue_look = self.wake_at
        if self.db.is_postgres:
            for reaped in call(self.db, "reap_workers"):
                if reaped.lost_attempts:
                    self.on_event(f"worker {reaped.worker_id} ({reaped.owner_id}) stopped heartbeating: "
                                  f"{reaped.lost_attempts} attempt(s) it held recorded LOST")
        self.requeue_lost()
        with self.db.read() as conn:
            waits = fetch_all(self.db, conn, "run_queue_waits", run_id=self.run_id)
        for row in waits:
            pool = str(row["pool"])
            if int(row["active_workers"] or 0) > 0:
                self.no_worker.discard(pool)
            elif pool not in self.no_worker:
                self.no_worker.add(pool)
                self.on_event(f"pool {pool} has no active worker; {row['waiting']} attempts wait "
                              f"(etl-craft worker --pool {pool} serves it)")

    def _paused(self, pause: dict[str, Any]) -> None:
        """A paused pipeline admits no task: once what runs has ended, the run is released, IN-PROGRESS."""
        self.release()
        code = pause["pipeline_code"]
        self.outcome.message = (
            f"pipeline {code} is paused (by {pause['paused_by']}: {pause['pause_reason'] or 'no reason given'}), so "
            f"run {self.run_id} admits no more tasks and stays IN-PROGRESS; etl-craft resume --pipeline-code {code}, "
            f"then etl-craft run --pipeline-code {code} --run-id {self.run_id} carries on")

    def _stop_cancelled(self, pool: LocalPool) -> None:
        """The run was cancelled: its running attempts end CANCELLED (their owner acknowledges the request) and their
        process groups are stopped; finalize_run then ends the run CANCELLED."""
        reason = f"run {self.run_id} was cancelled"
        for attempt_id in list(self.children):
            with contextlib.suppress(StaleTransitionError):  # it ended meanwhile: its outcome stands
                call(self.db, "cancel_attempt", attempt_id=attempt_id, reason=reason, owner_id=self.settings.owner_id)
        for ended in pool.supervisor.stop_all(reason, only=set(self.children)):
            self.outcome.ended.append(ended)
            self.on_event(f"{ended.task_code}: {ended.status} ({reason})")
        self.children.clear()

    def _say_retry(self, ended: Ended) -> None:
        """Tell the operator about the retry the Engine DB queued after an attempt ended (its retry rule decides, in
        the transaction that recorded the end): "retry 1 of 2 (attempt 12) in 60 s". A success has no retry: no read
        is spent on it, on the path every completion takes."""
        if ended.status == AttemptStatus.SUCCESS:
            return
        with self.db.read() as conn:
            queued = fetch_one(self.db, conn, "next_attempt", attempt_id=ended.attempt_id)
        if queued is None or not queued["retry_number"]:
            return
        delay = 0.0
        if queued["not_before"] is not None:
            delay = (as_utc(queued["not_before"]) - as_utc(queued["queued_at"])).total_seconds()
        retries = self.policies(int(queued["task_id"])).retries
        self.on_event(f"{ended.task_code}: retry {queued['retry_number']} of {retries} (attempt "
                      f"{queued['attempt_id']}) in {delay:g} s")

    def _until_due(self, state: RunState) -> float:
        """Seconds to wait for a task process to end before looking again: a heartbeat, or less when something
        of the run is due sooner."""
        due = state.next_due
        left = (due - self.db.clock.now()).total_seconds() if due else 0.0
        # Due already: only a free slot was missing, and a task process that ends wakes the wait anyway.
        return min(left, self.settings.heartbeat_seconds) if left > 0 else self.settings.heartbeat_seconds

    # -- ending --------------------------------------------------------------------------------------------------

    def requeue_lost(self) -> int:
        """A task whose latest attempt was LOST (its owner died) and that the retry rule did not retry runs again:
        nobody knows whether it finished. The Engine DB decides which (requeue_lost); how many were queued."""
        queued_again = call(self.db, "requeue_lost", run_id=self.run_id)
        for queued in queued_again:
            code = self.task_codes.get(queued.task_id) or self._task_code(queued.task_id)
            self.on_event(f"{code}: attempt {queued.lost_attempt_id} was lost; queued again")
        return len(queued_again)

    def _finalize(self) -> None:
        if self.scope is not None:
            # A task command ran its tasks; the run ends only when no other task of it is left to run (B25): one
            # without a settled task run, or one the engine skipped that can run now (its failed upstream was rerun).
            ready = {t.task_code for t in call(self.db, "ready_tasks", run_id=self.run_id) if t.decision == "RUN"}
            waiting = sorted(ready | set(self._unsettled()))
            if waiting:
                self.release()
                self.outcome.message = (
                    f"run {self.run_id} stays IN-PROGRESS: {len(waiting)} task(s) have not run yet "
                    f"({', '.join(waiting)}); etl-craft run --pipeline-code {self.settings.pipeline_code} "
                    f"--run-id {self.run_id} runs them")
                return
        with acting_as(SYSTEM):  # the engine ends the run (ENDED_BY_KIND SYSTEM); operators end runs by mark/cancel
            ended = call(self.db, "finalize_run", run_id=self.run_id, owner_id=self.settings.owner_id)[0]
        self.outcome.status = ended.status
        self.outcome.message = f"run {self.run_id} ended {ended.status}"

    def _unsettled(self) -> list[str]:
        with self.db.read() as conn:
            return [str(r["task_code"]) for r in fetch_all(self.db, conn, "run_unsettled_tasks", run_id=self.run_id)]

    def release(self) -> None:
        """Give the run up without ending it, so the next owner resumes it at once (not after the lease)."""
        with contextlib.suppress(EtlCraftError):
            call(self.db, "release_run", run_id=self.run_id, owner_id=self.settings.owner_id)


def as_utc(value: datetime | str) -> datetime:
    """A stored time as an aware UTC datetime (SQLite keeps UTC text)."""
    stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp
