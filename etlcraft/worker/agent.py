"""The worker's loop: one thread, waiting on its task processes, the LISTEN socket and a wake pipe at once.

Each turn: heartbeat when due (heartbeat_worker renews every lease the worker holds in one call and names the
attempts whose cancellation was requested, which are acknowledged with cancel_attempt and stopped; reap_workers
declares gone the workers that stopped heartbeating), claim for the free slots of each kind in one batch per kind
(claim_attempt), start each claimed attempt's task process, then wait. No thread is started: the fork server that
task processes come from is forked while the process has one thread (etlcraft.supervisor.forkserver).

SIGTERM or SIGINT drains: drain_worker, no claim any more, up to drain_seconds for the running attempts to end,
then each remaining one is recorded FAILED "worker drained" (finish_attempt) before its process group is stopped,
and stop_worker. A second signal ends the drain at once. A worker declared GONE (heartbeat_worker raises EC020:
its attempts were recorded LOST and may run elsewhere already) kills its task processes at once, records nothing
and exits with an error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_for
from pathlib import Path
from types import FrameType
from typing import Any

from etlcraft import __version__
from etlcraft.core import parameters
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.errors import EngineUnreachableError, EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all
from etlcraft.paths import task_log_dir
from etlcraft.supervisor.child import ChildRequest
from etlcraft.supervisor.local import Child, LocalSupervisor
from etlcraft.worker.listen import QueueListener

KINDS = ("ingestion", "warehouse")
#: How often the worker claims although nothing woke it (a retry due later, a notification lost).
POLL_SECONDS = 1.0
#: How long drained task processes get between SIGTERM and SIGKILL.
STOP_GRACE_SECONDS = 10.0


class WorkerGoneError(StaleTransitionError):
    """The Engine DB declared this worker GONE: its attempts were recorded LOST, so it must stop at once."""


@dataclass(frozen=True)
class WorkerSettings:
    pool: str
    name: str
    owner_id: str
    slots: dict[str, int]  # per slot kind
    heartbeat_seconds: int
    lease_seconds: int
    drain_seconds: float
    project_dir: Path
    engine_identity: str  # ENG_SETTINGS ENGINE_ID: task logs go under it
    child: ChildRequest  # the task process template (attempt_id and log_path filled per attempt)
    actor: Actor  # the worker itself, as it records its calls

    @property
    def total_slots(self) -> int:
        return sum(self.slots.values())


class Worker:
    def __init__(self, db: EngineDB, settings: WorkerSettings, log: Callable[[str], None]) -> None:
        self.db, self.settings, self.log = db, settings, log
        self.kinds: dict[int, str] = {}  # attempt id -> slot kind, for every running task process
        self.worker_id = 0
        self.stopping = 0
        self.drain_until: float | None = None
        self.next_beat = self.next_poll = 0.0
        self.want_claim = True
        self.outage: float | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    # -- life ----------------------------------------------------------------------------------------------------

    def serve(self, started_by: Actor) -> int:
        """Register, serve the pool until drained; the exit code (0). WorkerGoneError when declared GONE."""
        s = self.settings
        # The fork server first, while this process has one thread (and before the LISTEN connection exists).
        self.supervisor = LocalSupervisor(self.db, s.owner_id, s.child, s.total_slots,
                                          task_log_dir(s.project_dir, s.engine_identity, "", 0))
        with acting_as(started_by):
            row = call(self.db, "register_worker", owner_id=s.owner_id, worker_name=s.name, pool=s.pool, host=host(),
                       pid=os.getpid(), version=__version__, ingestion_slots=s.slots["ingestion"],
                       warehouse_slots=s.slots["warehouse"], heartbeat_seconds=s.heartbeat_seconds)[0]
        self.worker_id = int(row.worker_id)
        self.log(f"worker {self.worker_id} ({s.name}) serves pool {s.pool} with {s.slots['ingestion']} ingestion and "
                 f"{s.slots['warehouse']} warehouse slot(s), heartbeat {s.heartbeat_seconds} s, lease "
                 f"{s.lease_seconds} s (owner {s.owner_id})")
        self.listener = QueueListener(self.db, s.pool)
        try:
            with acting_as(s.actor), self._signals():
                while (code := self.turn()) is None:
                    pass
                return code
        finally:
            self.supervisor.close()
            self.listener.close()

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        """SIGTERM and SIGINT start the drain (a second one ends it at once) and wake the loop."""
        def handler(_signum: int, _frame: FrameType | None) -> None:
            self.stopping += 1
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(self._wake_w, b"x")

        previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)

    def turn(self) -> int | None:
        """One turn of the loop, then a wait; the exit code once the worker has stopped, else None."""
        now = time.monotonic()
        if self.stopping:
            if self.drain_until is None:
                self._drain(now)
            if not self.supervisor.children:
                return self._stop("drained: every attempt it ran has ended")
            assert self.drain_until is not None
            if now >= self.drain_until or self.stopping > 1:
                why = "a second signal" if self.stopping > 1 else f"its {self.settings.drain_seconds:g} s drain"
                self._stop_remaining(f"worker drained: worker {self.settings.name} was stopped and {why} ended "
                                     "before this attempt did")
                return self._stop(f"drained; {why} ended before every attempt did")
        try:
            if now >= self.next_beat:
                self._beat()
                self.next_beat = now + self.settings.heartbeat_seconds
            if not self.stopping and (self.want_claim or now >= self.next_poll):
                self._claim()
                self.next_poll = now + POLL_SECONDS
            if self.outage is not None:
                self.log("the Engine DB answers again")
                self.outage = None
            self._wait()
        except WorkerGoneError:
            self._kill_all()
            raise
        except EngineUnreachableError as exc:
            self._unreachable(now, exc)
        return None

    def _unreachable(self, now: float, exc: EngineUnreachableError) -> None:
        """B27: an outage shorter than the lease changes nothing; the task processes go on and record their ends
        once the Engine DB is back (they ride it out themselves)."""
        if self.outage is None:
            self.outage = now
            self.log(f"the Engine DB is unreachable ({exc}); trying again every heartbeat")
        self.next_beat = now + min(2.0, self.settings.heartbeat_seconds)
        self._wait()

    # -- heartbeat, cancellation, reaping ------------------------------------------------------------------------

    def _beat(self) -> None:
        s = self.settings
        try:
            rows = call(self.db, "heartbeat_worker", worker_id=self.worker_id, owner_id=s.owner_id,
                        lease_seconds=s.lease_seconds)
        except StaleTransitionError as exc:
            raise WorkerGoneError(
                f"worker {self.worker_id} ({s.name}) was declared GONE by the Engine DB ({exc}); its attempts were "
                f"recorded LOST and may already run elsewhere, so its {len(self.supervisor.children)} task "
                "process(es) were killed at once and nothing was recorded; start the worker again (it registers "
                "anew)") from exc
        for row in rows:
            if row.cancel_requested and row.attempt_id in self.supervisor.children:
                self._cancel(int(row.attempt_id))
        for gone in call(self.db, "reap_workers"):
            self.log(f"declared worker {gone.worker_id} ({gone.owner_id}) GONE: it stopped heartbeating; "
                     f"{gone.lost_attempts} attempt(s) of it recorded LOST")

    def _cancel(self, attempt_id: int) -> None:
        """Acknowledge the cancellation (the attempt ends CANCELLED with CANCEL_ACKNOWLEDGED_AT), then stop its
        process group; its task process's own late write is stale and changes nothing."""
        child = self.supervisor.children[attempt_id]
        with contextlib.suppress(StaleTransitionError):
            call(self.db, "cancel_attempt", attempt_id=attempt_id, owner_id=self.settings.owner_id,
                 reason=f"cancellation requested; worker {self.settings.name} stopped the task process")
        self.log(f"attempt {attempt_id} ({child.task_code}) cancelled: its task process is stopped")
        _signal(child, signal.SIGTERM)

    # -- claiming and starting -----------------------------------------------------------------------------------

    def free(self, kind: str) -> int:
        return self.settings.slots[kind] - sum(1 for k in self.kinds.values() if k == kind)

    def _claim(self) -> None:
        """One claim_attempt per slot kind with free slots, for as many attempts as it has free slots."""
        self.want_claim = False
        for kind in KINDS:
            free = self.free(kind)
            if free <= 0:
                continue
            claimed = call(self.db, "claim_attempt", pool=self.settings.pool, slot_kinds=kind,
                           owner_id=self.settings.owner_id, lease_seconds=self.settings.lease_seconds,
                           max_attempts=free)
            if claimed:
                fault_point("attempt_claimed")  # claimed, no task process yet: a lost acknowledgement (pool tests)
                self._start([int(r.attempt_id) for r in claimed])
                self.want_claim = self.want_claim or len(claimed) == free  # a full batch: more may wait

    def _start(self, attempt_ids: list[int]) -> None:
        default = float(parameters.BY_NAME["TASK_TIMEOUT_SECONDS"].default or 0)
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "worker_claimed_tasks", attempt_ids=attempt_ids)
        s = self.settings
        for row in rows:
            attempt_id = int(row["attempt_id"])
            timeout = float(row["timeout_seconds"] or default) or None
            folder = task_log_dir(s.project_dir, s.engine_identity, str(row["pipeline_code"]),
                                  int(row["pipeline_run_id"]))
            try:
                self.supervisor.start(attempt_id, str(row["task_code"]), timeout, folder)
            except EtlCraftError as exc:  # recorded FAILED by the supervisor (B2)
                self.log(str(exc))
                continue
            self.kinds[attempt_id] = str(row["slot_kind"])

    # -- waiting -------------------------------------------------------------------------------------------------

    def _wait(self) -> None:
        now = time.monotonic()
        until = [self.next_beat] + ([] if self.stopping else [self.next_poll])
        if self.drain_until is not None:
            until.append(self.drain_until)
        timeout = 0.0 if self.want_claim and not self.stopping else max(0.0, min(until) - now)
        wake = [self._wake_r]
        listening = self.listener.fileno()
        if listening is not None:
            wake.append(listening)
        for ended in self.supervisor.wait(timeout, wake=wake):
            self.kinds.pop(ended.attempt_id, None)
            self.want_claim = True
            self.log(f"attempt {ended.attempt_id} ({ended.task_code}) ended {ended.status}")
        if self.listener.drain():
            self.want_claim = True
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._wake_r, 512):
                pass

    # -- stopping ------------------------------------------------------------------------------------------------

    def _drain(self, now: float) -> None:
        self.drain_until = now + self.settings.drain_seconds
        with contextlib.suppress(EtlCraftError):
            call(self.db, "drain_worker", worker_id=self.worker_id, owner_id=self.settings.owner_id,
                 reason="stopped by a signal")
        self.log(f"draining: no attempt is claimed any more; {len(self.supervisor.children)} running attempt(s) get "
                 f"up to {self.settings.drain_seconds:g} s to end")

    def _stop_remaining(self, reason: str) -> None:
        """Record each remaining attempt FAILED with `reason` (the first writer wins: one that ended meanwhile keeps
        its outcome), then stop its process group: SIGTERM, SIGKILL after a grace."""
        children = list(self.supervisor.children.values())
        for child in children:
            with contextlib.suppress(StaleTransitionError):
                call(self.db, "finish_attempt", attempt_id=child.attempt_id, owner_id=self.settings.owner_id,
                     status="FAILED", error_message=reason, log_path=str(child.log_path))
            _signal(child, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while self.supervisor.children and time.monotonic() < deadline:
            for ended in self.supervisor.wait(0.2):
                self.kinds.pop(ended.attempt_id, None)
        for child in list(self.supervisor.children.values()):
            _signal(child, signal.SIGKILL)
        while self.supervisor.children:
            self.supervisor.wait(0.2)

    def _stop(self, reason: str) -> int:
        row: Any = None
        with contextlib.suppress(EtlCraftError):
            row = call(self.db, "stop_worker", worker_id=self.worker_id, owner_id=self.settings.owner_id,
                       reason=reason)[0]
        lost = f"; {row.lost_attempts} attempt(s) recorded LOST" if row is not None and row.lost_attempts else ""
        self.log(f"worker {self.worker_id} stopped: {reason}{lost}")
        return 0

    def _kill_all(self) -> None:
        """Declared GONE: every task process group is killed at once and nothing is recorded."""
        children = list(self.supervisor.children.values())
        for child in children:
            _signal(child, signal.SIGKILL)
        wait_for([c.process.sentinel for c in children], timeout=5)
        self.supervisor.children.clear()
        self.kinds.clear()


def _signal(child: Child, signum: int) -> None:
    """Signal the task process's group (the process itself while it has not made its group yet); the supervisor
    sends SIGKILL once STOP_GRACE_SECONDS have passed since the first signal."""
    if child.stop_sent is None:
        child.stop_sent = time.monotonic()
    pid = child.process.pid
    if not pid:
        return
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
