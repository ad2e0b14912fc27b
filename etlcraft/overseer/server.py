"""`etl-craft server`: the overseer that runs every pipeline on its schedule (S4.B, S4.D).

One process leads an Engine DB at a time: it holds a session lock for its whole life (an advisory lock on a
dedicated connection on PostgreSQL, a file lock beside a SQLite Engine DB) and records itself in AUD_OVERSEERS. Its
loop: reconcile expired leases, create the runs of due schedule ticks, admit QUEUED runs through their pipeline
gates without waiting, take over IN-PROGRESS runs nobody supervises (started by `run --init-only`, the SQL API, a
server that died), and drive every active run with a RunDriver (the code `etl-craft run` drives its one run with),
sharing one supervisor of task processes and its slots. Completions wake the loop at once; so do signals.

Nothing is decided here that the Engine DB's functions decide: the server asks them, in a loop.

Stopping (SIGTERM, SIGINT, SIGHUP): no run is created, admitted or dispatched any more; running task processes get
up to Shutdown_grace_seconds to end, then they are stopped (their attempts recorded interrupted, queued to run again)
and every run the server owns is released IN-PROGRESS for its successor. A second signal stops them at once. A
server that loses its lock (its lock connection dropped) stops its task processes and exits at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from etlcraft import __version__
from etlcraft.alerts.outbox import AlertSender
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import (
    EngineUnreachableError,
    EtlCraftError,
    RefusedByPolicyError,
    StaleTransitionError,
)
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.functions import call
from etlcraft.engine.locks import HeldLock, try_hold
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.overseer.driver import RunDriver, RunSettings, TaskPolicy, as_utc, read_states
from etlcraft.overseer.local import Listener, stop_signals
from etlcraft.overseer.schedules import Scheduler
from etlcraft.supervisor.child import ChildRequest
from etlcraft.supervisor.local import Ended, LocalSupervisor
from etlcraft.supervisor.pools import LocalPool

LEADER_LOCK = "etl-craft:overseer"
#: The pooled Engine DB connections the server itself holds at most, one at a time each: its loop, its heartbeat (Beat)
#: and its alert sender (AlertSender). Its leader lock and its LISTEN have connections of their own, outside the pool.
SERVER_CONNECTIONS = 3
SERVER_ACTOR = Actor("etl-craft server", ActorKind.SYSTEM)
#: How often the loop looks at the Engine DB for new work when nothing wakes it (runs started elsewhere, metadata
#: changes, pauses): a completion, a signal or a due tick wake it sooner.
IDLE_SECONDS = 1.0
#: How often schedules are read again although no tick is due (new pipelines, changed schedules, pauses).
SCHEDULE_REFRESH_SECONDS = 10.0


@dataclass(frozen=True)
class ServerSettings:
    owner_id: str
    slots: int  # task processes at once, over every pipeline
    lease_seconds: int
    heartbeat_seconds: float
    shutdown_grace_seconds: float
    gate_wait_seconds: int
    timezone: str | None  # Orchestration: Timezone (None: not set), for schedules whose pipeline and project set none
    run_settings: dict[str, Any]  # what create_run keeps on a scheduled run (config checksum, retry defaults)
    child: ChildRequest


class ServerLog:
    """One line per decision: text, or JSON with --log-format json."""

    def __init__(self, write: Callable[[str], None], as_json: bool) -> None:
        self.write, self.as_json = write, as_json
        self.lock = threading.Lock()

    def __call__(self, message: str, **fields: Any) -> None:
        at = datetime.now(UTC)
        if self.as_json:
            line = json.dumps({"at": at.isoformat(), "message": message, **fields}, default=str, sort_keys=True)
        else:
            where = "".join(f" [{k} {v}]" for k, v in fields.items())
            line = f"{at:%Y-%m-%d %H:%M:%S} UTC{where} {message}"
        with self.lock:
            self.write(line)


class Beat(threading.Thread):
    """The server's heartbeat, on its own thread: renew_overseer renews the overseer row and every lease it holds
    in one call; the lock connection is asked whether the lock still holds."""

    def __init__(self, server: Server) -> None:
        super().__init__(name="etl-craft server heartbeat", daemon=True)
        self.server = server
        self.stopping = threading.Event()
        self.renewed: set[int] | None = None  # the runs the last heartbeat renewed
        self.lost: str | None = None

    def run(self) -> None:
        server = self.server
        with acting_as(SERVER_ACTOR):
            while not self.stopping.wait(server.settings.heartbeat_seconds):
                if not server.lock.alive():
                    self.lost = "its leader lock connection to the Engine DB was lost"
                    server.wake()
                    return
                try:
                    rows = call(server.db, "renew_overseer", overseer_id=server.overseer_id,
                                owner_id=server.settings.owner_id, lease_seconds=server.settings.lease_seconds)
                except StaleTransitionError as exc:
                    self.lost = str(exc)
                    server.wake()
                    return
                except EtlCraftError:
                    continue  # the Engine DB is briefly unreachable: the next beat tries again
                self.renewed = {int(r.id) for r in rows if r.kind == "run"}

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.server.settings.heartbeat_seconds + 5)


class Server:
    def __init__(self, db: EngineDB, settings: ServerSettings, run_settings: Callable[[str, int, int | None],
                 RunSettings], policies: Callable[[int], Callable[[int], TaskPolicy]],
                 reconcile: Callable[[], object], log: ServerLog, alerts: AlertSender | None = None) -> None:
        self.db, self.settings, self.log = db, settings, log
        self.alerts = alerts  # delivers alerts on its own thread; each heartbeat's turn raises the overdue ones
        self.run_settings, self.policies, self.reconcile = run_settings, policies, reconcile
        self.drivers: dict[int, RunDriver] = {}
        #: The order in which runs claim the local slots: their pipeline's PRIORITY, highest first, then the oldest.
        self.claim_order: dict[int, tuple[int, int]] = {}
        self.left: dict[int, float] = {}  # runs given up for now (paused, refused): not taken again before then
        self.admit_after: dict[int, float] = {}  # QUEUED runs whose gate waits: not judged again before then
        self.breached: set[int] = set()  # runs whose SLA breach was logged
        self.stopping = 0
        self.lock: HeldLock
        self.beat: Beat
        self.overseer_id = 0
        self.stop_reason = "stopped"
        self.outage: float | None = None  # when the Engine DB became unreachable, while it stays so
        self.grace_until: float | None = None  # once stopping: when running tasks are stopped
        self.last_reconcile = self.last_schedules = 0.0
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        os.set_blocking(self._wake_r, False)

    # -- life ----------------------------------------------------------------------------------------------------

    def serve(self) -> int:
        """Lead until told to stop; the exit code (0 stopped, 4 the lock was lost)."""
        with self.leading(), self._signals():
            while (code := self.turn()) is None:
                pass
            self.stop_reason = "stopped by a signal" if code == 0 else f"lost its leadership: {self.beat.lost}"
            return code

    def _active_message(self) -> str:
        with self.db.read() as conn:
            row = fetch_one(self.db, conn, "overseer_open")
        who = "another process"
        if row is not None:
            who = (f"overseer {row['overseer_id']} on {row['host']} (pid {row['pid']}, etl-craft {row['version']}, "
                   f"since {_when(row['started_at'])}, last heartbeat {_when(row['heartbeat_at'])})")
        return (f"a server is already active for this Engine DB: {who}; one server leads an Engine DB at a time. "
                "Stop that one first (SIGTERM), or leave it running: it runs every pipeline's schedule")

    @contextlib.contextmanager
    def leading(self) -> Iterator[None]:
        """Take the lead (or raise RefusedByPolicyError naming the leader), record it, start the heartbeat; on the
        way out record the ending and give the lock up. turn() runs the loop's turns inside."""
        # The task processes' fork server first: forked from this process while it has one thread, and before the
        # lock is taken, so that neither it nor a task process forked from it holds the lock's file or connection
        # (a task process that outlives a killed server would otherwise keep its successor from leading).
        self.supervisor = LocalSupervisor(self.db, self.settings.owner_id, self.settings.child, self.settings.slots,
                                          self.run_settings("", 0, None).log_dir)
        self.pool = LocalPool(self.db, self.supervisor)
        lock = try_hold(self.db, LEADER_LOCK)
        if lock is None:
            raise RefusedByPolicyError(self._active_message())
        self.lock = lock
        try:
            with acting_as(SERVER_ACTOR):
                self._register()
                self.beat = Beat(self)
                self.beat.start()
                if self.alerts is not None:
                    self.alerts.start()
                try:
                    yield
                finally:
                    self.beat.stop()
                    if self.alerts is not None:
                        self.alerts.stop(last_pass=False)
                    if self.listener is not None:
                        self.listener.close()
                    with contextlib.suppress(EtlCraftError):
                        call(self.db, "stop_overseer", overseer_id=self.overseer_id, reason=self.stop_reason)
                    self.log(f"overseer {self.overseer_id} {self.stop_reason}")
        finally:
            self.supervisor.close()
            self.lock.release()

    def _register(self) -> None:
        registered = call(self.db, "register_overseer", owner_id=self.settings.owner_id, host=host(),
                          pid=os.getpid(), version=__version__)[0]
        self.overseer_id = int(registered.overseer_id)
        if registered.closed:
            self.log(f"closed the record of {registered.closed} server(s) that ended without stopping")
        self.log(f"leading as overseer {self.overseer_id} (owner {self.settings.owner_id}, {self.settings.slots} "
                 f"slots, lease {self.settings.lease_seconds} s)")
        self.listener = Listener(self.db) if self.db.is_postgres else None
        self.scheduler = Scheduler(self.db, self.db.clock.now(), self.settings.timezone, self.settings.run_settings,
                                   lambda message: self.log(message), owner_id=self.settings.owner_id,
                                   lease_seconds=self.settings.lease_seconds)

    def _signals(self) -> contextlib.AbstractContextManager[None]:
        """A stop signal starts the shutdown (a second one cuts the grace short) and wakes the loop."""
        def handler(signum: int, _frame: FrameType | None) -> None:
            self.stopping += 1
            self.wake()

        return stop_signals(handler)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    # -- the loop ------------------------------------------------------------------------------------------------

    def turn(self, most_seconds: float | None = None) -> int | None:
        """One turn of the loop, then a wait for something to do (at most `most_seconds`); the exit code once the
        server has stopped, else None."""
        now = time.monotonic()
        if self.beat.lost:
            self.log(f"stopping at once: {self.beat.lost}; the runs it owned go to the next server once their leases "
                     "expire")
            self._stop_all(f"the server lost its leadership ({self.beat.lost})")
            return 4
        if self.stopping:
            if self.grace_until is None:
                self.grace_until = now + self.settings.shutdown_grace_seconds
                self.log(f"stopping: no run is started or dispatched any more; {len(self.supervisor.children)} "
                         f"running task(s) get up to {self.settings.shutdown_grace_seconds:g} s to end")
            if not self.supervisor.children or now >= self.grace_until or self.stopping > 1:
                self._stop_all("the etl-craft server supervising it was stopped")
                return 0
        try:
            if self.outage is not None:
                for driver in self.drivers.values():
                    driver.release_orphans(self.pool)
                self.outage = None
            if not self.stopping:
                self._work(now)
            self._wait(most_seconds)
        except EngineUnreachableError as exc:
            if self.outage is None:
                self.outage = now
                self.log(f"the Engine DB is unreachable ({exc}); trying again")
            time.sleep(min(2.0, self.settings.heartbeat_seconds))
        return None

    def _work(self, now: float) -> None:
        """Reconcile and check SLAs (each heartbeat), create due runs, admit, take over, drive."""
        self._lost_runs(self.beat)
        if now - self.last_reconcile >= self.settings.heartbeat_seconds:
            self.reconcile()
            self._reap_workers()
            self._check_slas()
            self._raise_overdue_alerts()
            self.last_reconcile = now
        if self.scheduler.due(self.db.clock.now()) or now - self.last_schedules >= SCHEDULE_REFRESH_SECONDS:
            for run in self.scheduler.tick(self.db.clock.now()):
                if run.status == "IN-PROGRESS":  # admitted to this server as it was created (no gate to judge)
                    self.log(f"admitted run {run.run_id} as it was created", run=run.run_id,
                             pipeline=run.pipeline_code)
                    self._drive(run.run_id, run.pipeline_code, run.slots, admitted=True)
            self.last_schedules = now
        self._admit()
        self._adopt()
        self._step_drivers()

    def idle(self) -> bool:
        """Nothing runs or waits to run here, and no run is queued or in progress in the Engine DB."""
        if self.drivers or self.supervisor.children:
            return False
        with self.db.read() as conn:
            depth = fetch_one(self.db, conn, "server_queue_depth") or {}
        return not depth.get("queued_runs") and not depth.get("active_runs")

    def _reap_workers(self) -> None:
        """Workers that stopped heartbeating (three intervals) are recorded GONE and their attempts LOST (the retry
        rule queues them again for the pool's other workers): reap_workers, PostgreSQL only (workers need it)."""
        if not self.db.is_postgres:
            return
        for row in call(self.db, "reap_workers"):
            self.log(f"worker {row.worker_id} ({row.owner_id}) stopped heartbeating: it is GONE and "
                     f"{row.lost_attempts} attempt(s) it held were recorded LOST", worker=row.worker_id)

    def _check_slas(self) -> None:
        """Runs still running past their pipeline's SLA are recorded BREACHED now (breach_slas), each logged once."""
        for row in call(self.db, "breach_slas"):
            if row.pipeline_run_id not in self.breached:
                self.breached.add(row.pipeline_run_id)
                self.log(f"run {row.pipeline_run_id} of {row.pipeline_code} breached its SLA: still running "
                         f"{row.sla_minutes} minutes after it started", run=row.pipeline_run_id,
                         pipeline=row.pipeline_code)

    def _raise_overdue_alerts(self) -> None:
        """Gate waits past their rule's threshold raise GATE_WAITING (raise_overdue_alerts); then the alert sender
        is woken to deliver what this heartbeat's decisions raised (RUN_FAILED, SLA_BREACHED, ATTEMPT_LOST, ...)."""
        for row in call(self.db, "raise_overdue_alerts"):
            self.log(f"alert {row.alert_id}: a gate of run {row.pipeline_run_id} waits past its alert threshold",
                     run=row.pipeline_run_id)
        if self.alerts is not None:
            self.alerts.poke()

    def _step_drivers(self) -> None:
        now = time.monotonic()
        # In claim order: each driver claims only its own run's attempts (claim_attempt with run_id), so which run
        # takes the free local slots first is decided here, as claim_attempt orders its queue: priority, then age.
        due = sorted(((run_id, driver) for run_id, driver in self.drivers.items() if driver.wake_at <= now),
                     key=lambda item: self._claim_key(item[0]))
        if not due:
            return
        states = read_states(self.db, self.settings.owner_id, [run_id for run_id, _ in due])  # one read
        for run_id, driver in due:
            try:
                if driver.step(self.pool, state=states.get(run_id)):
                    continue
                driver.finish()
            except EngineUnreachableError:
                raise  # the server's outage handling: every run waits for the Engine DB
            except EtlCraftError as exc:
                # One run's refusal (finalize_run refusing, a fault) must not stop the server and the other runs:
                # recorded in the log, and tried again after a heartbeat, its task processes left running.
                driver.wake_at = now + self.settings.heartbeat_seconds
                self.log(f"run {run_id}: {exc}; trying again in {self.settings.heartbeat_seconds:g} s", run=run_id,
                         pipeline=driver.settings.pipeline_code, error=type(exc).__name__)
                continue
            del self.drivers[run_id]
            self.claim_order.pop(run_id, None)
            self.log(driver.outcome.message, run=run_id, pipeline=driver.settings.pipeline_code,
                     status=driver.outcome.status)
            self.left[run_id] = now + self.settings.heartbeat_seconds  # a run left IN-PROGRESS (paused, lease lost)
            # is not taken again at once

    def _claim_key(self, run_id: int) -> tuple[int, int]:
        return self.claim_order.get(run_id, (0, run_id))

    def _feed_starved(self) -> None:
        """Runs whose attempts wait for a slot are woken as slots free, one per free slot, in claim order (the
        highest PRIORITY first, then the oldest run): no run polls for a slot, none waits behind runs of the same
        priority that came later, and a high-priority run does not wait behind a low-priority run's queue."""
        free = self.supervisor.free
        starved = sorted((d for d in self.drivers.values() if d.starved), key=lambda d: self._claim_key(d.run_id))
        for driver in starved[:max(free, 0)]:
            driver.starved = False
            driver.wake_at = 0.0

    def _wait(self, most_seconds: float | None = None) -> None:
        self._feed_starved()
        now = time.monotonic()
        wakes = [d.wake_at for d in self.drivers.values()] + [now + IDLE_SECONDS]
        if most_seconds is not None:
            wakes.append(now + most_seconds)
        due = self.scheduler.next_tick()
        if due is not None and not self.stopping:
            wakes.append(now + (due - self.db.clock.now()).total_seconds())
        timeout = max(0.0, min(wakes) - now)
        wake = [self._wake_r]
        listening = self.listener.fileno() if self.listener is not None else None
        if listening is not None:
            wake.append(listening)
        for ended in self.supervisor.wait(timeout, wake=wake):
            fault_point("child_reaped")
            self._route(ended)
        self._feed_starved()
        if self.listener is not None and self.listener.drain():
            for driver in self.drivers.values():  # an attempt of a QUEUE pool ended (or a run changed elsewhere)
                if driver.queue_waiting:
                    driver.wake_at = 0.0
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_r, 512):
                pass

    def _route(self, ended: Ended) -> None:
        self.pool.forget(ended.attempt_id)
        for driver in self.drivers.values():
            if ended.attempt_id in driver.children:
                driver.ended(ended)
                return

    def _lost_runs(self, beat: Beat) -> None:
        """A run the last heartbeat did not renew is no longer this server's (taken over, released, ended by an
        operator): its driver stops what it runs there and lets it go."""
        renewed = beat.renewed
        if renewed is None:
            return
        for run_id, driver in self.drivers.items():
            if run_id not in renewed and driver.children:
                with self.db.read() as conn:
                    row = fetch_one(self.db, conn, "run_header", run_id=run_id)
                if row is None or row["owner_id"] != self.settings.owner_id:
                    driver.lost = f"run {run_id} is no longer owned by this server"

    # -- admitting and taking over -------------------------------------------------------------------------------

    def _admit(self) -> None:
        now = time.monotonic()
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "admissible_runs")
        for row in rows:
            run_id = int(row["pipeline_run_id"])
            if self.admit_after.get(run_id, 0.0) > now:
                continue
            try:
                # Not durable: a run a database crash leaves QUEUED is admitted again. A gate that is not met and
                # does not wait ends the run SKIPPED (skip_unmet).
                admitted = call(self.db, "admit_run", run_id=run_id, owner_id=self.settings.owner_id,
                                lease_seconds=self.settings.lease_seconds,
                                gate_wait_seconds=self.settings.gate_wait_seconds, skip_unmet=True, durable=False)[0]
            except StaleTransitionError:
                continue  # admitted or ended by another caller meanwhile (run --init-only admits its own run)
            except RefusedByPolicyError as exc:
                self.admit_after[run_id] = now + self.settings.heartbeat_seconds
                self.log(f"run {run_id} ({row['run_key']}) not admitted: {exc}", run=run_id,
                         pipeline=row["pipeline_code"])
                continue
            if admitted.status == "IN-PROGRESS":
                self.admit_after.pop(run_id, None)
                self.log(f"admitted run {run_id} ({row['run_key']})", run=run_id, pipeline=row["pipeline_code"])
                self._drive(run_id, str(row["pipeline_code"]), row.get("max_parallel_tasks"), admitted=True)
            elif admitted.next_check_at is not None:
                left = (as_utc(admitted.next_check_at) - self.db.clock.now()).total_seconds()
                self.admit_after[run_id] = now + max(left, 0.25)
                self.log(f"run {run_id} ({row['run_key']}) waits: {admitted.reason}", run=run_id,
                         pipeline=row["pipeline_code"])
            else:
                self.log(f"run {run_id} ({row['run_key']}) SKIPPED: {admitted.reason}", run=run_id,
                         pipeline=row["pipeline_code"])

    def _adopt(self) -> None:
        """Take over IN-PROGRESS runs nobody supervises."""
        now = time.monotonic()
        clock = self.db.clock.now()
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "unowned_runs",
                             now=clock if self.db.is_postgres else format_timestamp(clock))
        for row in rows:
            run_id = int(row["pipeline_run_id"])
            if run_id in self.drivers or self.left.get(run_id, 0.0) > now:
                continue
            try:
                call(self.db, "start_run", run_id=run_id, owner_id=self.settings.owner_id,
                     lease_seconds=self.settings.lease_seconds)
            except (StaleTransitionError, RefusedByPolicyError):
                continue  # taken, or ended, meanwhile
            before = row["owner_id"]
            self.log(f"took over run {run_id} ({row['run_key']})" + (f" from {before}" if before else ""),
                     run=run_id, pipeline=row["pipeline_code"])
            self._drive(run_id, str(row["pipeline_code"]), row.get("max_parallel_tasks"))

    def _drive(self, run_id: int, pipeline_code: str, slots: int | None, admitted: bool = False) -> None:
        """Drive run `run_id` from now on; a run it has just admitted has no attempt yet, so none can be lost."""
        settings = self.run_settings(pipeline_code, run_id, slots)

        def on_event(message: str) -> None:
            self.log(message, run=run_id, pipeline=pipeline_code)

        driver = RunDriver(self.db, run_id, settings, self.policies(run_id), on_event, self.reconcile)
        with self.db.read() as conn:
            row = fetch_one(self.db, conn, "run_priority", run_id=run_id)
        self.claim_order[run_id] = (-int(row["priority"]) if row else 0, run_id)
        if not admitted:
            driver.requeue_lost()
        self.drivers[run_id] = driver

    def _stop_all(self, reason: str) -> None:
        """Stop every task process (attempts recorded interrupted, queued again) and release every run."""
        for driver in self.drivers.values():
            with contextlib.suppress(EtlCraftError):
                driver.stop(self.pool, reason)
        for ended in self.supervisor.stop_all(reason):  # any child no driver knew of
            self._route(ended)
        self.drivers.clear()
        self.claim_order.clear()


def _when(value: Any) -> str:
    if value is None:
        return "-"
    return as_utc(value).strftime("%Y-%m-%d %H:%M:%S UTC")

