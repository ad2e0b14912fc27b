"""Operator controls: mark a run or a task, cancel a run, pause and resume a pipeline, reopen an ended run.

One plain function per operation, each taking an OperationContext and a frozen request and returning a frozen
OperationResult; `to_json` is the one serializer (the CLI prints what it returns). The Engine DB functions make
every change (mark_run, mark_task_run, cancel_run, reopen_run, pause_pipeline, resume_pipeline); each operation
records its request once in AUD_ACTIONS, in the transaction of the change, so a refused request changes nothing.
Runs are named by id or key; with neither, the pipeline's single run that has not ended. Nothing here creates a
run, and nothing picks "the latest".
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa

from etlcraft.core.actor import SYSTEM, Actor, acting_as
from etlcraft.core.errors import AmbiguousError, NotFoundError, UsageError
from etlcraft.core.process import host
from etlcraft.engine.actions import masked
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.services.runs import Pipeline, find_pipeline, not_a_run_of, reconcile
from etlcraft.services.values import as_date, as_time, document

SCHEMA = "etl-craft/operation/1"
MARK_STATUSES = ("SUCCESS", "FAILED", "SKIPPED")


@dataclass(frozen=True)
class OperationContext:
    """Where and as whom an operation acts; lease_seconds sets how long another host's dead owner is waited for
    before its attempts are reconciled LOST."""

    db: EngineDB
    actor: Actor
    lease_seconds: int = 60


@dataclass(frozen=True)
class RunRef:
    """The run an operation names: by id, by key, or (neither) the pipeline's single run that has not ended."""

    run_id: int | None = None
    run_key: str | None = None


@dataclass(frozen=True)
class MarkRequest:
    pipeline_code: str
    status: str
    reason: str
    task_code: str | None = None
    rows_written: int | None = None
    run: RunRef = RunRef()


@dataclass(frozen=True)
class CancelRequest:
    pipeline_code: str
    reason: str
    run: RunRef = RunRef()


@dataclass(frozen=True)
class ReopenRequest:
    pipeline_code: str
    reason: str
    run: RunRef = RunRef()


@dataclass(frozen=True)
class PauseRequest:
    pipeline_code: str
    reason: str


@dataclass(frozen=True)
class ResumeRequest:
    pipeline_code: str
    reason: str | None = None


@dataclass(frozen=True)
class RunView:
    pipeline_run_id: int
    pipeline_code: str
    run_key: str
    trigger_kind: str
    run_date: date
    status: str
    output_revision: int
    repair_pending: bool
    cancel_requested_at: datetime | None
    ended_at: datetime | None
    ended_by: str | None
    message: str | None


@dataclass(frozen=True)
class TaskRunView:
    task_run_id: int
    task_code: str
    status: str
    attempts: int
    rows_written: int | None
    ended_at: datetime | None
    message: str | None
    error_message: str | None


@dataclass(frozen=True)
class AttemptChange:
    """An attempt of the run whose status the operation changed (a LOST, a CANCELLED)."""

    attempt_id: int
    task_code: str
    from_status: str | None
    to_status: str


@dataclass(frozen=True)
class PauseView:
    pause_id: int
    pipeline_code: str
    paused_at: datetime
    paused_by: str
    reason: str | None
    resumed_at: datetime | None
    resumed_by: str | None
    resume_reason: str | None


@dataclass(frozen=True)
class OperationResult:
    """What one operation did. outcome is the operation's (SUCCESS once the change is made); the statuses it set
    are on run, task and pause. A cancel whose attempts still run keeps the run IN-PROGRESS (CANCEL REQUESTED)."""

    operation: str
    outcome: str
    action_id: int
    actor: str
    pipeline_code: str
    message: str
    run: RunView | None = None
    task: TaskRunView | None = None
    attempts_changed: tuple[AttemptChange, ...] = ()
    pause: PauseView | None = None


def to_json(result: OperationResult) -> dict[str, Any]:
    """The operation's JSON document: {"schema": "etl-craft/operation/1", ...}; times ISO 8601 in UTC."""
    return document(SCHEMA, result)


# --- operations -------------------------------------------------------------------------------------------------

def mark(ctx: OperationContext, request: MarkRequest) -> OperationResult:
    """Set a run's ending, or with task_code a task's outcome in the run (rows_written recorded when given).

    The Engine DB refuses while a live process runs the run or the task (B16). Attempts left CLAIMED or RUNNING by
    a process that died are marked LOST first (B26): for a task by mark_task_run itself, for a run by reconciling
    expired leases (as etl-craft reconcile does) before mark_run."""
    db = ctx.db
    with acting_as(ctx.actor):
        pipeline = find_pipeline(db, request.pipeline_code)
        run_id = resolve_run(db, pipeline, request.run, "mark")
        task_id = _task_id(db, pipeline, request.task_code) if request.task_code else None
        if task_id is None and request.rows_written is not None:
            raise UsageError("--rows applies to a task's outcome; give --task-code T with it")
        before = _attempt_statuses(db, run_id)
        if task_id is None:
            _reconcile(ctx)
        with db.write() as conn:
            if task_id is None:
                call_in(db, conn, "mark_run", run_id=run_id, status=request.status, reason=request.reason)
            else:
                call_in(db, conn, "mark_task_run", run_id=run_id, task_id=task_id, status=request.status,
                        reason=request.reason, rows_written=request.rows_written)
            action = _record(db, conn, "mark", request, pipeline, run_id, task_id)
        run = run_view(db, run_id)
        task = _task_run_view(db, run_id, task_id) if task_id is not None else None
    changed = _changes(db, run_id, before)
    what = f"task {request.task_code} in run {run_id}" if task else f"run {run_id}"
    text = f"{what} of {pipeline.code} is now {task.status if task else run.status}"
    if task is not None and task.rows_written is not None:
        text += f" with {task.rows_written} rows written"
    text += _lost_text(changed)
    if task is not None:
        text += _task_run_hint(run)
    return OperationResult("mark", "SUCCESS", action, ctx.actor.name, pipeline.code, text, run, task, changed)


def cancel(ctx: OperationContext, request: CancelRequest) -> OperationResult:
    """Cancel a run: its queued attempts end CANCELLED, running ones are asked to stop, and the run ends CANCELLED
    once none is live. Attempts whose owner died (an expired lease) are reconciled LOST first, so they do not keep
    the run waiting (B26)."""
    db = ctx.db
    with acting_as(ctx.actor):
        pipeline = find_pipeline(db, request.pipeline_code)
        run_id = resolve_run(db, pipeline, request.run, "cancel")
        before = _attempt_statuses(db, run_id)
        _reconcile(ctx)
        with db.write() as conn:
            row = call_in(db, conn, "cancel_run", run_id=run_id, reason=request.reason)[0]
            action = _record(db, conn, "cancel", request, pipeline, run_id, None)
        run = run_view(db, run_id)
    changed = _changes(db, run_id, before)
    text = f"run {run_id} of {pipeline.code} is {run.status}" + _lost_text(changed)
    if row.live_attempts:
        text += (f"; cancel requested: {row.live_attempts} attempt(s) still run, and the run ends CANCELLED once "
                 f"their owners have ended them (watch it with etl-craft status --pipeline-code {pipeline.code} "
                 f"--run-id {run_id})")
    return OperationResult("cancel", "SUCCESS", action, ctx.actor.name, pipeline.code, text, run, None, changed)


def reopen(ctx: OperationContext, request: ReopenRequest) -> OperationResult:
    """Reopen an ended run (named by id or key) so its tasks can run again; a run that had succeeded publishes its
    next output revision when it ends SUCCESS again."""
    if request.run.run_id is None and request.run.run_key is None:
        raise UsageError(f"reopen needs the run to reopen: give --run-id N or --run-key K (etl-craft history "
                         f"--pipeline-code {request.pipeline_code} lists the runs)")
    db = ctx.db
    with acting_as(ctx.actor):
        pipeline = find_pipeline(db, request.pipeline_code)
        run_id = resolve_run(db, pipeline, request.run, "reopen")
        with db.write() as conn:
            call_in(db, conn, "reopen_run", run_id=run_id, reason=request.reason)
            action = _record(db, conn, "reopen", request, pipeline, run_id, None)
        run = run_view(db, run_id)
    text = (f"run {run_id} of {pipeline.code} is {run.status} again"
            + (" (repair pending: ending SUCCESS publishes revision "
               f"{run.output_revision + 1})" if run.repair_pending else "")
            + f"; run its tasks with etl-craft run --pipeline-code {pipeline.code} --run-id {run_id}")
    return OperationResult("reopen", "SUCCESS", action, ctx.actor.name, pipeline.code, text, run)


def pause(ctx: OperationContext, request: PauseRequest) -> OperationResult:
    """Pause a pipeline: no run and no task of it starts until it is resumed; what already runs goes on."""
    db = ctx.db
    with acting_as(ctx.actor):
        pipeline = find_pipeline(db, request.pipeline_code)
        with db.write() as conn:
            row = call_in(db, conn, "pause_pipeline", pipeline_id=pipeline.pipeline_id, reason=request.reason)[0]
            action = _record(db, conn, "pause", request, pipeline, None, None)
        view = _pause_view(db, pipeline, int(row.pause_id))
    text = (f"pipeline {pipeline.code} is paused: it starts no run and no task until etl-craft resume "
            f"--pipeline-code {pipeline.code}")
    return OperationResult("pause", "SUCCESS", action, ctx.actor.name, pipeline.code, text, pause=view)


def resume(ctx: OperationContext, request: ResumeRequest) -> OperationResult:
    """Resume a paused pipeline: its runs and tasks start again at their next admission."""
    db = ctx.db
    with acting_as(ctx.actor):
        pipeline = find_pipeline(db, request.pipeline_code)
        with db.write() as conn:
            row = call_in(db, conn, "resume_pipeline", pipeline_id=pipeline.pipeline_id, reason=request.reason)[0]
            action = _record(db, conn, "resume", request, pipeline, None, None)
        view = _pause_view(db, pipeline, int(row.pause_id))
    text = f"pipeline {pipeline.code} is resumed (it had been paused since {view.paused_at:%Y-%m-%d %H:%M:%S} UTC)"
    return OperationResult("resume", "SUCCESS", action, ctx.actor.name, pipeline.code, text, pause=view)


@dataclass(frozen=True)
class ProjectPauseRequest:
    """Pause (verb "pause") or resume (verb "resume") every active pipeline of project `project_code`."""

    verb: str
    project_code: str
    reason: str | None = None


@dataclass(frozen=True)
class ProjectPauseResult:
    verb: str
    project_code: str
    actor: str
    pipelines: tuple[tuple[str, int], ...]  # (pipeline code, pause id), in code order


def pause_project(ctx: OperationContext, request: ProjectPauseRequest) -> ProjectPauseResult:
    """Pause or resume all of a project's pipelines in one call of pause_project or resume_project (one pause per
    pipeline), and record the request in AUD_ACTIONS once per pipeline, so each pipeline's audit shows it."""
    assert request.verb in ("pause", "resume"), request.verb
    db = ctx.db
    with acting_as(ctx.actor), db.write() as conn:
        rows = call_in(db, conn, f"{request.verb}_project", project_code=request.project_code,
                       reason=request.reason)
        arguments = json.dumps(masked(_flat(dataclasses.asdict(request))), sort_keys=True, default=str)
        for row in rows:
            call_in(db, conn, "record_action", command=request.verb, arguments=arguments,
                    pipeline_id=int(row.pipeline_id), run_id=None, task_id=None, host=host())
    done = tuple((str(r.pipeline_code), int(r.pause_id)) for r in rows)
    return ProjectPauseResult(request.verb, request.project_code, ctx.actor.name, done)


def project_pause_json(result: ProjectPauseResult) -> dict[str, Any]:
    """`etl-craft pause|resume --project-code P` without --pipeline-code: etl-craft/project-pause/1."""
    state = "paused" if result.verb == "pause" else "resumed"
    codes = ", ".join(code for code, _ in result.pipelines)
    return {"schema": "etl-craft/project-pause/1", "operation": result.verb, "project_code": result.project_code,
            "actor": result.actor, "pipelines": [{"pipeline_code": c, "pause_id": i} for c, i in result.pipelines],
            "message": f"project {result.project_code}: {len(result.pipelines)} pipeline(s) {state}: {codes}"}


# --- run selection ----------------------------------------------------------------------------------------------

def resolve_run(db: EngineDB, pipeline: Pipeline, ref: RunRef, operation: str) -> int:
    """The run `ref` names in `pipeline`; with neither id nor key, the pipeline's single run that has not ended.
    Refuses (listing the candidates) rather than guess, and never creates a run."""
    if ref.run_id is not None and ref.run_key is not None:
        raise UsageError("--run-id and --run-key both name the run; give one of them")
    history = f"etl-craft history --pipeline-code {pipeline.code} lists its runs"
    with db.read() as conn:
        if ref.run_id is not None:
            row = fetch_one(db, conn, "control_run", run_id=ref.run_id)
            if row is None or int(row["pipeline_id"]) != pipeline.pipeline_id:
                raise not_a_run_of(pipeline.code, ref.run_id, row["pipeline_code"] if row else None)
            return ref.run_id
        if ref.run_key is not None:
            keyed = fetch_one(db, conn, "control_run_by_key", pipeline_id=pipeline.pipeline_id, run_key=ref.run_key)
            if keyed is None:
                raise NotFoundError(f"pipeline {pipeline.code} has no run with key {ref.run_key}; {history}")
            return int(keyed["pipeline_run_id"])
        candidates = fetch_all(db, conn, "control_run_candidates", pipeline_id=pipeline.pipeline_id)
    if len(candidates) == 1:
        return int(candidates[0]["pipeline_run_id"])
    if not candidates:
        raise NotFoundError(f"pipeline {pipeline.code} has no run that has not ended (QUEUED or IN-PROGRESS), so "
                            f"{operation} cannot tell which run you mean; name one with --run-id or --run-key "
                            f"({history})")
    listed = "; ".join(f"run {c['pipeline_run_id']} (key {c['run_key']}, {c['trigger_kind']}, run date "
                       f"{as_date(c['run_date'])}, {c['status']})" for c in candidates)
    raise AmbiguousError(f"pipeline {pipeline.code} has {len(candidates)} runs that have not ended: {listed}; "
                         f"{operation} acts on one run: name it with --run-id or --run-key")


def _task_id(db: EngineDB, pipeline: Pipeline, task_code: str) -> int:
    with db.read() as conn:
        rows = fetch_all(db, conn, "control_task", pipeline_id=pipeline.pipeline_id, task_code=task_code)
        if rows:
            return int(rows[0]["task_id"])
        codes = [r["task_code"] for r in fetch_all(db, conn, "control_task_codes", pipeline_id=pipeline.pipeline_id)]
    raise NotFoundError(f"task {task_code} is not an active task of pipeline {pipeline.code}; its tasks are "
                        f"{', '.join(codes) or 'none'}")


# --- helpers ----------------------------------------------------------------------------------------------------

def _reconcile(ctx: OperationContext) -> None:
    """Expired leases become LOST (on this host at once, a live stuck process is stopped; elsewhere after two
    lease periods), as the engine's own act."""
    with acting_as(SYSTEM):
        reconcile(ctx.db, ctx.lease_seconds)


def _record(db: EngineDB, conn: sa.Connection, command: str, request: Any, pipeline: Pipeline, run_id: int | None,
            task_id: int | None) -> int:
    """The request, once, in AUD_ACTIONS (in the caller's transaction, so a refused request leaves no row)."""
    arguments = json.dumps(masked(_flat(dataclasses.asdict(request))), sort_keys=True, default=str)
    row = call_in(db, conn, "record_action", command=command, arguments=arguments, pipeline_id=pipeline.pipeline_id,
                  run_id=run_id, task_id=task_id, host=host())[0]
    return int(row.action_id)


def _flat(arguments: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in arguments.items():
        if isinstance(value, Mapping):
            flat.update({k: v for k, v in value.items() if v is not None})
        elif value is not None:
            flat[key] = value
    return flat


def run_view(db: EngineDB, run_id: int) -> RunView:
    with db.read() as conn:
        row = fetch_one(db, conn, "control_run", run_id=run_id)
    if row is None:
        raise NotFoundError(f"run {run_id} does not exist; etl-craft history --pipeline-code P lists the runs")
    return RunView(int(row["pipeline_run_id"]), row["pipeline_code"], row["run_key"], row["trigger_kind"],
                   as_date(row["run_date"]), row["status"], int(row["output_revision"]), row["repair_pending"] == "Y",
                   as_time(row["cancel_requested_at"]), as_time(row["end_date"]), row["ended_by"], row["message"])


def _task_run_view(db: EngineDB, run_id: int, task_id: int) -> TaskRunView:
    with db.read() as conn:
        row = fetch_one(db, conn, "control_task_run", run_id=run_id, task_id=task_id)
    assert row is not None, "mark_task_run creates the task run it marks"
    return TaskRunView(int(row["task_run_id"]), row["task_code"], row["status"], int(row["attempt_count"]),
                       None if row["rows_written"] is None else int(row["rows_written"]), as_time(row["end_date"]),
                       row["message"], row["error_message"])


def _pause_view(db: EngineDB, pipeline: Pipeline, pause_id: int) -> PauseView:
    with db.read() as conn:
        row = fetch_one(db, conn, "control_pause", pause_id=pause_id)
    assert row is not None, "pause_pipeline and resume_pipeline return the pause they wrote"
    paused_at = as_time(row["paused_at"])
    assert paused_at is not None
    return PauseView(int(row["pause_id"]), pipeline.code, paused_at, row["paused_by"], row["pause_reason"],
                     as_time(row["resumed_at"]), row["resumed_by"], row["resume_reason"])


def _attempt_statuses(db: EngineDB, run_id: int) -> dict[int, tuple[str, str]]:
    with db.read() as conn:
        return {int(r["attempt_id"]): (r["task_code"], r["status"])
                for r in fetch_all(db, conn, "control_run_attempts", run_id=run_id)}


def _changes(db: EngineDB, run_id: int, before: dict[int, tuple[str, str]]) -> tuple[AttemptChange, ...]:
    after = _attempt_statuses(db, run_id)
    return tuple(AttemptChange(attempt_id, code, before.get(attempt_id, (code, None))[1], status)
                 for attempt_id, (code, status) in sorted(after.items())
                 if before.get(attempt_id, (code, None))[1] != status)


def _lost_text(changed: tuple[AttemptChange, ...]) -> str:
    parts = [f"attempt {c.attempt_id} of {c.task_code} {c.from_status} -> {c.to_status}" for c in changed]
    return f" ({'; '.join(parts)})" if parts else ""


def _task_run_hint(run: RunView) -> str:
    if run.status != "IN-PROGRESS":
        return f"; run {run.pipeline_run_id} is {run.status}"
    return (f"; run {run.pipeline_run_id} is IN-PROGRESS: run what is left with etl-craft run --pipeline-code "
            f"{run.pipeline_code} --run-id {run.pipeline_run_id}, or end it with --finalize-only")


