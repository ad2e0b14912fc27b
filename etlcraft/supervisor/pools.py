"""Pools: where an attempt runs (seed S5.A to S5.C). The overseer talks to pools only through the Pool interface.

Two providers, chosen by the attempt's pool (CFG_POOLS.PROVIDER; a pool without an active CFG_POOLS row is LOCAL):

- LocalPool runs attempts as task processes of this process (etlcraft.supervisor.local.LocalSupervisor): the
  process that supervises the run (`etl-craft run`, `etl-craft server`) claims each attempt for its owner id and
  starts it. It is the only local execution path, and the only provider on SQLite.
- QueuePool (PostgreSQL only) leaves the attempt QUEUED in the Engine DB for `etl-craft worker` processes of the
  pool, which claim it with claim_attempt: submitting starts nothing here, the run waits for the outcome.

Every status change is a call to an Engine DB function; the providers read the attempt to answer status().
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from etlcraft.core.enums import AttemptStatus
from etlcraft.core.errors import ConfigurationError, EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.supervisor.local import LocalSupervisor

#: The slot kinds of the Engine DB: "ingestion" for PYTHON tasks, "warehouse" for everything else.
SLOT_KINDS = ("ingestion", "warehouse")
LOCAL = "LOCAL"
QUEUE = "QUEUE"
PROVIDERS = (LOCAL, QUEUE)
#: What status() says of a handle it does not know (never an exception).
UNKNOWN = "UNKNOWN"
LIVE = (AttemptStatus.QUEUED, AttemptStatus.CLAIMED, AttemptStatus.RUNNING)


@dataclass(frozen=True)
class AttemptSpec:
    """What a pool needs to run one attempt (seed S5.A; etl-craft keeps no per-run configuration checksum, and the
    bundle the attempt runs from is optional until pinned bundles are used)."""

    attempt_id: int
    task_run_id: int
    pipeline_run_id: int
    project_code: str
    pipeline_code: str
    task_code: str
    handler: str
    pool: str
    slot_kind: str  # "ingestion" for PYTHON, "warehouse" for everything else
    timeout_seconds: float | None  # None: no limit
    lease_seconds: int
    bundle_id: int | None = None


@dataclass(frozen=True)
class Capacity:
    """Slots per kind and how many are free now. `shared`: the kinds draw on one count of slots (the local
    provider's task processes), so a slot used by one kind is gone for the other too."""

    slots: Mapping[str, int]
    free: Mapping[str, int]
    shared: bool = False


@dataclass(frozen=True)
class ExecutionHandle:
    """An attempt as submitted to a pool: which pool and provider took it, and (local) the owner that runs it."""

    pool: str
    provider: str
    attempt_id: int
    owner_id: str | None = None


@dataclass(frozen=True)
class HandleStatus:
    """What a provider knows of a handle: the attempt's status in the Engine DB (UNKNOWN for an attempt it cannot
    find), who owns it, whether the provider can confirm its process is alive (None: it cannot tell), and why."""

    handle: ExecutionHandle
    status: str
    owner_id: str | None = None
    alive: bool | None = None
    message: str = ""


@dataclass(frozen=True)
class Reconciliation:
    """What reconcile() confirmed; `complete` False says that some of the pool's attempts could not be confirmed
    (`message` names them and why)."""

    statuses: list[HandleStatus]
    complete: bool
    message: str = ""


@runtime_checkable
class Pool(Protocol):
    name: str
    provider: str

    def capacity(self) -> Capacity: ...

    def submit(self, spec: AttemptSpec) -> ExecutionHandle: ...  # idempotent per attempt_id

    def status(self, handle: ExecutionHandle) -> HandleStatus: ...  # UNKNOWN for an unknown handle

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None: ...

    def reconcile(self) -> Reconciliation: ...


@dataclass(frozen=True)
class Submitted:
    """One attempt a LocalPool claimed in a batch: its handle once its process started, else the error that recorded
    it FAILED (the retry rule retries it or not)."""

    spec: AttemptSpec
    handle: ExecutionHandle | None
    error: EtlCraftError | None = None


def _attempt(db: EngineDB, attempt_id: int) -> dict[str, Any] | None:
    with db.read() as conn:
        return fetch_one(db, conn, "pool_attempt", attempt_id=attempt_id)


def _status_of(handle: ExecutionHandle, row: dict[str, Any] | None, alive: bool | None, message: str = "") -> \
        HandleStatus:
    if row is None:
        return HandleStatus(handle, UNKNOWN, None, None,
                            message or f"attempt {handle.attempt_id} is not in the Engine DB")
    return HandleStatus(handle, str(row["status"]), row["owner_id"], alive, message)


class LocalPool:
    """Every LOCAL pool, served by this process's task processes: submit claims the attempt for this supervisor's
    owner id (when it is still QUEUED) and starts its process on the supervisor."""

    provider = LOCAL

    def __init__(self, db: EngineDB, supervisor: LocalSupervisor, name: str = "local") -> None:
        self.db, self.supervisor, self.name = db, supervisor, name
        self.owner_id = supervisor.owner_id
        self.handles: dict[int, ExecutionHandle] = {}  # the attempts this pool started, while their process lives

    def capacity(self) -> Capacity:
        slots, free = self.supervisor.slots, max(self.supervisor.free, 0)
        return Capacity({k: slots for k in SLOT_KINDS}, {k: free for k in SLOT_KINDS}, shared=True)

    def _handle(self, spec: AttemptSpec) -> ExecutionHandle:
        return ExecutionHandle(spec.pool, LOCAL, spec.attempt_id, self.owner_id)

    def submit(self, spec: AttemptSpec, log_dir: Path | None = None) -> ExecutionHandle:
        """Run `spec`'s attempt here: started already by this pool, the same handle (nothing new starts); CLAIMED by
        this owner, its process starts; QUEUED, it is claimed first (in queue order: attempts of its run, pool and
        slot kind ahead of it are claimed and started before it, within the free slots). Anything else (another
        owner's, ended) is refused with StaleTransitionError."""
        if spec.attempt_id in self.supervisor.children:
            return self.handles.get(spec.attempt_id) or self._handle(spec)
        row = _attempt(self.db, spec.attempt_id)
        status = str(row["status"]) if row else UNKNOWN
        if row is not None and status == AttemptStatus.CLAIMED and row["owner_id"] == self.owner_id:
            return self._start(spec, log_dir)
        if row is not None and status in (AttemptStatus.CLAIMED, AttemptStatus.RUNNING) \
                and row["owner_id"] == self.owner_id:
            # RUNNING under this owner but not one of its children: its process was started by this owner and
            # recorded RUNNING itself; starting another would run it twice.
            return self._handle(spec)
        if row is not None and status == AttemptStatus.QUEUED:
            return self._claim_until(spec, log_dir)
        found = "not in the Engine DB" if row is None else f"{status} (owner {row['owner_id'] or 'none'})"
        raise StaleTransitionError(
            f"attempt {spec.attempt_id} ({spec.task_code}) cannot be submitted to pool {spec.pool}: it is {found}; "
            f"expected QUEUED, or CLAIMED by {self.owner_id}; queue the task again (etl-craft run) instead")

    def _claim_until(self, spec: AttemptSpec, log_dir: Path | None) -> ExecutionHandle:
        while self.supervisor.free > 0:
            claimed = call(self.db, "claim_attempt", pool=spec.pool, slot_kinds=spec.slot_kind,
                           owner_id=self.owner_id, lease_seconds=spec.lease_seconds, max_attempts=1,
                           run_id=spec.pipeline_run_id, durable=False)
            if not claimed:
                break
            fault_point("attempt_claimed")
            attempt = claimed[0]
            if int(attempt.attempt_id) == spec.attempt_id:
                return self._start(spec, log_dir)
            ahead = self._ahead(attempt, spec)
            with contextlib.suppress(EtlCraftError):  # recorded FAILED by the supervisor: the retry rule decides
                self._start(ahead, log_dir)
        row = _attempt(self.db, spec.attempt_id)
        found = "gone" if row is None else str(row["status"])
        raise EtlCraftError(
            f"attempt {spec.attempt_id} ({spec.task_code}) could not be claimed in pool {spec.pool}: it is {found} "
            f"and {self.supervisor.free} of {self.supervisor.slots} local slots are free; expected a QUEUED attempt "
            "that is due, of an IN-PROGRESS run, and a free slot; submit it again once a task process has ended")

    def _ahead(self, attempt: Any, spec: AttemptSpec) -> AttemptSpec:
        """The spec of an attempt of the same run claimed before `spec`'s (it was ahead of it in the queue)."""
        with self.db.read() as conn:
            row = fetch_one(self.db, conn, "pool_attempt", attempt_id=int(attempt.attempt_id))
        return AttemptSpec(int(attempt.attempt_id), int(attempt.task_run_id), int(attempt.pipeline_run_id),
                           spec.project_code, spec.pipeline_code, str(row["task_code"]) if row else "task",
                           str(row["handler"]) if row else spec.handler, spec.pool, spec.slot_kind, None,
                           spec.lease_seconds, spec.bundle_id)

    def take(self, run_id: int, pool: str, kind: str, most: int, spec_of: Callable[[Any, str, str], AttemptSpec],
             log_dir: Path | None = None) -> list[Submitted]:
        """Claim up to `most` (at most the free slots) QUEUED attempts of run `run_id` in `pool` and `kind` in one
        claim_attempt call, and start each: the batched path a driver takes. `spec_of(claimed_row, pool, kind)`
        makes each attempt's spec from what the driver knows of its run."""
        most = min(most, self.supervisor.free)
        if most <= 0:
            return []
        # Not durable: a claim lost in a server crash is refused at the task process's start_attempt, which runs
        # before the task does anything and whose synchronous commit makes the claim durable too.
        claimed = call(self.db, "claim_attempt", pool=pool, slot_kinds=kind, owner_id=self.owner_id,
                       lease_seconds=self.supervisor.request_base.lease_seconds, run_id=run_id, max_attempts=most,
                       durable=False)
        done: list[Submitted] = []
        for attempt in claimed:
            fault_point("attempt_claimed")
            spec = spec_of(attempt, pool, kind)
            try:
                done.append(Submitted(spec, self._start(spec, log_dir)))
            except EtlCraftError as exc:  # the attempt is recorded FAILED (B2): the retry rule retries it or not
                done.append(Submitted(spec, None, exc))
        return done

    def _start(self, spec: AttemptSpec, log_dir: Path | None) -> ExecutionHandle:
        self.supervisor.start(spec.attempt_id, spec.task_code, spec.timeout_seconds, log_dir)
        handle = self._handle(spec)
        self.handles[spec.attempt_id] = handle
        return handle

    def forget(self, attempt_id: int) -> None:
        """The attempt's process has ended and was reaped: the pool no longer holds it."""
        self.handles.pop(attempt_id, None)

    def status(self, handle: ExecutionHandle) -> HandleStatus:
        try:
            row = _attempt(self.db, handle.attempt_id)
        except EtlCraftError as exc:
            return HandleStatus(handle, UNKNOWN, None, None, f"the Engine DB could not be read: {exc}")
        alive: bool | None = None
        if row is not None and row["owner_id"] == self.owner_id:
            child = self.supervisor.children.get(handle.attempt_id)
            alive = child is not None and child.process.is_alive()
        return _status_of(handle, row, alive)

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None:
        """Cancel the attempt: this owner acknowledges at once (cancel_attempt with its owner id) and stops the
        process group, SIGKILL after `grace_seconds`. An attempt that ended meanwhile keeps its outcome."""
        reason = f"attempt {handle.attempt_id} was cancelled through its pool {handle.pool}"
        owned = handle.attempt_id in self.supervisor.children
        with contextlib.suppress(StaleTransitionError):
            call(self.db, "cancel_attempt", attempt_id=handle.attempt_id, reason=reason,
                 owner_id=self.owner_id if owned else None)
        if owned:
            self.supervisor.stop_all(reason, only={handle.attempt_id}, grace_seconds=grace_seconds)
            self.forget(handle.attempt_id)

    def reconcile(self) -> Reconciliation:
        """Every attempt the Engine DB says this owner holds, with whether its process is alive here: an attempt
        CLAIMED or RUNNING under this owner with no process is confirmed not running (alive False)."""
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "owner_live_attempts", owner_id=self.owner_id)
        statuses = []
        for row in rows:
            child = self.supervisor.children.get(int(row["attempt_id"]))
            handle = ExecutionHandle(str(row["pool"]), LOCAL, int(row["attempt_id"]), self.owner_id)
            alive = child is not None and child.process.is_alive()
            statuses.append(_status_of(handle, row, alive, "" if alive else "no task process of this owner runs it"))
        return Reconciliation(statuses, complete=True)


class QueuePool:
    """A QUEUE pool (PostgreSQL only): its attempts wait QUEUED in the Engine DB for the `etl-craft worker`
    processes of the pool, which claim, run, heartbeat and end them. Nothing starts in this process."""

    provider = QUEUE

    def __init__(self, db: EngineDB, name: str) -> None:
        if not db.is_postgres:
            raise ConfigurationError(
                f"pool {name} has PROVIDER 'QUEUE', which needs a PostgreSQL Engine DB (workers claim from it); "
                f"found a {db.dialect} Engine DB; set the pool's PROVIDER to 'LOCAL' or move the Engine DB to "
                "PostgreSQL")
        self.db, self.name = db, name

    def _handle(self, attempt_id: int) -> ExecutionHandle:
        return ExecutionHandle(self.name, QUEUE, attempt_id)

    def capacity(self) -> Capacity:
        """The slots of the pool's ACTIVE workers per kind, free = slots - attempts they hold of that kind."""
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "queue_pool_capacity", pool=self.name)
        slots = {k: 0 for k in SLOT_KINDS}
        used = {k: 0 for k in SLOT_KINDS}
        for row in rows:
            slots[str(row["slot_kind"])] = int(row["slots"] or 0)
            used[str(row["slot_kind"])] = int(row["in_use"] or 0)
        return Capacity(slots, {k: max(slots[k] - used[k], 0) for k in SLOT_KINDS})

    def submit(self, spec: AttemptSpec) -> ExecutionHandle:
        """The attempt stays where it is (QUEUED for a worker, or already claimed by one): the handle. Refused when
        the attempt is not in this pool."""
        row = _attempt(self.db, spec.attempt_id)
        if row is None or row["pool"] != self.name:
            found = "not in the Engine DB" if row is None else f"in pool {row['pool']}"
            raise StaleTransitionError(
                f"attempt {spec.attempt_id} ({spec.task_code}) cannot be submitted to QUEUE pool {self.name}: it is "
                f"{found}; expected an attempt queued in pool {self.name}; submit it to its own pool")
        return self._handle(spec.attempt_id)

    def status(self, handle: ExecutionHandle) -> HandleStatus:
        try:
            with self.db.read() as conn:
                row = fetch_one(self.db, conn, "queue_pool_attempt", attempt_id=handle.attempt_id)
        except EtlCraftError as exc:
            return HandleStatus(handle, UNKNOWN, None, None, f"the Engine DB could not be read: {exc}")
        if row is None or row["pool"] != self.name:
            return _status_of(handle, None, None, f"attempt {handle.attempt_id} is not in pool {self.name}")
        # Whether the worker holding it (an ended attempt keeps its last owner) is ACTIVE; None: no worker holds it.
        alive = None if row["worker_status"] is None else bool(row["worker_active"])
        return _status_of(handle, row, alive)

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None:
        """Request the attempt's cancellation (cancel_attempt without owner): a QUEUED one ends CANCELLED at once; a
        CLAIMED or RUNNING one is stopped by its worker, which acknowledges within a heartbeat (`grace_seconds` is
        the worker's to apply). An attempt that ended meanwhile keeps its outcome."""
        with contextlib.suppress(StaleTransitionError):
            call(self.db, "cancel_attempt", attempt_id=handle.attempt_id,
                 reason=f"attempt {handle.attempt_id} was cancelled through its pool {self.name}", owner_id=None)

    def reconcile(self) -> Reconciliation:
        """The pool's live attempts, each with the state of the worker that holds it. An attempt held by an owner
        that is no ACTIVE worker of the pool cannot be confirmed (complete False, named in the message)."""
        with self.db.read() as conn:
            rows = fetch_all(self.db, conn, "queue_pool_live_attempts", pool=self.name)
        statuses, doubtful = [], []
        for row in rows:
            handle = self._handle(int(row["attempt_id"]))
            if row["owner_id"] is None:  # queued: no worker has claimed it
                statuses.append(_status_of(handle, row, None, "waits for a worker"))
                continue
            alive = bool(row["worker_active"])
            if not alive:
                doubtful.append(f"attempt {row['attempt_id']} ({row['status']} by {row['owner_id']}: "
                                f"{'no worker' if row['worker_status'] is None else 'worker ' + row['worker_status']})")
            statuses.append(_status_of(handle, row, alive or None,
                                       "" if alive else "its owner is no active worker of the pool"))
        message = ""
        if doubtful:
            message = (f"pool {self.name}: {len(doubtful)} attempt(s) cannot be confirmed running: "
                       f"{', '.join(doubtful)}; reap_workers records those of gone workers LOST")
        return Reconciliation(statuses, complete=not doubtful, message=message)


@dataclass
class Providers:
    """Which provider serves each pool name, read from CFG_POOLS once and kept (pools change rarely; read() again
    to see a change)."""

    db: EngineDB
    known: dict[str, str] = field(default_factory=dict)

    def read(self) -> None:
        with self.db.read() as conn:
            self.known = {str(r["pool_name"]): str(r["provider"]).upper()
                          for r in fetch_all(self.db, conn, "pool_providers")}

    def of(self, pool: str) -> str:
        return self.known.get(pool, LOCAL)

    def queue_pools(self) -> list[str]:
        return sorted(p for p, provider in self.known.items() if provider == QUEUE)
