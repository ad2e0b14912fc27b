"""`etl-craft run --pipeline-code P`: an overseer for one run, in the foreground.

It owns the run with a lease that a heartbeat renews and drives it with a RunDriver (etlcraft.overseer.driver), the
same code the server drives every active run with: what can run now (ready_tasks) is queued, claimed and started
at once within the pipeline's slots, what can never run is skipped, and every ended task process makes its
successors ready immediately (no polling sleep on that path). When nothing is left to run the run is finalized by
the database. Every status change is a call to the Engine DB's functions.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import sqlalchemy as sa

from etlcraft.alerts.outbox import AlertSender
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import EngineUnreachableError, EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.overseer.driver import RunDriver, RunOutcome, RunSettings, TaskPolicy
from etlcraft.supervisor.local import LocalSupervisor
from etlcraft.supervisor.pools import LocalPool

SYSTEM_KIND = ActorKind.SYSTEM


class Interrupted(Exception):
    """SIGTERM, SIGHUP or SIGINT reached the overseer: its attempts are interrupted, not failed (interrupt_attempt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.run_id: int | None = None  # the run that was left IN-PROGRESS, once a run loop has released it


@contextlib.contextmanager
def stop_signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """Handle SIGTERM, SIGHUP and SIGINT (Ctrl-C), the signals that stop an overseer, with `handler` for the code
    inside; the previous handlers come back after it."""
    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def signals_as_interrupts() -> contextlib.AbstractContextManager[None]:
    """Turn the stop signals into Interrupted for the code inside (B3: every run path stops its children, and
    records their attempts interrupted, not failed)."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signum)

    return stop_signals(handler)


class Heartbeat(threading.Thread):
    """Renews the run's lease and its attempts' leases every `interval` seconds, on its own connection."""

    def __init__(self, db: EngineDB, owner_id: str, run_id: int, lease_seconds: int, interval: float,
                 actor: Actor) -> None:
        super().__init__(name="etl-craft heartbeat", daemon=True)
        self.db, self.owner_id, self.run_id = db, owner_id, run_id
        self.lease_seconds, self.interval, self.actor = lease_seconds, interval, actor
        self.stopping = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        with acting_as(self.actor):
            while not self.stopping.wait(self.interval):
                try:
                    call(self.db, "renew_lease", owner_id=self.owner_id, lease_seconds=self.lease_seconds,
                         run_id=self.run_id)
                    call(self.db, "renew_lease", owner_id=self.owner_id, lease_seconds=self.lease_seconds)
                except StaleTransitionError as exc:
                    self.lost = str(exc)
                    return
                except EtlCraftError:
                    continue  # the Engine DB is briefly unreachable: the next beat tries again

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.interval + 5)


class Listener:
    """PostgreSQL: LISTEN etl_craft_events on a connection of its own, so that a run created, released, reopened or
    cancelled elsewhere, a pipeline resumed, or an attempt of a QUEUE pool ended by a worker wakes the loop at once
    (the functions NOTIFY when they commit). Nothing depends on a notification arriving: the loop also looks on a
    timer (the server every IDLE_SECONDS, a run waiting on workers every heartbeat). A broken connection is opened
    again at the next look."""

    CHANNEL = "etl_craft_events"

    def __init__(self, db: EngineDB) -> None:
        self.db = db
        self._conn: sa.Connection | None = None

    def _driver(self) -> Any:
        assert self._conn is not None
        return self._conn.connection.driver_connection

    def fileno(self) -> int | None:
        """The socket to wait on, the connection opened (and LISTEN sent) when there is none; None while the
        Engine DB cannot be reached."""
        if self._conn is None:
            try:
                self._conn = self.db.new_connection()
                driver = self._driver()
                driver.autocommit = True
                driver.execute(f"LISTEN {self.CHANNEL}")
            except Exception:  # a server that cannot listen still works on its timer
                self.close()
                return None
        return int(self._driver().fileno())

    def drain(self) -> int:
        """Read the notifications that arrived; how many."""
        if self._conn is None:
            return 0
        try:
            return sum(1 for _ in self._driver().notifies(timeout=0))
        except Exception:  # the connection broke: opened again at the next look
            self.close()
            return 0

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.invalidate()
                self._conn.close()
            self._conn = None


class RunLoop:
    """Drives one owned IN-PROGRESS run to its end in the foreground (a RunDriver with a supervisor of its own and a
    heartbeat); with a scope, only the tasks in it (a task command)."""

    def __init__(self, db: EngineDB, run_id: int, settings: RunSettings, actor: Actor,
                 policies: Callable[[int], TaskPolicy], on_event: Callable[[str], None],
                 reconcile: Callable[[], object], scope: frozenset[int] | None = None,
                 alerts: AlertSender | None = None) -> None:
        self.db, self.run_id, self.settings, self.actor = db, run_id, settings, actor
        self.alerts = alerts  # delivers alerts on its own thread while the run runs, and once more at its end
        self.on_event = on_event
        self.driver = RunDriver(db, run_id, settings, policies, on_event, reconcile, scope)
        try:
            self.supervisor = LocalSupervisor(db, settings.owner_id, settings.child, settings.slots,
                                              settings.log_dir)
        except EtlCraftError:
            self.driver.release()  # nothing was claimed: the next etl-craft run resumes the run at once
            raise
        self.pool = LocalPool(db, self.supervisor)
        self.listener: Listener | None = None  # opened once the run waits for workers (PostgreSQL)

    @property
    def task_codes(self) -> dict[int, str]:
        return self.driver.task_codes

    @property
    def outcome(self) -> RunOutcome:
        return self.driver.outcome

    def run(self) -> RunOutcome:
        heartbeat = Heartbeat(self.db, self.settings.owner_id, self.run_id, self.settings.lease_seconds,
                              self.settings.heartbeat_seconds, Actor(self.actor.name, SYSTEM_KIND))
        heartbeat.start()
        if self.alerts is not None:
            self.alerts.start()
        interrupted = False
        self.driver.requeue_lost()
        try:
            with signals_as_interrupts():
                try:
                    self._loop(heartbeat)
                except Interrupted as exc:
                    interrupted = True
                    reason = f"the etl-craft run supervising it received {exc}"
                    self.driver.stop(self.pool, reason)
                    self.outcome.message = f"{reason}; run {self.run_id} is left IN-PROGRESS to resume"
                    exc.run_id = self.run_id
                    raise
        finally:
            heartbeat.stop()
            self.supervisor.close()
            if self.listener is not None:
                self.listener.close()
            if self.alerts is not None:
                # the run's own alerts (RUN_FAILED, ...) were raised as it was finalized: one last pass sends them
                self.alerts.stop(last_pass=not interrupted)
        return self.outcome

    def _loop(self, heartbeat: Heartbeat) -> None:
        outage: float | None = None  # when the Engine DB became unreachable, while it stays so
        while True:
            try:
                if outage is not None:
                    self.driver.release_orphans(self.pool)
                    outage = None
                if not self._step(heartbeat):
                    break
            except EngineUnreachableError as exc:
                # B27: an outage shorter than the lease does not end the run. Every step re-reads what it needs,
                # so the loop takes up where it was once the Engine DB answers again.
                now = time.monotonic()
                if outage is None:
                    outage = now
                    self.on_event(f"the Engine DB is unreachable ({exc}); trying again for up to "
                                  f"{self.settings.lease_seconds} s, the lease")
                if now - outage >= self.settings.lease_seconds:
                    raise
                time.sleep(min(2.0, self.settings.heartbeat_seconds))
        self.driver.finish()

    def _step(self, heartbeat: Heartbeat) -> bool:
        """One turn of the run, then a wait for its task processes or its next due time; False once it is done."""
        if heartbeat.lost:
            self.driver.lost = heartbeat.lost
        if not self.driver.step(self.pool):
            return False
        wait = min(self.driver.wake_at - time.monotonic(), self.settings.heartbeat_seconds)
        wake: list[int] = []
        if self.driver.queue_waiting and self.db.is_postgres:
            # Workers run some of its attempts: their end is notified (etl_craft_events), the heartbeat the fallback.
            if self.listener is None:
                self.listener = Listener(self.db)
            listening = self.listener.fileno()
            if listening is not None:
                wake.append(listening)
        for ended in self.supervisor.wait(timeout=max(0.0, wait), wake=wake):
            fault_point("child_reaped")
            self.pool.forget(ended.attempt_id)
            self.driver.ended(ended)
        if self.listener is not None and self.listener.drain():
            self.driver.wake_at = 0.0
        return True
