"""Running a pipeline on this machine: choose or create the run by its key, reconcile, own it, drive it to its end."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from etlcraft.alerts.outbox import AlertSender, alert_sender
from etlcraft.config.loader import ProjectConfig
from etlcraft.core import parameters
from etlcraft.core.actor import SYSTEM, Actor, acting_as, current_actor
from etlcraft.core.enums import RUN_TERMINAL
from etlcraft.core.errors import (
    AmbiguousError,
    MigrationError,
    NotFoundError,
    RefusedByPolicyError,
    StaleTransitionError,
    UsageError,
    WaitingError,
)
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host, is_alive, owner_id
from etlcraft.core.zones import project_zone
from etlcraft.engine.actions import masked
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.functions import call, call_in
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.engine.settings import engine_id
from etlcraft.overseer.driver import RunOutcome, RunSettings, TaskPolicy
from etlcraft.overseer.local import RunLoop
from etlcraft.paths import task_log_dir
from etlcraft.services.projects import resolve_project
from etlcraft.supervisor.child import ChildRequest


@dataclass(frozen=True)
class TaskRequest:
    """Run one task of a run (`run --task-code T`, or `--rerun T` for a task that failed), and with_downstream the
    tasks that depend on it, as their dependencies are met."""

    task_code: str
    rerun: bool = False
    with_downstream: bool = False
    ignore_dependencies: bool = False
    force: bool = False


@dataclass(frozen=True)
class RunRequest:
    pipeline_code: str
    run_key: str | None = None
    run_id: int | None = None
    run_date: date | None = None
    reason: str | None = None
    task: TaskRequest | None = None


@dataclass(frozen=True)
class Pipeline:
    pipeline_id: int
    code: str
    slots: int | None
    project_code: str = ""
    #: The project row's TIMEZONE; None when the row sets none (etlcraft.core.zones decides the zone).
    project_timezone: str | None = None


def action_arguments(request: RunRequest, **more: Any) -> str:
    """The command's arguments for AUD_ACTIONS, as JSON (what was asked, not what it led to)."""
    arguments = {k: v for k, v in dataclasses.asdict(request).items() if v is not None and k != "task"}
    if request.task is not None:
        arguments.update({k: v for k, v in dataclasses.asdict(request.task).items() if v})
    arguments.update({k: v for k, v in more.items() if v is not None})
    return json.dumps(masked(arguments), sort_keys=True, default=str)


def find_pipeline(db: EngineDB, code: str, project: str | None = None) -> Pipeline:
    """The active pipeline `code` of `project`, else of the project the caller chose (etlcraft.services.projects):
    pipeline codes are unique per project, not across the Engine DB."""
    with db.read() as conn:
        project_code = project or resolve_project(db, conn)
        row = fetch_one(db, conn, "pipeline_by_code", code=code, project_code=project_code)
    if row is None:
        raise NotFoundError(f"pipeline {code} does not exist or is switched off in project {project_code}, expected "
                            f"an active pipeline of it; list the project's pipelines with etl-craft --project-code "
                            f"{project_code} list")
    return Pipeline(int(row["pipeline_id"]), code, row["max_parallel_tasks"], row["project_code"], row["timezone"])


def not_a_run_of(pipeline_code: str, run_id: int, found: str | None) -> NotFoundError:
    """The refusal of run `run_id` named for pipeline `pipeline_code` when it is a run of pipeline `found` (None: no
    such run); one message for every command, local or through the HTTP API."""
    where = "does not exist" if found is None else f"is a run of pipeline {found}"
    return NotFoundError(f"run {run_id} {where}, expected a run of pipeline {pipeline_code}; etl-craft history "
                         f"--pipeline-code {pipeline_code} lists its runs")


def run_date_of(request: RunRequest, config: ProjectConfig, pipeline: Pipeline) -> date:
    """The date of a new run: --run-date, else today in the project's time zone (etlcraft.core.zones)."""
    if request.run_date is not None:
        return request.run_date
    return project_zone(pipeline.project_code, pipeline.project_timezone, config.orchestration.timezone).today()


def require_task(db: EngineDB, pipeline: Pipeline, task_code: str) -> None:
    """Refuse a task code that is not an active task of the pipeline, before any run is chosen or created: a
    mistyped --task-code, --rerun or --skip with a new --run-key must leave no run behind."""
    with db.read() as conn:
        codes = sorted(str(t["task_code"]) for t in fetch_all(db, conn, "tasks")
                       if t["pipeline_id"] == pipeline.pipeline_id)
    if task_code not in codes:
        raise NotFoundError(f"task {task_code} is not an active task of pipeline {pipeline.code}; its tasks are "
                            f"{', '.join(codes) or 'none'}; nothing was recorded")


def reconcile(db: EngineDB, lease_seconds: int) -> list[Any]:
    """Attempts whose lease expired become LOST: at once on this host (a live stuck process is stopped after its
    attempt is marked, so it can record nothing), after two lease periods on other hosts. Runs left without a
    live attempt lose their owner and can be resumed."""
    now = db.clock.now()
    with db.read() as conn:
        expired = fetch_all(db, conn, "expired_live_attempts", now=now if db.is_postgres else format_timestamp(now))
    here = host()
    running = {int(a["attempt_id"]): int(a["pid"]) for a in expired
               if a["host"] == here and is_alive(a["pid"], a["process_start"])}
    lost = call(db, "reconcile_expired", grace_seconds=0, host=here)
    for attempt in lost:
        if attempt.attempt_id in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(running[attempt.attempt_id], signal.SIGTERM)
    return lost + call(db, "reconcile_expired", grace_seconds=2 * lease_seconds)


def choose_run(db: EngineDB, pipeline: Pipeline, request: RunRequest, run_date: date,
               config: ProjectConfig, gate_wait_seconds: int = 0,
               on_event: Callable[[str], None] = lambda _: None) -> int:
    """The run this command drives: the one named by id or key (a key that does not exist yet is created), else
    the pipeline's single active run, else a new one. Never "the latest". A QUEUED run's pipeline gate may wait up
    to gate_wait_seconds for its upstream (see _admitted)."""
    if request.run_id is not None:
        with db.read() as conn:
            row = named_run(db, conn, pipeline, request.run_id)
        return _must_be_in_progress(int(row["pipeline_run_id"]), str(row["status"]))
    if request.run_key is None:
        with db.read() as conn:
            active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
        if len(active) > 1:
            listed = "; ".join(f"run {r['pipeline_run_id']} ({r['run_key']}, {r['status']})" for r in active)
            raise AmbiguousError(f"pipeline {pipeline.code} has {len(active)} active runs: {listed}; "
                                 "name one with --run-id or --run-key")
        if active:
            found = active[0]
            if found["trigger_kind"] == "BACKFILL":
                raise RefusedByPolicyError(
                    f"pipeline {pipeline.code} is running backfill run {found['pipeline_run_id']} ({found['run_key']}) "
                    f"as of {found['run_date']}; a plain run waits until it ends, or cancel it (B7)")
            return _admitted(db, pipeline, int(found["pipeline_run_id"]), str(found["run_key"]),
                             str(found["status"]), gate_wait_seconds, on_event)
    key = request.run_key or f"manual:{uuid.uuid4()}"
    row = call(db, "create_run", pipeline_id=pipeline.pipeline_id, run_key=key, run_date=run_date, status="QUEUED",
               reason=request.reason, **create_run_settings(config))[0]
    return _admitted(db, pipeline, int(row.pipeline_run_id), key, str(row.status), gate_wait_seconds, on_event)


def create_run_settings(config: ProjectConfig) -> dict[str, Any]:
    """What create_run keeps on a new run from the project's configuration: its checksum and the retry defaults
    (Orchestration: Retries, Retry_delay_seconds, Retry_backoff) the Engine DB's retry rule applies to each task
    without parameters of its own."""
    orchestration = config.orchestration
    return {"config_sha256": config.sha256, "retries": orchestration.retries,
            "retry_delay_seconds": orchestration.retry_delay_seconds, "retry_backoff": orchestration.retry_backoff}


def _admitted(db: EngineDB, pipeline: Pipeline, run_id: int, key: str, status: str, gate_wait_seconds: int = 0,
              on_event: Callable[[str], None] = lambda _: None) -> int:
    """A QUEUED run is judged by its pipeline gate each time it is asked for. Admitted, it runs. Unmet but able to
    be met (the upstream is running) and within gate_wait_seconds, the command sleeps until the gate's next look,
    holding nothing: the wait is a row of AUD_GATE_WAITS, so a command started after this one was stopped resumes
    it with the same deadline. Unmet otherwise, the command ends WAITING (exit 26) and the run stays QUEUED for the
    next try."""
    if status != "QUEUED":
        return _must_be_in_progress(run_id, status)
    while True:
        try:
            admitted = call(db, "admit_run", run_id=run_id, gate_wait_seconds=gate_wait_seconds)[0]
        except StaleTransitionError:
            # Admitted by another caller meanwhile (a server, woken by this run's creation): it is IN-PROGRESS now,
            # which is all this command asked for; anything else is the refusal it was.
            with db.read() as conn:
                row = fetch_one(db, conn, "run_header", run_id=run_id)
            if row is not None and row["status"] == "IN-PROGRESS":
                return run_id
            raise
        if admitted.status == "IN-PROGRESS":
            return run_id
        if admitted.next_check_at is None:
            raise WaitingError(
                f"run {run_id} ({key}) of {pipeline.code} waits: {admitted.reason}; etl-craft explain "
                f"--pipeline-code {pipeline.code} --run-id {run_id} --task-code T shows its gate, and the next "
                "etl-craft run of the pipeline judges it again")
        on_event(f"run {run_id} ({key}) of {pipeline.code}: {admitted.reason}")
        time.sleep(max((admitted.next_check_at - db.clock.now()).total_seconds(), 0.0))


def _must_be_in_progress(run_id: int, status: str) -> int:
    if status != "IN-PROGRESS":
        raise RefusedByPolicyError(
            f"run {run_id} is {status}, so there is nothing to run; start a new run (another --run-key), or "
            "reopen this one to repair it"
        )
    return run_id


def task_policies(db: EngineDB, run_id: int) -> Callable[[int], TaskPolicy]:
    """Each task's time limit (TASK_TIMEOUT_SECONDS, which the supervisor enforces) and the number of retries the
    Engine DB's retry rule gives it (retry_policy), for messages. validate has already refused values that do not
    parse. Read once, when a task of the run first needs them: a server admits many runs at a tick."""
    read: dict[str, dict[int, Any]] = {}

    def policies() -> dict[str, dict[int, Any]]:
        if not read:
            default = parameters.BY_NAME["TASK_TIMEOUT_SECONDS"].default
            with db.read() as conn:
                read["timeouts"] = {int(r["task_id"]): float(r["timeout_seconds"] or default or 0) or None
                                    for r in fetch_all(db, conn, "run_task_timeouts", run_id=run_id)}
            read["retries"] = {int(r.task_id): int(r.retries) for r in call(db, "retry_policy", run_id=run_id)}
        return read

    def policy(task_id: int) -> TaskPolicy:
        known = policies()
        return TaskPolicy(timeout=known["timeouts"].get(task_id), retries=known["retries"].get(task_id, 0))
    return policy


def _settings(db: EngineDB, config: ProjectConfig, pipeline: Pipeline, run_id: int, me: str,
              identity: str) -> RunSettings:
    """How the run is driven; its task logs go under the Engine DB's identity (read before anything was written,
    so that an Engine DB without one refuses the command unchanged)."""
    return run_settings(db, config, pipeline.code, run_id, pipeline.slots, me, identity)


def run_settings(db: EngineDB, config: ProjectConfig, pipeline_code: str, run_id: int, slots: int | None,
                 me: str, identity: str) -> RunSettings:
    """How the supervisor `me` drives run `run_id` of `pipeline_code`: its slots (the pipeline's
    MAX_PARALLEL_TASKS, else Orchestration: Max_parallel_tasks), leases, task log folder (under the Engine DB's
    identity) and task process template."""
    orchestration = config.orchestration
    actor = current_actor()
    return RunSettings(
        pipeline_code=pipeline_code, owner_id=me, slots=slots or orchestration.max_parallel_tasks,
        lease_seconds=orchestration.lease_seconds,
        heartbeat_seconds=orchestration.heartbeat_seconds,
        log_dir=task_log_dir(config.project_dir, identity, pipeline_code, run_id),
        gate_wait_seconds=orchestration.gate_wait_minutes * 60,
        child=ChildRequest(
            attempt_id=0, owner_id=me, project_dir=str(config.project_dir), engine_url=str(db.url.render_as_string(
                hide_password=False)), engine_schema=db.schema or "etl_craft",
            engine_password=config.secret_value(config.engine), log_path="", actor_name=actor.name,
            actor_kind=str(actor.kind), lease_seconds=orchestration.lease_seconds, engine_timeouts=db.timeouts,
            engine_secret=db.secret),
    )


def _alerts(db: EngineDB, config: ProjectConfig, me: str) -> AlertSender:
    """The alert sender of a foreground run: it raises the alerts time calls for (SLA, gate waits) and delivers
    what is due while the run runs, and once more when it ends (etlcraft.alerts.outbox)."""
    return alert_sender(db, config, me, Actor(current_actor().name, SYSTEM.kind), sweep=True)


def run_pipeline(db: EngineDB, config: ProjectConfig, request: RunRequest,
                 on_event: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """Create or resume the run `request` names and drive it to its end in the foreground; with request.task, run
    that one task (and its downstream) in the run instead."""
    if request.task is not None:
        return run_task(db, config, request, request.task, on_event)
    orchestration = config.orchestration
    pipeline = find_pipeline(db, request.pipeline_code)
    identity = engine_id(db)
    lease = orchestration.lease_seconds
    run_date = run_date_of(request, config, pipeline)
    reconcile(db, lease)
    run_id = choose_run(db, pipeline, request, run_date, config, orchestration.gate_wait_minutes * 60,
                        on_event)
    me = owner_id()
    with db.write() as conn:
        call_in(db, conn, "start_run", run_id=run_id, owner_id=me, lease_seconds=lease)
        call_in(db, conn, "record_action", command="run", arguments=action_arguments(request),
                pipeline_id=pipeline.pipeline_id, run_id=run_id, host=host())
    fault_point("run_created")
    on_event(f"run {run_id} of {pipeline.code} supervised by {me}")
    settings = _settings(db, config, pipeline, run_id, me, identity)
    return RunLoop(db, run_id, settings, current_actor(), task_policies(db, run_id), on_event,
                   lambda: reconcile(db, lease), alerts=_alerts(db, config, me)).run()


@dataclass
class BackfillOutcome:
    pipeline_code: str
    runs: list[RunOutcome]
    message: str
    complete: bool


def backfill(db: EngineDB, config: ProjectConfig, request: RunRequest, first: date, last: date,
             on_event: Callable[[str], None] = lambda _: None) -> BackfillOutcome:
    """One BACKFILL run per date from first to last, in date order, each driven to its end before the next (merges
    keep their history in date order). Before every date the pipeline must have no other active run (B7); a date
    whose run does not end SUCCESS or SKIPPED stops the backfill. Either way the outcome says how to resume."""
    if not request.reason:
        raise UsageError("a backfill needs --reason: it is recorded on every run it creates")
    if last < first:
        raise UsageError(f"--backfill {first}:{last} ends before it starts; give FROM:TO with FROM <= TO")
    pipeline = find_pipeline(db, request.pipeline_code)
    identity = engine_id(db)
    lease = config.orchestration.lease_seconds
    dates = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    outcome = BackfillOutcome(pipeline.code, [], "", complete=False)

    call(db, "record_action", command="run --backfill",
         arguments=action_arguments(request, backfill=f"{first}:{last}"), pipeline_id=pipeline.pipeline_id,
         host=host())

    def resume_from(day: date) -> str:
        return (f"etl-craft run --pipeline-code {pipeline.code} --backfill {day}:{last} "
                f"--reason {shlex.quote(request.reason or '')}")

    for number, day in enumerate(dates, 1):
        reconcile(db, lease)
        run_id = _backfill_run(db, pipeline, day, request.reason, config)
        if run_id is None:
            with db.read() as conn:
                active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
            listed = "; ".join(f"run {r['pipeline_run_id']} ({r['run_key']}, {r['trigger_kind']}, {r['status']})"
                               for r in active)
            outcome.message = (f"backfill of {pipeline.code} stopped before {day} ({number - 1} of {len(dates)} "
                               f"dates done): {listed} is active; once it has ended, resume with: {resume_from(day)}")
            return outcome
        on_event(f"backfill {pipeline.code}: date {number} of {len(dates)} ({day}), run {run_id}")
        me = owner_id()
        call(db, "start_run", run_id=run_id, owner_id=me, lease_seconds=lease)
        settings = _settings(db, config, pipeline, run_id, me, identity)
        ran = RunLoop(db, run_id, settings, current_actor(), task_policies(db, run_id), on_event,
                      lambda: reconcile(db, lease), alerts=_alerts(db, config, me)).run()
        outcome.runs.append(ran)
        on_event(f"backfill {pipeline.code}: {day}: {ran.message}")
        if ran.status not in ("SUCCESS", "SKIPPED"):
            outcome.message = (f"backfill of {pipeline.code} stopped at {day} ({number - 1} of {len(dates)} dates "
                               f"done): run {run_id} is {ran.status}; repair it (etl-craft run --pipeline-code "
                               f"{pipeline.code} --run-id {run_id} --rerun T), then resume with: {resume_from(day)}")
            return outcome
    outcome.complete = True
    outcome.message = f"backfill of {pipeline.code}: {len(dates)} date(s) from {first} to {last} done"
    return outcome


def _backfill_run(db: EngineDB, pipeline: Pipeline, day: date, reason: str | None,
                  config: ProjectConfig) -> int | None:
    """The backfill run of `day`: an unfinished one is resumed, else a new one is created and admitted (keys
    backfill:<day>, then backfill:<day>#2, ... when the date was backfilled before). None when another run of the
    pipeline is active (B7: checked before every date)."""
    with db.read() as conn:
        active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
        if any(not str(r["run_key"]).startswith(f"backfill:{day.isoformat()}") for r in active):
            return None
        key, _ = backfill_key(db, conn, pipeline.pipeline_id, day)
    row = call(db, "create_run", pipeline_id=pipeline.pipeline_id, run_key=key, run_date=day,
               trigger_kind="BACKFILL", status="QUEUED", reason=reason, **create_run_settings(config))[0]
    return _admitted(db, pipeline, int(row.pipeline_run_id), key, str(row.status))


def backfill_key(db: EngineDB, conn: Any, pipeline_id: int, day: date) -> tuple[str, dict[str, Any] | None]:
    """The key of `day`'s backfill run (backfill:<day>, then backfill:<day>#2, ... when the date was backfilled
    before) and that run (its run_by_key row) when it exists and has not ended, to be resumed."""
    key, n = f"backfill:{day.isoformat()}", 1
    while (found := fetch_one(db, conn, "run_by_key", pipeline_id=pipeline_id, run_key=key)) is not None:
        if found["status"] in ("QUEUED", "IN-PROGRESS"):
            return key, found
        n += 1
        key = f"backfill:{day.isoformat()}#{n}"
    return key, None


def named_run(db: EngineDB, conn: Any, pipeline: Pipeline, run_id: int) -> dict[str, Any]:
    """The run --run-id names (its run_header row), refused unless it is a run of the pipeline."""
    row = fetch_one(db, conn, "run_header", run_id=run_id)
    if row is None or row["pipeline_id"] != pipeline.pipeline_id:
        raise NotFoundError(f"run {run_id} is not a run of pipeline {pipeline.code}; "
                            f"see etl-craft history --pipeline-code {pipeline.code}")
    return row


def select_run(db: EngineDB, config: ProjectConfig, pipeline: Pipeline, request: RunRequest) -> dict[str, Any]:
    """The run a task command works in: named by --run-id, by --run-key (created when the key is new), else the
    pipeline's single active run. Refuses to guess between several, or when there is none."""
    with db.read() as conn:
        if request.run_id is not None:
            return named_run(db, conn, pipeline, request.run_id)
        if request.run_key is not None:
            found = fetch_one(db, conn, "run_by_key", pipeline_id=pipeline.pipeline_id, run_key=request.run_key)
        else:
            active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
            if len(active) != 1:  # none: not found (22), as the operator controls say; several: ambiguous (23)
                listed = "; ".join(f"run {r['pipeline_run_id']} ({r['run_key']}, {r['status']})" for r in active)
                raise (AmbiguousError if active else NotFoundError)(
                    f"pipeline {pipeline.code} has {len(active)} active runs{': ' + listed if active else ''}; name "
                    f"the run with --run-id or --run-key (etl-craft history --pipeline-code {pipeline.code} lists "
                    "them)")
            found = active[0]
        if found is not None:
            row = fetch_one(db, conn, "run_header", run_id=found["pipeline_run_id"])
            assert row is not None
            return row
    run_date = run_date_of(request, config, pipeline)
    run_id = choose_run(db, pipeline, request, run_date, config)
    with db.read() as conn:
        row = fetch_one(db, conn, "run_header", run_id=run_id)
    assert row is not None
    return row


def downstream_of(edges: list[dict[str, Any]], task_id: int) -> set[int]:
    """Every task that depends on task_id in the pipeline, directly or through other tasks."""
    below: dict[int, set[int]] = {}
    for edge in edges:
        below.setdefault(int(edge["depends_on_task_id"]), set()).add(int(edge["task_id"]))
    found: set[int] = set()
    todo = [task_id]
    while todo:
        for child in below.get(todo.pop(), set()) - found:
            found.add(child)
            todo.append(child)
    return found


def run_task(db: EngineDB, config: ProjectConfig, request: RunRequest, task: TaskRequest,
             on_event: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """Run one task of a run now, in the foreground, and with_downstream its dependents as they become ready.

    Whether the task may run is decided before anything is written, and the decision, the reopening of an ended
    run, the ownership of the run and the task's queued attempt are one transaction: a refused command changes
    nothing (B31). The run is finalized afterwards only when every task of it has settled (B25); otherwise it is
    released, IN-PROGRESS, for `etl-craft run --pipeline-code P` to finish."""
    pipeline = find_pipeline(db, request.pipeline_code)
    identity = engine_id(db)
    require_task(db, pipeline, task.task_code)
    lease = config.orchestration.lease_seconds
    reconcile(db, lease)
    run = select_run(db, config, pipeline, request)
    run_id = int(run["pipeline_run_id"])
    with db.read() as conn:
        rows = {r["task_code"]: r for r in fetch_all(db, conn, "run_task_rows", run_id=run_id)}
        edges = fetch_all(db, conn, "run_task_edges", run_id=run_id)
    row = rows.get(task.task_code)
    if row is None:
        raise NotFoundError(f"task {task.task_code} is not an active task of pipeline {pipeline.code}; its tasks are "
                            f"{', '.join(sorted(rows)) or 'none'}")
    task_id = int(row["task_id"])
    where = f"in run {run_id} of {pipeline.code}"
    command = "RERUN" if task.rerun else "FORCE" if task.force else "TASK"
    me = owner_id()
    with db.write() as conn:
        # The Engine DB decides whether the command may run the task, in the transaction that acts on it: a refused
        # command rolls back and changes nothing (B31).
        judged = call_in(db, conn, "judge_task_command", run_id=run_id, task_id=task_id, command=command)[0]
        if judged.decision == "REFUSE":
            raise RefusedByPolicyError(judged.reason)
        if judged.reopen:
            why = (task.rerun and f"--rerun {task.task_code}") or f"--task-code {task.task_code} --force"
            call_in(db, conn, "reopen_run", run_id=run_id,
                    reason=request.reason or f"etl-craft run {why}")
        call_in(db, conn, "start_run", run_id=run_id, owner_id=me, lease_seconds=lease)
        call_in(db, conn, "record_action", command="run --rerun" if task.rerun else "run --task-code",
                arguments=action_arguments(request), pipeline_id=pipeline.pipeline_id, run_id=run_id, task_id=task_id,
                host=host())
        if judged.check_dependencies and not task.ignore_dependencies:
            _check_dependencies(db, conn, task, run_id, task_id, rows, edges, where)
        if judged.decision == "CLAIM":  # queued again after a stop: this command runs it
            on_event(f"{task.task_code}: attempt {judged.attempt_id} is queued {where}")
        else:
            queued = call_in(db, conn, "queue_attempt", run_id=run_id, task_id=task_id, rerun=judged.rerun)[0]
            if queued.outcome != "QUEUED":
                raise WaitingError(f"task {task.task_code} {where} waits: {queued.reason}; nothing was recorded")
            on_event(f"{task.task_code}: queued attempt {queued.attempt_id} {where}")
    scope = frozenset({task_id} | (downstream_of(edges, task_id) if task.with_downstream else set()))
    settings = _settings(db, config, pipeline, run_id, me, identity)
    if task.force:  # the forced task (not its downstream) redoes its work in full: a rules task checks its table whole
        settings = dataclasses.replace(settings, child=dataclasses.replace(settings.child,
                                                                           forced_task_ids=frozenset({task_id})))
    loop = RunLoop(db, run_id, settings, current_actor(), task_policies(db, run_id), on_event,
                   lambda: reconcile(db, lease), scope=scope, alerts=_alerts(db, config, me))
    loop.task_codes[task_id] = task.task_code
    return loop.run()


def _check_dependencies(db: EngineDB, conn: Any, task: TaskRequest, run_id: int, task_id: int,
                        rows: dict[str, dict[str, Any]], edges: list[dict[str, Any]], where: str) -> None:
    """The database's ready set decides: RUN goes on, SKIP can never run, absent waits for its upstream tasks."""
    decision = next((t for t in call_in(db, conn, "ready_tasks", run_id=run_id) if t.task_id == task_id), None)
    if decision is not None and decision.decision == "RUN":
        return
    if decision is not None:
        raise RefusedByPolicyError(f"task {task.task_code} {where} can never run: {decision.reason}; pass "
                                   "--ignore-dependencies to run it anyway")
    status_of = {int(r["task_id"]): r["status"] or "not run" for r in rows.values()}
    upstream = ", ".join(f"{e['upstream_task_code']} ({e['dependency_type']} needed, "
                         f"{status_of[int(e['depends_on_task_id'])]})" for e in edges if int(e["task_id"]) == task_id)
    raise WaitingError(f"task {task.task_code} {where} waits for its dependencies: {upstream}; nothing was "
                       f"recorded. Run them first (etl-craft run --pipeline-code P --run-id {run_id}), or pass "
                       "--ignore-dependencies")


def skip_task(db: EngineDB, config: ProjectConfig, request: RunRequest, task_code: str) -> RunOutcome:
    """`run --skip T`: an operator records that T will not run in the run (SKIPPED, with the reason); the engine
    never runs it there afterwards, and its dependents judge it as any SKIPPED upstream."""
    if not request.reason:
        raise UsageError(f"--skip {task_code} needs --reason: it is recorded on the task run")
    pipeline = find_pipeline(db, request.pipeline_code)
    require_task(db, pipeline, task_code)
    run = select_run(db, config, pipeline, request)
    run_id = int(run["pipeline_run_id"])
    with db.read() as conn:
        rows = {r["task_code"]: r for r in fetch_all(db, conn, "run_task_rows", run_id=run_id)}
    if task_code not in rows:
        raise NotFoundError(f"task {task_code} is not an active task of pipeline {pipeline.code}; its tasks are "
                            f"{', '.join(sorted(rows)) or 'none'}")
    task_id = int(rows[task_code]["task_id"])
    with db.write() as conn:
        skipped = call_in(db, conn, "skip_task_run", run_id=run_id, task_id=task_id, reason=request.reason,
                          by_operator=True)[0]
        call_in(db, conn, "record_action", command="run --skip", arguments=action_arguments(request, skip=task_code),
                pipeline_id=pipeline.pipeline_id, run_id=run_id, task_id=task_id, host=host())
    return RunOutcome(run_id, str(run["status"]), f"task {task_code} is {skipped.status} in run {run_id} of "
                      f"{pipeline.code} ({request.reason}); the next etl-craft run --pipeline-code {pipeline.code} "
                      f"--run-id {run_id} runs the rest")


def init_run(db: EngineDB, config: ProjectConfig, request: RunRequest) -> int:
    """`run --init-only`: create and admit the run (or find the one the key or the pipeline's active run names)
    without running anything, for an orchestrator that then runs each task with --task-code."""
    pipeline = find_pipeline(db, request.pipeline_code)
    run_date = run_date_of(request, config, pipeline)
    reconcile(db, config.orchestration.lease_seconds)
    run_id = choose_run(db, pipeline, request, run_date, config)
    call(db, "record_action", command="run --init-only", arguments=action_arguments(request),
         pipeline_id=pipeline.pipeline_id, run_id=run_id, host=host())
    return run_id


def end_run(db: EngineDB, config: ProjectConfig, request: RunRequest) -> RunOutcome:
    """`run --finalize-only`: record as SKIPPED the tasks that can never run (the Engine DB's ready set says so, as
    when their upstream failed), then end the run from its task runs (refused while a task that could still run has
    not settled). A run that has already ended is left as it is and its status returned: an orchestrator's
    __finalize__ step comes after its last task, whose command ends a run once every task has settled."""
    pipeline = find_pipeline(db, request.pipeline_code)
    reconcile(db, config.orchestration.lease_seconds)
    run = select_run(db, config, pipeline, request)
    run_id, status = int(run["pipeline_run_id"]), str(run["status"])
    if status in RUN_TERMINAL:
        return RunOutcome(run_id, status, f"run {run_id} had already ended {status}; nothing to finalize")
    _must_be_in_progress(run_id, status)
    call(db, "record_action", command="run --finalize-only", arguments=action_arguments(request),
         pipeline_id=pipeline.pipeline_id, run_id=run_id, host=host())
    with acting_as(SYSTEM):
        while skips := [t for t in call(db, "ready_tasks", run_id=run_id) if t.decision == "SKIP"]:
            for task in skips:  # a skip can make its downstream unable to run in turn: judge again until none
                call(db, "skip_task_run", run_id=run_id, task_id=task.task_id, reason=task.reason)
        ended = call(db, "finalize_run", run_id=run_id)[0]
    return RunOutcome(run_id, ended.status, f"run {run_id} ended {ended.status}")


@dataclass(frozen=True)
class AttemptLog:
    row: dict[str, Any]  # the attempt (attempt_row)
    text: str  # its log file, else the tail kept in TASK_LOG
    note: str | None = None  # what the reader should know about where the text comes from


def attempt_log(db: EngineDB, attempt_id: int) -> AttemptLog:
    """An attempt's row and its log: the file its attempt recorded (LOG_PATH) when it is still there, else the tail
    kept in TASK_LOG. A file of the layout before Engine DB identities (.etl-craft/logs/<pipeline>/<run>/, not
    under this Engine DB's identity) is read where it is, with a note: another Engine DB of the project may have
    appended an attempt of the same id to it."""
    with db.read() as conn:
        row = fetch_one(db, conn, "attempt_row", attempt_id=attempt_id)
        identity = _identity_or_none(db, conn)
    if row is None:
        raise NotFoundError(f"attempt {attempt_id} does not exist; see etl-craft status --pipeline-code P")
    path = row.get("log_path")
    if not path or not Path(path).is_file():
        return AttemptLog(row, row.get("task_log") or "")
    note = None
    if identity is None or identity not in Path(path).parts:
        note = (f"the log of attempt {attempt_id}, {path}, was written before etl-craft kept each Engine DB's logs "
                "in a folder of its own: if another Engine DB of this project also ran an attempt "
                f"{attempt_id} of run {row.get('pipeline_run_id')}, its lines were appended to this file too; this "
                f"attempt's own last lines are kept in the Engine DB (etl-craft logs --attempt-id {attempt_id} "
                "--format json, attempt.task_log)")
    return AttemptLog(row, Path(path).read_text(encoding="utf-8", errors="replace"), note)


def log_chunks(db: EngineDB, attempt_id: int, offset: int, chunk: int = 65536) -> tuple[int, Iterator[bytes]]:
    """An attempt's log from byte `offset` as it is now: its size (the offset to ask from next time) and its bytes
    up to that size, read in chunks as they are sent. The file its attempt writes (LOG_PATH), which may still grow
    while the attempt runs, else the tail kept in TASK_LOG."""
    with db.read() as conn:
        row = fetch_one(db, conn, "attempt_row", attempt_id=attempt_id)
    if row is None:
        raise NotFoundError(f"attempt {attempt_id} does not exist; see etl-craft status --pipeline-code P")
    path = Path(row["log_path"]) if row.get("log_path") else None
    if path is None or not path.is_file():
        kept = (row.get("task_log") or "").encode("utf-8")
        return len(kept), iter([kept[offset:]] if offset < len(kept) else [])
    size = path.stat().st_size

    def read() -> Iterator[bytes]:
        with path.open("rb") as file:
            file.seek(min(offset, size))
            left = max(size - offset, 0)
            while left > 0 and (data := file.read(min(chunk, left))):
                left -= len(data)
                yield data
    return size, read()


def _identity_or_none(db: EngineDB, conn: Any) -> str | None:
    """The Engine DB's identity, None for one migrated before it had one (its logs are all of the old layout)."""
    try:
        return engine_id(db, conn)
    except MigrationError:
        return None


# --- JSON documents: the one serializer of each run operation (the CLI prints what these return) -------------------

def outcome_json(outcome: RunOutcome) -> dict[str, Any]:
    """`etl-craft run` of a run or a task (and --finalize-only): etl-craft/run-outcome/1."""
    return {"schema": "etl-craft/run-outcome/1", "pipeline_run_id": outcome.pipeline_run_id,
            "status": outcome.status, "message": outcome.message,
            "attempts": [{"attempt_id": e.attempt_id, "task_code": e.task_code, "status": e.status}
                         for e in outcome.ended],
            "skipped": [{"task_code": code, "reason": why} for code, why in outcome.skipped]}


def skip_json(outcome: RunOutcome, task_code: str) -> dict[str, Any]:
    """`etl-craft run --skip T`: etl-craft/run-skip/1."""
    return {"schema": "etl-craft/run-skip/1", "pipeline_run_id": outcome.pipeline_run_id, "task_code": task_code,
            "message": outcome.message}


def init_json(run_id: int, pipeline_code: str) -> dict[str, Any]:
    """`etl-craft run --init-only`: etl-craft/run-init/1."""
    return {"schema": "etl-craft/run-init/1", "pipeline_run_id": run_id, "pipeline_code": pipeline_code}


def attempt_log_json(found: AttemptLog) -> dict[str, Any]:
    """`etl-craft logs --attempt-id N`: etl-craft/attempt-log/1, the attempt's row and its log."""
    return {"schema": "etl-craft/attempt-log/1", "attempt": found.row, "log": found.text, "note": found.note}


def backfill_json(done: BackfillOutcome) -> dict[str, Any]:
    """`etl-craft run --backfill FROM:TO`: etl-craft/backfill-outcome/1."""
    return {"schema": "etl-craft/backfill-outcome/1", "pipeline_code": done.pipeline_code, "complete": done.complete,
            "message": done.message,
            "runs": [{"pipeline_run_id": r.pipeline_run_id, "status": r.status} for r in done.runs]}
