"""Task processes on this machine: started from a warm fork server (a fork of this process, made before its
heartbeat thread starts: etlcraft.supervisor.forkserver), watched, timed out, stopped.

The parent shares each attempt's owner id with its child. When a child ends without recording its outcome
(killed, crashed), the parent records FAILED on its behalf; when a time limit passes, the parent records
TIMED_OUT first and then stops the child's process group, so the first writer wins and a late child changes
nothing. When the parent itself is told to stop, it records each attempt interrupted before stopping it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind, AttemptStatus
from etlcraft.core.errors import EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host, process_start
from etlcraft.core.stops import holding_stops
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, read_then_call
from etlcraft.engine.outage import ride_out
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.supervisor.child import (
    OUTCOME,
    RECORDED_BY_SUPERVISOR,
    STALE,
    UNRECORDED,
    ChildRequest,
    inherit,
    main,
    open_log,
    spare,
)
from etlcraft.supervisor.forkserver import CONTEXT, UnawaitedProcess, ensure_fork_server

STOP_GRACE_SECONDS = 10.0
#: Task processes kept started ahead of their attempts (issue 27), no more than the supervisor's slots: as many as a
#: fan-out of Max_parallel_tasks 4 hands out at once (release/benchmarks/overhead.md, round 5). They hold no Engine
#: DB connection.
SPARES = 4


@dataclass
class Child:
    attempt_id: int
    task_code: str
    process: BaseProcess
    log_path: Path
    deadline: float | None  # time.monotonic() after which the attempt times out
    stop_sent: float | None = None  # when SIGTERM went to its group
    #: The task process's report channel: it sends its attempt's outcome there for this supervisor to record (or,
    #: when it had to record it itself, what it recorded), so that the attempt ends without waiting for the process
    #: to be gone.
    reports: Connection | None = None
    reported: Ended | None = None  # what it reported; the process still holds its slot until it is gone

    @property
    def pgid(self) -> int | None:
        return self.process.pid


@dataclass
class Spare:
    """A task process started before its attempt: it waits for its request on `requests` (etlcraft.supervisor.child's
    spare)."""

    process: BaseProcess
    requests: Connection  # duplex: the request goes down, the task process's report comes back up
    #: Its start identity (etlcraft.core.process): read once the fork server has answered with its PID, at the
    #: supervisor's next look (_top_up), else when its attempt is handed to it.
    start: str | None = None

    def alive(self) -> bool:
        """Whether it still runs; its start identity is read the first time it is found running."""
        if not self.process.is_alive():
            return False
        if self.start is None:
            self.start = process_start(self.process.pid or 0) or "unknown"
        return True


@dataclass(frozen=True)
class Ended:
    attempt_id: int
    task_code: str
    status: str  # the attempt's status once its child has gone
    exit_code: int | None


@dataclass
class LocalSupervisor:
    """Runs attempts as child processes of this process, at most `slots` at a time."""

    db: EngineDB
    owner_id: str
    request_base: ChildRequest  # attempt_id and log_path are filled per attempt
    slots: int
    log_dir: Path
    children: dict[int, Child] = field(default_factory=dict)
    spares: list[Spare] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:  # before any attempt is claimed, so that this failure leaves none claimed (B2)
            self.log_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EtlCraftError(
                f"the task log folder {self.log_dir} cannot be created ({type(exc).__name__}: {exc}); expected a "
                "folder etl-craft can write under the project's .etl-craft/logs; fix its permissions or move what is "
                "in the way, then run again: no task was started"
            ) from exc
        inherit(self.db)
        ensure_fork_server(self.db)  # now, while this process has one thread: before the heartbeat starts
        self._top_up()

    @property
    def free(self) -> int:
        """Slots free for new attempts: a task process that reported its outcome is ending and holds none."""
        return self.slots - sum(1 for c in self.children.values() if c.reported is None)

    def start(self, attempt_id: int, task_code: str, timeout_seconds: float | None,
              log_dir: Path | None = None) -> Child:
        """Start the task process of a CLAIMED attempt (owned by this supervisor's owner id), its log in `log_dir`
        (default: the supervisor's). When the process cannot be started, the attempt is recorded FAILED with the
        reason (B2) and EtlCraftError says so."""
        folder = log_dir or self.log_dir
        if folder != self.log_dir:
            with contextlib.suppress(OSError):  # else the task process records why its log cannot be opened
                folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / f"{task_code}.{attempt_id}.log"
        pinned = self.db.clock.pinned
        request = replace(self.request_base, attempt_id=attempt_id, log_path=str(log_path),
                          clock=pinned.isoformat() if pinned else None)
        deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
        with holding_stops():
            handed = self._hand_to_spare(request, log_path)
            if handed is None:
                request = replace(request, context=self._context(attempt_id))
                reports, theirs = Pipe()  # duplex: its outcome comes up, the verdict goes back down
                process = CONTEXT.Process(target=main, args=(request, theirs),
                                          name=f"etl-craft {task_code} {attempt_id}")
                child = Child(attempt_id, task_code, process, log_path, deadline, reports=reports)
                try:
                    process.start()
                except Exception as exc:
                    reports.close()
                    reason = (f"could not start the task process of attempt {attempt_id} ({task_code}): "
                              f"{type(exc).__name__}: {exc}")
                    self._record(child, "FAILED", f"{reason}; the attempt did not run; run the task again once the "
                                                  "cause is fixed", started=False)
                    raise EtlCraftError(f"{reason}; attempt {attempt_id} is recorded FAILED and did not run; fix the "
                                        "cause (process limits, memory, the fork server) and run again") from exc
                finally:
                    theirs.close()
            else:
                child = Child(attempt_id, task_code, handed.process, log_path, deadline, reports=handed.requests)
            self.children[attempt_id] = child
        return child

    def close(self) -> None:
        """End the spare task processes (none of them holds an attempt). Task processes running attempts are left
        alone: stop_all() stops those."""
        spares, self.spares = self.spares, []
        for idle in spares:
            idle.requests.close()  # a spare that waits for its request reads the end of it and exits
        for idle in spares:
            idle.process.join(timeout=1.0)
            if idle.process.is_alive():  # still connecting: nothing of an attempt is in it
                with contextlib.suppress(ProcessLookupError):
                    os.kill(idle.process.pid or 0, signal.SIGKILL)
                idle.process.join(timeout=5)

    def wait(self, timeout: float, wake: Sequence[int] = ()) -> list[Ended]:
        """Wait up to `timeout` seconds for attempts to end (reported by their task process, or their process gone,
        or timed out), or for one of the `wake` file descriptors to become readable; report the attempts that ended.
        A task process that reported its outcome earlier and is now gone is reaped without ending the wait."""
        until = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            deadlines = [c.deadline - now for c in self.children.values()
                         if c.deadline and c.stop_sent is None and c.reported is None]
            limit = max(0.0, min([until - now, *deadlines]))
            self._top_up()
            reporting = {c.reports: c for c in self.children.values() if c.reports is not None and c.reported is None}
            waited = [c.process.sentinel for c in self.children.values()] + list(reporting) + list(wake)
            if not waited:
                time.sleep(limit)
                return []
            ready = wait_for(waited, timeout=limit)
            ended = [report for channel, child in reporting.items() if channel in ready
                     for report in [self._report(child)] if report is not None]
            self._enforce_deadlines()
            gone = [self._reap(child) for child in list(self.children.values()) if not child.process.is_alive()]
            ended += [e for e in gone if e is not None]
            if ended or not ready or any(w in ready for w in wake) or time.monotonic() >= until:
                return ended

    def stop_all(self, reason: str, only: Collection[int] | None = None,
                 grace_seconds: float = STOP_GRACE_SECONDS) -> list[Ended]:
        """Stop every child (or those of the attempts in `only`) because this supervisor was told to stop
        (`reason`): record its attempt interrupted first (interrupt_attempt: no retry is used, and the Engine DB
        queues the task to run again while its run goes on), then stop its process group. An attempt that ended
        meanwhile keeps its outcome. A process group still alive `grace_seconds` after SIGTERM gets SIGKILL."""
        stopping = [c for c in self.children.values() if only is None or c.attempt_id in only]
        for child in stopping:
            with contextlib.suppress(StaleTransitionError):
                call(self.db, "interrupt_attempt", attempt_id=child.attempt_id, owner_id=self.owner_id, reason=reason)
            self._signal(child, signal.SIGTERM)
        deadline = time.monotonic() + grace_seconds
        while any(c.process.is_alive() for c in stopping) and time.monotonic() < deadline:
            # A task process that sends its outcome meanwhile is answered (stale, or recorded when it ended first).
            reporting = {c.reports: c for c in stopping if c.reports is not None and c.reported is None}
            ready = wait_for([c.process.sentinel for c in stopping] + list(reporting), timeout=0.2)
            for channel in (r for r in ready if r in reporting):
                self._report(reporting[channel])
        for child in stopping:
            if child.process.is_alive():
                self._signal(child, signal.SIGKILL)
                child.process.join(timeout=5)
        return [e for e in (self._reap(child) for child in stopping) if e is not None]

    # -- internals -------------------------------------------------------------------------------------------

    def _top_up(self) -> None:
        """Keep SPARES task processes started ahead (fewer when this supervisor has fewer slots): each is forked by
        the fork server while other task processes run, off the path of the next claim (without waiting for the
        fork: UnawaitedProcess). One that has died meanwhile is replaced; one that cannot be started now is simply
        not kept."""
        for gone in [s for s in self.spares if not s.alive()]:
            gone.requests.close()
            self.spares.remove(gone)
        while len(self.spares) < min(SPARES, self.slots):
            theirs, ours = Pipe()
            process = UnawaitedProcess(target=spare, args=(theirs, self.request_base), name="etl-craft spare")
            # A stop signal waits for the spare to be kept (so that close() ends it) and is never taken for a
            # failure to start one.
            with holding_stops():
                try:
                    process.start()
                except (OSError, EOFError, ValueError):  # the next attempt starts a process of its own and says why
                    ours.close()
                    return
                finally:
                    theirs.close()
                self.spares.append(Spare(process, ours))

    def _context(self, attempt_id: int) -> tuple[dict[str, Any], ...] | None:
        """The attempt's context rows for its task process (etlcraft.supervisor.child's _context), read on this
        supervisor's connection; None (the task process reads them) when they cannot be read now."""
        try:
            with self.db.read_alone() as conn:
                rows = fetch_all(self.db, conn, "attempt_context", attempt_id=attempt_id)
        except EtlCraftError:
            return None
        return tuple(rows) or None

    def _hand_to_spare(self, request: ChildRequest, log_path: Path) -> Spare | None:
        """Give `request` to a spare task process, its attempt started for it; the spare (its channel now carries the
        report back), or None when no spare could take it."""
        while self.spares:
            idle = self.spares.pop(0)
            if not idle.alive():  # it died while it waited (killed, out of memory): no attempt was in it
                idle.requests.close()
                continue
            started, context = self._start_for(idle, request.attempt_id, log_path)
            try:
                idle.requests.send(replace(request, started=started, context=context))
            except OSError:
                if started:  # it died just now, after its attempt was started for it: reaped as a task process that
                    return idle  # ended without recording an outcome (its channel reads as ended)
                idle.requests.close()
                continue
            return idle
        return None

    def _start_for(self, idle: Spare, attempt_id: int,
                   log_path: Path) -> tuple[bool, tuple[dict[str, Any], ...] | None]:
        """Record the attempt RUNNING in the spare task process about to run it (start_attempt with its host, PID
        and process start, under this supervisor's owner id) and read its context for it (attempt_context), in one
        round trip on this supervisor's connection (read_then_call), whose session has planned both long ago: in the
        task process's new session that planning was most of each call (release/benchmarks/overhead.md). Whether it
        was started, and its context rows (None: the task process reads them). Not when the attempt's log file
        cannot be opened (the task process records the attempt FAILED from CLAIMED, B2) or the call fails (stale,
        or the Engine DB briefly unreachable): False, and the task process starts the attempt itself, as a task
        process started for its attempt does."""
        pid = idle.process.pid
        assert pid is not None
        try:
            os.close(open_log(log_path))
        except OSError:
            return False, None
        try:
            rows, _ = read_then_call(
                self.db, "attempt_context", {"attempt_id": attempt_id}, "start_attempt", attempt_id=attempt_id,
                owner_id=self.owner_id, host=host(), pid=pid, process_start=idle.start or "unknown",
                lease_seconds=self.request_base.lease_seconds, log_path=str(log_path))
        except EtlCraftError:
            return False, None
        return True, tuple(rows) or None

    def _report(self, child: Child) -> Ended | None:
        """Serve what the task process sent on its report channel: its outcome, recorded here (_record_outcome) and
        answered, or the outcome it recorded itself; the attempt's end when it is recorded, else None (it ended
        without a whole report, or its outcome was refused as stale: _reap tells)."""
        assert child.reports is not None
        try:
            message = child.reports.recv()
        except (EOFError, OSError, ValueError, pickle.UnpicklingError):  # it went without a whole report (EOF, or
            # killed while sending); a stop signal that arrives meanwhile still stops the supervisor
            child.reports.close()
            child.reports = None
            return None
        if message[0] == OUTCOME:
            fault_point("outcome_received")
            verdict, ended = self._record_outcome(child, dict(message[1]))
            with contextlib.suppress(OSError):  # it went meanwhile: the outcome is recorded (or _reap records one)
                child.reports.send(verdict)
            if ended is None:
                return None
            child.reported = ended
        else:  # (RECORDED_HERE, status, exit code)
            child.reported = Ended(child.attempt_id, child.task_code, str(message[1]), int(message[2]))
        return child.reported

    def _record_outcome(self, child: Child, arguments: dict[str, Any]) -> tuple[tuple[str, str], Ended | None]:
        """Record the outcome a task process sent (the arguments of finish_attempt but the attempt and owner) on this
        supervisor's connection, under the owner id they share and as the actor the task process runs as: one
        write on a session that has planned finish_attempt long ago, where the task process would have opened one
        for it (release/benchmarks/overhead.md). The verdict to answer, and the attempt's end once recorded. Not
        ridden out: when the Engine DB cannot take it now, the task process records it itself while its lease
        lasts, and this supervisor goes on with its other attempts."""
        base = self.request_base
        try:
            with acting_as(Actor(base.actor_name, ActorKind(base.actor_kind))):
                call(self.db, "finish_attempt", attempt_id=child.attempt_id, owner_id=self.owner_id, **arguments)
        except StaleTransitionError as stale:
            return (STALE, str(stale)), None
        except EtlCraftError as exc:
            return (UNRECORDED, f"{type(exc).__name__}: {exc}"), None
        exit_code = arguments.get("exit_code")
        return (RECORDED_BY_SUPERVISOR, ""), Ended(child.attempt_id, child.task_code, str(arguments["status"]),
                                                   int(exit_code) if exit_code is not None else None)

    def _enforce_deadlines(self) -> None:
        now = time.monotonic()
        for child in self.children.values():
            if child.reported is not None:  # it recorded its outcome and is ending
                continue
            if child.deadline and child.stop_sent is None and now >= child.deadline:
                self._time_out(child)
            elif child.stop_sent is not None and now - child.stop_sent > STOP_GRACE_SECONDS:
                self._signal(child, signal.SIGKILL)

    def _time_out(self, child: Child) -> None:
        # A child that ended (or never started) meanwhile makes this stale: _reap records what is needed.
        try:
            call(self.db, "time_out_attempt", attempt_id=child.attempt_id, owner_id=self.owner_id,
                 message=f"the task ran longer than its TASK_TIMEOUT_SECONDS and was stopped; see {child.log_path}",
                 task_log=_tail(child.log_path))
        except StaleTransitionError:
            pass
        else:
            fault_point("attempt_timed_out")
        self._signal(child, signal.SIGTERM)

    def _signal(self, child: Child, signum: int) -> None:
        if child.stop_sent is None:
            child.stop_sent = time.monotonic()
        if not child.pgid:
            return
        try:
            os.killpg(child.pgid, signum)
        except ProcessLookupError:
            # No such group yet: the task process is still starting, before its setsid. Signal the process itself.
            if child.process.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pgid, signum)

    def _record(self, child: Child, status: str, message: str, *, started: bool = True) -> bool:
        """Record the attempt's end on the child's behalf (with its log, once its process `started`); False when it
        was stale (the child, or a timeout, recorded the outcome first: the first writer wins)."""
        log = {"log_path": str(child.log_path), "task_log": _tail(child.log_path)} if started else {}
        try:
            ride_out(lambda: call(self.db, "finish_attempt", attempt_id=child.attempt_id, owner_id=self.owner_id,
                                  status=status, exit_code=child.process.exitcode if started else None,
                                  error_message=message, **log),
                     seconds=self.request_base.lease_seconds)
        except StaleTransitionError:
            return False
        return True

    def _reap(self, child: Child) -> Ended | None:
        """The child's process is gone: its slot is free. Its outcome, unless it reported it already (None then);
        recorded FAILED on its behalf when it ended without recording one."""
        child.process.join(timeout=5)
        if child.reports is not None:
            child.reports.close()
        if child.reported is not None:
            del self.children[child.attempt_id]
            self._end_group(child)
            return None
        status = self._status(child.attempt_id)
        del self.children[child.attempt_id]  # once its outcome is known: an outage cannot lose track of it (B27)
        if status in (AttemptStatus.CLAIMED, AttemptStatus.RUNNING):
            code = child.process.exitcode
            how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
            if self._record(child, "FAILED", f"the task process {how} without recording an outcome; "
                                             f"see its log {child.log_path}"):
                fault_point("failure_recorded")
            status = self._status(child.attempt_id)
        self._end_group(child)
        return Ended(child.attempt_id, child.task_code, status, child.process.exitcode)

    def _end_group(self, child: Child) -> None:
        if child.pgid:  # nothing of the attempt may outlive it: its process group goes too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pgid, signal.SIGKILL)

    def _status(self, attempt_id: int) -> str:
        """The attempt's status, read again while the Engine DB is briefly unreachable (for as long as the lease)."""
        def read() -> str:
            with self.db.read_alone() as conn:
                row = fetch_one(self.db, conn, "attempt_row", attempt_id=attempt_id)
            return str(row["status"]) if row else "UNKNOWN"
        return ride_out(read, seconds=self.request_base.lease_seconds)


def _tail(path: Path, size: int = 4000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-size:]
    except OSError:
        return ""


