"""Work left for the server to drive: backfill runs created QUEUED, and a task's rerun queued in its run.

`etl-craft run --backfill FROM:TO --init-only` and `run --rerun T --init-only`, and the HTTP API's backfill and
rerun, call these: they decide and write everything through the Engine DB's functions (create_run,
judge_task_command, reopen_run, queue_attempt, record_action) and run nothing. A leading server admits the queued
runs oldest first, one at a time per pipeline, and adopts a reopened run to run what is queued and what becomes
ready in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, UsageError, WaitingError
from etlcraft.core.process import host
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in
from etlcraft.engine.queries import fetch_all
from etlcraft.services.runs import (
    RunRequest,
    action_arguments,
    backfill_key,
    create_run_settings,
    find_pipeline,
    reconcile,
    require_task,
    select_run,
)
from etlcraft.services.values import as_date

#: The most dates one backfill request may queue.
MAX_BACKFILL_DAYS = 366


@dataclass(frozen=True)
class QueuedRun:
    pipeline_run_id: int
    run_key: str
    run_date: date
    status: str


@dataclass(frozen=True)
class BackfillQueued:
    pipeline_code: str
    runs: tuple[QueuedRun, ...]
    message: str


@dataclass(frozen=True)
class RerunQueued:
    pipeline_code: str
    pipeline_run_id: int
    task_code: str
    attempt_id: int
    reopened: bool
    message: str


def queue_backfill(db: EngineDB, config: ProjectConfig, request: RunRequest, first: date,
                   last: date) -> BackfillQueued:
    """One QUEUED BACKFILL run per date from first to last, created in date order (keys backfill:<day>, then
    backfill:<day>#2, ... when the date was backfilled before; a date whose backfill run has not ended keeps it),
    in one transaction with the request's AUD_ACTIONS row."""
    if not request.reason:
        raise UsageError("a backfill needs a reason: it is recorded on every run it creates")
    if last < first:
        raise UsageError(f"the backfill {first}:{last} ends before it starts; give FROM <= TO")
    days = (last - first).days + 1
    if days > MAX_BACKFILL_DAYS:
        raise UsageError(f"the backfill {first}:{last} covers {days} dates, expected at most {MAX_BACKFILL_DAYS}; "
                         "split it into several backfills")
    pipeline = find_pipeline(db, request.pipeline_code)
    runs = []
    with db.write() as conn:
        for day in (first + timedelta(days=n) for n in range(days)):
            key, found = backfill_key(db, conn, pipeline.pipeline_id, day)
            if found is None:
                found = call_in(db, conn, "create_run", pipeline_id=pipeline.pipeline_id, run_key=key, run_date=day,
                                trigger_kind="BACKFILL", status="QUEUED", reason=request.reason,
                                **create_run_settings(config))[0]._asdict()
            runs.append(QueuedRun(int(found["pipeline_run_id"]), key, day, str(found["status"])))
        call_in(db, conn, "record_action", command="run --backfill --init-only",
                arguments=action_arguments(request, backfill=f"{first}:{last}"), pipeline_id=pipeline.pipeline_id,
                host=host())
    message = (f"backfill of {pipeline.code}: {days} run(s) from {first} to {last} are queued for the server, which "
               f"runs them in date order (etl-craft history --pipeline-code {pipeline.code})")
    return BackfillQueued(pipeline.code, tuple(runs), message)


def queue_rerun(db: EngineDB, config: ProjectConfig, request: RunRequest) -> RerunQueued:
    """Queue task request.task again in its run for the server: the Engine DB judges the command (RERUN: a task
    that FAILED or was CANCELLED), reopens an ended run, and queues the attempt, in one transaction with the
    request's AUD_ACTIONS row; a refused request changes nothing (B31). The server runs the attempt, then the tasks
    its failure had skipped and every other task that becomes ready in the run."""
    task = request.task
    assert task is not None and task.rerun
    pipeline = find_pipeline(db, request.pipeline_code)
    require_task(db, pipeline, task.task_code)
    reconcile(db, config.orchestration.lease_seconds)
    run_id = int(select_run(db, config, pipeline, request)["pipeline_run_id"])
    with db.read() as conn:
        rows = {r["task_code"]: r for r in fetch_all(db, conn, "run_task_rows", run_id=run_id)}
    if task.task_code not in rows:
        raise NotFoundError(f"task {task.task_code} is not an active task of pipeline {pipeline.code}")
    task_id = int(rows[task.task_code]["task_id"])
    where = f"in run {run_id} of {pipeline.code}"
    with db.write() as conn:
        judged = call_in(db, conn, "judge_task_command", run_id=run_id, task_id=task_id, command="RERUN")[0]
        if judged.decision == "REFUSE":
            raise RefusedByPolicyError(judged.reason)
        if judged.reopen:
            call_in(db, conn, "reopen_run", run_id=run_id, reason=request.reason or f"rerun of {task.task_code}")
        call_in(db, conn, "record_action", command="run --rerun --init-only", arguments=action_arguments(request),
                pipeline_id=pipeline.pipeline_id, run_id=run_id, task_id=task_id, host=host())
        if judged.decision == "CLAIM":
            attempt_id = int(judged.attempt_id)
        else:
            queued = call_in(db, conn, "queue_attempt", run_id=run_id, task_id=task_id, rerun=judged.rerun)[0]
            if queued.outcome != "QUEUED":
                raise WaitingError(f"task {task.task_code} {where} waits: {queued.reason}; nothing was recorded")
            attempt_id = int(queued.attempt_id)
    message = (f"{task.task_code}: attempt {attempt_id} is queued {where}" + (" (the run was reopened)"
               if judged.reopen else "") + "; the server runs it, then what becomes ready in the run")
    return RerunQueued(pipeline.code, run_id, task.task_code, attempt_id, bool(judged.reopen), message)


# --- JSON documents -----------------------------------------------------------------------------------------------

def backfill_queued_json(done: BackfillQueued) -> dict[str, Any]:
    """`etl-craft run --backfill FROM:TO --init-only`: etl-craft/backfill-queued/1."""
    return {"schema": "etl-craft/backfill-queued/1", "pipeline_code": done.pipeline_code, "message": done.message,
            "runs": [{"pipeline_run_id": r.pipeline_run_id, "run_key": r.run_key,
                      "run_date": as_date(r.run_date).isoformat(), "status": r.status} for r in done.runs]}


def rerun_queued_json(done: RerunQueued) -> dict[str, Any]:
    """`etl-craft run --rerun T --init-only`: etl-craft/rerun-queued/1."""
    return {"schema": "etl-craft/rerun-queued/1", "pipeline_code": done.pipeline_code,
            "pipeline_run_id": done.pipeline_run_id, "task_code": done.task_code, "attempt_id": done.attempt_id,
            "reopened": done.reopened, "message": done.message}
