"""The task process: one attempt, in its own process group; its outcome goes to its supervisor, which records it
with finish_attempt, or is recorded here when the supervisor cannot.

It is forked from a warm fork server that has already imported etl-craft (no interpreter start-up per task),
usually started ahead of its attempt as a spare. Its supervisor records the attempt RUNNING in it and, once the
handler is done, records the outcome this process sends back on its report channel, both on the supervisor's own
long-lived Engine DB connection. This process opens a connection of its own only when it needs one: a handler that
reads or writes the Engine DB (SQL, BUSINESS_RULES, EMAIL_ALERT), an attempt it starts itself, or an outcome its
supervisor could not record (gone, or the Engine DB unreachable: the outcome is never lost with the supervisor).
It ends at once with os._exit (B53: a lingering script thread cannot hold the slot).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass, field
from datetime import date, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

from etlcraft.config.loader import CONFIG_FILE, ProjectConfig, load_config
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import EtlCraftError, StaleTransitionError
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host, process_start
from etlcraft.engine.bundles import Manifest, cache_root, materialize, open_store
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.outage import ride_out
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.engine.timeouts import EngineTimeouts
from etlcraft.handlers.context import HandlerResult, Offset, TaskContext

LOG_TAIL = 4000  # characters of the attempt's output kept in TASK_LOG
#: The task process's exit codes: the outcome recorded (SUCCESS, FAILED), or none (the supervisor reads or records it).
EXIT_SUCCESS, EXIT_FAILED, EXIT_NOT_RECORDED = 0, 1, 3

#: The report channel between a task process and its supervisor. The task process sends (OUTCOME, arguments of
#: finish_attempt but the attempt and owner); the supervisor answers (verdict, message): RECORDED_BY_SUPERVISOR, STALE
#: (refused: the message says why) or UNRECORDED (it could not record it: the task process records it itself, then
#: sends (RECORDED_HERE, status, exit code)).
OUTCOME, RECORDED_HERE = "outcome", "recorded here"
RECORDED_BY_SUPERVISOR, STALE, UNRECORDED = "recorded", "stale", "unrecorded"

#: The Engine DB of the process the fork server was forked from (see inherit()), and the connection pools it
#: had, which a task process keeps referenced so that nothing ever closes them from here.
_inherited: EngineDB | None = None
_parent_pools: list[Any] = []


@dataclass(frozen=True)
class ChildRequest:
    """What the parent hands the task process (picklable: it crosses the fork server)."""

    attempt_id: int
    owner_id: str
    project_dir: str
    engine_url: str
    engine_schema: str
    engine_password: str | None
    log_path: str
    actor_name: str
    actor_kind: str
    lease_seconds: int
    engine_timeouts: EngineTimeouts = field(default_factory=EngineTimeouts)
    engine_secret: str | None = None  # the name of the password's variable, for messages
    #: The supervisor's clock when it is pinned (a test moving time), ISO 8601: the task process reads the same.
    clock: str | None = None
    #: The tasks this command forces (`run --task-code T --force`): their attempts run with TaskContext.force.
    forced_task_ids: frozenset[int] = frozenset()
    #: The attempt's context rows (the attempt_context query), read by the supervisor on its warm connection when it
    #: hands the attempt over; None: the task process reads them itself.
    context: tuple[dict[str, Any], ...] | None = None
    #: The supervisor recorded the attempt RUNNING in this process (a spare) as it handed it over: this process does
    #: not call start_attempt.
    started: bool = False


class Stopped(KeyboardInterrupt):
    """The task process was asked to stop (SIGTERM or SIGHUP)."""


def _stop(signum: int, _frame: FrameType | None) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    raise Stopped(f"stopped by {signal.Signals(signum).name}")


def main(request: ChildRequest, reports: Connection | None = None) -> None:
    """Entry point in a task process forked for its attempt; it reports its outcome on `reports`. Never returns: the
    process ends with os._exit."""
    os.setsid()
    _attempt(request, None, reports)


def spare(requests: Connection, base: ChildRequest) -> None:
    """Entry point in a spare task process: forked before its attempt is claimed, it waits for its attempt's request
    on `requests` (where it reports its outcome later), so a claimed attempt starts without a fork on its path.
    Meanwhile it opens its Engine DB (`base` names it): the engine is set up here, but a connection is made only when
    the attempt needs one. The supervisor closing its end (or going) ends a spare that was never given an attempt,
    quietly. Never returns."""
    os.setsid()
    db: EngineDB | None = None
    with contextlib.suppress(Exception):  # the attempt opens it again when it needs it, and says what fails
        db = engine_db(base)
    try:
        request = requests.recv()
    except (EOFError, OSError):
        os._exit(0)
    _attempt(request, db, requests)


def _attempt(request: ChildRequest, db: EngineDB | None, reports: Connection | None) -> None:
    """Run the attempt `request` names in this process (`db`: its Engine DB, opened already, or None) and end it,
    its outcome recorded through its supervisor on `reports` (or here: _finish)."""
    try:
        _capture_output(request.log_path)
    except OSError as exc:  # nothing ran yet: the attempt is still CLAIMED, and is recorded FAILED with the error
        _exit(_record_unstarted(request, exc))
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    code = EXIT_NOT_RECORDED
    try:
        code = run_attempt(request, db, reports)
    except BaseException:
        traceback.print_exc()
    _exit(code)


def open_log(log_path: str | Path) -> int:
    """The attempt's log file, opened for appending (created when missing): a file descriptor."""
    return os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)


def _capture_output(log_path: str) -> None:
    """Send everything the process writes to fds 1 and 2 (its own prints, C extensions, subprocesses) to the
    attempt's log file, line-buffered so a kill loses at most a partial line (B54)."""
    log = open_log(log_path)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdout
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def _exit(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if lingering:
        print(f"etl-craft: ending the task process with threads still running: {', '.join(lingering)}",
              file=sys.stderr, flush=True)
    os._exit(code)


def inherit(db: EngineDB) -> None:
    """Let task processes forked from this process (through a fork server forked from it) use `db`'s engine,
    whose dialect is initialized already, with connections of their own."""
    global _inherited
    _inherited = db


def engine_db(request: ChildRequest) -> EngineDB:
    """The Engine DB the request names, opened by this process: the inherited engine with a new, empty pool when it
    is the same database (SQLAlchemy's dispose(close=False) after a fork: the parent's connections are left alone),
    else a new engine."""
    db = _inherited
    if (db is None or db.schema != (request.engine_schema if db.is_postgres else "")
            or db.url.render_as_string(hide_password=False) != request.engine_url):
        db = EngineDB(request.engine_url, schema=request.engine_schema, password=request.engine_password,
                      timeouts=request.engine_timeouts, secret=request.engine_secret)
    else:
        _parent_pools.append(db.engine.pool)  # dropping it could close the parent's connections as it is freed
        db.engine.dispose(close=False)
    db.clock.pin(datetime.fromisoformat(request.clock) if request.clock else None)
    return db


def run_attempt(request: ChildRequest, db: EngineDB | None = None, reports: Connection | None = None) -> int:
    """Run the attempt and record its outcome (through the supervisor on `reports` when there is one); the exit code
    that says what was recorded (EXIT_SUCCESS, EXIT_FAILED; EXIT_NOT_RECORDED: nothing, the supervisor reads or
    records it)."""
    if db is None:
        db = engine_db(request)  # no connection yet: made when something below needs one
    else:
        db.clock.pin(datetime.fromisoformat(request.clock) if request.clock else None)
    actor = Actor(request.actor_name, ActorKind(request.actor_kind))
    with acting_as(actor):
        try:
            fault_point("child_entered")
            if not request.started:
                _write(db, request, "start_attempt", "RUNNING", host=host(), pid=os.getpid(),
                       process_start=process_start(os.getpid()) or "unknown", lease_seconds=request.lease_seconds,
                       log_path=request.log_path)
            fault_point("child_started")
            context = ride_out(lambda: _context(db, request), seconds=request.lease_seconds)
            print(f"etl-craft: attempt {request.attempt_id} of task {context.task_code} "
                  f"(run {context.pipeline_run_id}) started", flush=True)
            result = _dispatch(context, db, request.owner_id)
            fault_point("handler_done")
        except StaleTransitionError as exc:
            print(f"etl-craft: {exc}", file=sys.stderr, flush=True)
            return EXIT_NOT_RECORDED
        except (Exception, Stopped) as exc:
            return _record_failure(db, request, reports, exc)
        return _record_success(db, request, reports, result)


def _context(db: EngineDB, request: ChildRequest) -> TaskContext:
    """What the attempt runs with: its task, run and offset, the task's parameters and the bundle its run pinned.
    One read (attempt_context: a row per parameter, the bundle on the first) of what no one changes while the
    attempt is live (one live attempt per task run, one run in progress per pipeline): the supervisor made it when
    it handed the attempt over (request.context), on a connection whose session has planned it before, so this
    process's new Engine DB session does not; else it is read here, in a transaction of its own (read_alone)."""
    if request.context is not None:
        rows = list(request.context)
    else:
        with db.read_alone() as conn:
            rows = fetch_all(db, conn, "attempt_context", attempt_id=request.attempt_id)
    assert rows, f"attempt {request.attempt_id} vanished"
    row = rows[0]
    parameters = {r["parameter_name"]: r["parameter_value"] for r in rows if r["parameter_name"] is not None}
    bundle = row if row["bundle_id"] is not None else None
    run_date = row["run_date"] if isinstance(row["run_date"], date) else date.fromisoformat(row["run_date"])
    offset = Offset(row["offset_value"], row["offset_type"]) if row["offset_value"] is not None else None
    project_dir, config = _project_files(request, bundle)
    return TaskContext(
        project_dir=project_dir, config=config,
        pipeline_id=row["pipeline_id"], pipeline_code=row["pipeline_code"], pipeline_run_id=row["pipeline_run_id"],
        run_date=run_date, task_id=row["task_id"], task_code=row["task_code"], task_run_id=row["task_run_id"],
        attempt_id=request.attempt_id, handler=row["handler"], action=row["action"], sql_file=row["sql_file"],
        script_file=row["script_file"], target_object=row["target_object"], parameters=parameters,
        last_offset=offset, force=row["task_id"] in request.forced_task_ids,
    )


def _project_files(request: ChildRequest, row: dict[str, Any] | None) -> tuple[Path, ProjectConfig]:
    """Where the task's files are read from, and its configuration: the bundle its run pinned (S5.F; `row`, the
    first row of the attempt_context read), materialized in the cache with every hash verified, and its
    craft-connector.yml (relative paths and .env still the working folder's); the working folder itself when the
    run pinned none."""
    working = Path(request.project_dir)
    local = load_config(working) if row is None or (working / CONFIG_FILE).is_file() else None
    if row is None:
        assert local is not None
        return working, local
    bundle_id = int(row["bundle_id"])
    done = materialize(bundle_id, Manifest.parse(row["manifest"], bundle_id), open_store(row["store_url"], local),
                       cache_root(local))
    for repaired in done.refetched:
        print(f"etl-craft: bundle {bundle_id}: fetched again from the artifact store and verified: {repaired}",
              flush=True)
    return done.path, load_config(working, done.path / CONFIG_FILE)


def _dispatch(context: TaskContext, db: EngineDB, owner_id: str) -> HandlerResult:
    if context.handler == "SQL":
        from etlcraft.handlers.sql import run_sql_task

        return run_sql_task(context, engine_db=db)
    if context.handler == "PYTHON":
        from etlcraft.handlers.python_script import run_python_task

        return run_python_task(context)
    if context.handler == "BUSINESS_RULES":
        from etlcraft.handlers.business_rules import run_business_rules

        return run_business_rules(context, engine_db=db, owner_id=owner_id)
    if context.handler == "EMAIL_ALERT":
        from etlcraft.handlers.email_alert import run_email_alert

        return run_email_alert(context, engine_db=db)
    raise EtlCraftError(
        f"task {context.task_code} has HANDLER {context.handler}, which this version of etl-craft cannot run "
        "(it runs SQL, PYTHON, BUSINESS_RULES and EMAIL_ALERT tasks); switch the task off or change its handler in "
        "a project migration"
    )


def _tail(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return text[-LOG_TAIL:]


def _record_success(db: EngineDB, request: ChildRequest, reports: Connection | None, result: HandlerResult) -> int:
    counts, offset = result.counts, result.offset
    if result.message:
        print(result.message, flush=True)
    sys.stdout.flush()
    return _finish(db, request, reports, "SUCCESS", EXIT_SUCCESS, {
        "source_count": counts.source, "insert_count": counts.insert, "update_count": counts.update,
        "delete_count": counts.delete, "duplicate_count": counts.duplicate, "rows_written": counts.rows_written,
        "target_count": counts.target, "task_log": _tail(request.log_path), "log_path": request.log_path,
        "offset_value": offset.value if offset else None, "offset_type": offset.type if offset else None})


def _record_failure(db: EngineDB, request: ChildRequest, reports: Connection | None, exc: BaseException) -> int:
    if isinstance(exc, Stopped):
        message = f"{exc}: the task was stopped before it finished"
    else:
        traceback.print_exc()
        message = f"{type(exc).__name__}: {exc}"
    retryable = "N" if isinstance(exc, EtlCraftError) and not getattr(exc, "retryable", True) else None
    sys.stdout.flush()
    sys.stderr.flush()
    return _finish(db, request, reports, "FAILED", EXIT_FAILED, {
        "error_message": message[:4000], "task_log": _tail(request.log_path), "log_path": request.log_path,
        "retryable": retryable})


def _finish(db: EngineDB, request: ChildRequest, reports: Connection | None, status: str, code: int,
            fields: dict[str, Any]) -> int:
    """Record the attempt's outcome (finish_attempt with `status`, exit code `code` and `fields`): sent to the
    supervisor on `reports`, which records it on its own connection under the same owner id and answers; recorded
    from this process when there is no supervisor to ask, it is gone (the outcome is never lost with it), or it
    could not record it (the Engine DB unreachable: this process rides the outage out for as long as the lease, B27;
    the supervisor is then told what was recorded, as it would be by a task process that records its own). `code`
    back, or EXIT_NOT_RECORDED when the outcome was refused as stale: a zombie, whose attempt was lost, timed out or
    stopped meanwhile (B8)."""
    arguments = {"status": status, "exit_code": code, **fields}
    answer = _ask_supervisor(reports, arguments) if reports is not None else None
    if answer is not None:
        verdict, message = answer
        if verdict == RECORDED_BY_SUPERVISOR:
            fault_point("outcome_recorded")
            return code
        if verdict == STALE:
            print(f"etl-craft: {message}", file=sys.stderr, flush=True)
            return EXIT_NOT_RECORDED
        print(f"etl-craft: the supervisor could not record the outcome ({message}); recording the outcome from the "
              "task process", file=sys.stderr, flush=True)
    elif reports is not None:
        print("etl-craft: the supervisor went before it answered; recording the outcome from the task process",
              file=sys.stderr, flush=True)
    try:
        # With the supervisor gone mid-answer, it may have recorded the outcome before it went.
        _write(db, request, "finish_attempt", status, maybe_done=reports is not None and answer is None, **arguments)
    except StaleTransitionError as stale:
        print(f"etl-craft: {stale}", file=sys.stderr, flush=True)
        return EXIT_NOT_RECORDED
    fault_point("outcome_recorded")
    if reports is not None and answer is not None:
        with contextlib.suppress(OSError):  # the supervisor went meanwhile: nothing to tell
            reports.send((RECORDED_HERE, status, code))
    return code


def _ask_supervisor(reports: Connection, arguments: dict[str, Any]) -> tuple[str, str] | None:
    """Send the outcome to the supervisor and wait for its verdict; None when it is gone (the channel ends)."""
    try:
        reports.send((OUTCOME, arguments))
        verdict, message = reports.recv()
    except (EOFError, OSError):
        return None
    return str(verdict), str(message)


def _write(db: EngineDB, request: ChildRequest, function: str, reached: str, *, maybe_done: bool = False,
           **arguments: Any) -> None:
    """Call start_attempt or finish_attempt for this attempt, riding out an Engine DB outage for as long as the
    attempt's lease (B27): the attempt is still this process's until its lease expires and it is reconciled, so the
    work it did while the database was away is recorded once it is back, never done again. When a try after a
    failed one (or the first, when `maybe_done`: the supervisor went while it recorded the same) is refused as stale
    because the attempt already reads `reached` under this owner, the earlier try did reach the database (its answer
    was lost): that is this call's outcome, not a zombie's."""
    tries = 0

    def once() -> None:
        nonlocal tries
        tries += 1
        call(db, function, attempt_id=request.attempt_id, owner_id=request.owner_id, **arguments)

    try:
        ride_out(once, seconds=request.lease_seconds,
                 on_wait=lambda exc: print(f"etl-craft: {function}: {exc}; trying again while the lease lasts",
                                           file=sys.stderr, flush=True))
    except StaleTransitionError:
        if tries > 1 or maybe_done:
            with db.read() as conn:
                row = fetch_one(db, conn, "attempt_row", attempt_id=request.attempt_id)
            if row is not None and row["status"] == reached and row["owner_id"] == request.owner_id:
                return
        raise


def _record_unstarted(request: ChildRequest, exc: OSError) -> int:
    """B2: the task process could not set itself up (its log file cannot be opened), so its CLAIMED attempt is
    recorded FAILED with the error, never left CLAIMED or RUNNING."""
    message = (f"could not start the task process of attempt {request.attempt_id}: its log file {request.log_path} "
               f"cannot be opened ({type(exc).__name__}: {exc}); expected a file etl-craft can write; make its folder "
               "writable, or move what is in the way, and run the task again")
    print(f"etl-craft: {message}", file=sys.stderr, flush=True)
    try:
        db = engine_db(request)
        with acting_as(Actor(request.actor_name, ActorKind(request.actor_kind))):
            call(db, "finish_attempt", attempt_id=request.attempt_id, owner_id=request.owner_id, status="FAILED",
                 exit_code=EXIT_FAILED, error_message=message)
    except EtlCraftError as not_recorded:  # stale, or the Engine DB is unreachable: the parent records the end
        print(f"etl-craft: {not_recorded}", file=sys.stderr, flush=True)
        return EXIT_NOT_RECORDED
    return EXIT_FAILED
