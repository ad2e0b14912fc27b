"""Running a pipeline on this machine: choose or create the run by its key, reconcile, own it, drive it to its end."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.actor import current_actor
from etlcraft.core.errors import AmbiguousError, NotFoundError, RefusedByPolicyError
from etlcraft.core.faults import fault_point
from etlcraft.core.process import host, is_alive, owner_id
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.overseer.local import RunLoop, RunOutcome, RunSettings
from etlcraft.supervisor.child import ChildRequest


@dataclass(frozen=True)
class RunRequest:
    pipeline_code: str
    run_key: str | None = None
    run_id: int | None = None
    run_date: date | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Pipeline:
    pipeline_id: int
    code: str
    slots: int | None


def find_pipeline(db: EngineDB, code: str) -> Pipeline:
    with db.read() as conn:
        rows = fetch_all(db, conn, "pipeline_by_code", code=code)
    if not rows:
        raise NotFoundError(f"pipeline {code} does not exist or is switched off; list pipelines with etl-craft list")
    if len(rows) > 1:
        projects = ", ".join(r["project_code"] for r in rows)
        raise AmbiguousError(f"pipeline {code} exists in several projects ({projects}); etl-craft cannot tell which")
    row = rows[0]
    return Pipeline(int(row["pipeline_id"]), code, row["max_parallel_tasks"])


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
               config_sha256: str | None) -> int:
    """The run this command drives: the one named by id or key (a key that does not exist yet is created), else
    the pipeline's single active run, else a new one. Never "the latest"."""
    if request.run_id is not None:
        with db.read() as conn:
            row = fetch_one(db, conn, "run_header", run_id=request.run_id)
        if row is None or row["pipeline_id"] != pipeline.pipeline_id:
            raise NotFoundError(f"run {request.run_id} is not a run of pipeline {pipeline.code}; "
                                f"see etl-craft history --pipeline_code {pipeline.code}")
        return _must_be_in_progress(int(row["pipeline_run_id"]), str(row["status"]))
    if request.run_key is None:
        with db.read() as conn:
            active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
        if len(active) > 1:
            listed = "; ".join(f"run {r['pipeline_run_id']} ({r['run_key']}, {r['status']})" for r in active)
            raise AmbiguousError(f"pipeline {pipeline.code} has {len(active)} active runs: {listed}; "
                                 "name one with --run-id or --run-key")
        if active:
            return _must_be_in_progress(int(active[0]["pipeline_run_id"]), str(active[0]["status"]))
    key = request.run_key or f"manual:{uuid.uuid4()}"
    row = call(db, "create_run", pipeline_id=pipeline.pipeline_id, run_key=key, run_date=run_date, status="QUEUED",
               reason=request.reason, config_sha256=config_sha256)[0]
    if row.status == "QUEUED":
        admitted = call(db, "admit_run", run_id=row.pipeline_run_id)[0]
        if admitted.status != "IN-PROGRESS":
            raise RefusedByPolicyError(
                f"run {row.pipeline_run_id} ({key}) of {pipeline.code} waits: {admitted.unsatisfied} dependency(ies) "
                "on other pipelines are not met; see the gate decisions with etl-craft status"
            )
        return int(row.pipeline_run_id)
    return _must_be_in_progress(int(row.pipeline_run_id), str(row.status))


def _must_be_in_progress(run_id: int, status: str) -> int:
    if status != "IN-PROGRESS":
        raise RefusedByPolicyError(
            f"run {run_id} is {status}, so there is nothing to run; start a new run (another --run-key), or "
            "reopen this one to repair it"
        )
    return run_id


def task_timeouts(db: EngineDB, run_id: int) -> Callable[[int], float | None]:
    """TASK_TIMEOUT_SECONDS per task of the run's pipeline (0 or absent: no limit)."""
    with db.read() as conn:
        rows = fetch_all(db, conn, "run_task_rows", run_id=run_id)
        limits: dict[int, float] = {}
        for row in rows:
            for parameter in fetch_all(db, conn, "task_parameters_of", task_id=row["task_id"]):
                if parameter["parameter_name"].upper() == "TASK_TIMEOUT_SECONDS" and parameter["parameter_value"]:
                    limits[int(row["task_id"])] = float(parameter["parameter_value"])
    return lambda task_id: limits.get(task_id) or None


def run_pipeline(db: EngineDB, config: ProjectConfig, request: RunRequest,
                 on_event: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """Create or resume the run `request` names and drive it to its end in the foreground."""
    orchestration = config.orchestration
    pipeline = find_pipeline(db, request.pipeline_code)
    lease = orchestration.lease_seconds
    reconcile(db, lease)
    run_date = request.run_date or datetime.now(orchestration.zone).date()
    run_id = choose_run(db, pipeline, request, run_date, config.sha256)
    me = owner_id()
    call(db, "start_run", run_id=run_id, owner_id=me, lease_seconds=lease)
    fault_point("run_created")
    on_event(f"run {run_id} of {pipeline.code} supervised by {me}")
    actor = current_actor()
    settings = RunSettings(
        owner_id=me, slots=pipeline.slots or orchestration.max_parallel_tasks, lease_seconds=lease,
        heartbeat_seconds=orchestration.heartbeat_seconds,
        log_dir=config.project_dir / ".etl-craft" / "logs" / pipeline.code / str(run_id),
        child=ChildRequest(
            attempt_id=0, owner_id=me, project_dir=str(config.project_dir), engine_url=str(db.url.render_as_string(
                hide_password=False)), engine_schema=db.schema or "etl_craft",
            engine_password=config.secret_value(config.engine), log_path="", actor_name=actor.name,
            actor_kind=str(actor.kind), lease_seconds=lease),
    )
    return RunLoop(db, run_id, settings, actor, task_timeouts(db, run_id), on_event).run()


def attempt_log(db: EngineDB, attempt_id: int) -> tuple[dict[str, Any], str]:
    """An attempt's row and its log: the log file when it is still there, else the tail kept in TASK_LOG."""
    with db.read() as conn:
        row = fetch_one(db, conn, "attempt_row", attempt_id=attempt_id)
    if row is None:
        raise NotFoundError(f"attempt {attempt_id} does not exist; see etl-craft status --pipeline_code P")
    path = row.get("log_path")
    if path and Path(path).is_file():
        return row, Path(path).read_text(encoding="utf-8", errors="replace")
    return row, row.get("task_log") or ""
