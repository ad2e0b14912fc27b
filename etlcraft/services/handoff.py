"""`etl-craft run --pipeline-code P` while a server leads the Engine DB: the command hands the run to the server and
follows it to its end, instead of supervising it itself. One process then applies every slot limit and schedule
(docs/adr/0006-run-hands-over-to-the-server.md); task commands, backfills and --skip still work in the foreground,
under their own lease, which the server respects."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import date
from typing import Any

from etlcraft.config.loader import ProjectConfig
from etlcraft.core.enums import RunStatus
from etlcraft.core.errors import AmbiguousError, IncompleteError, RefusedByPolicyError
from etlcraft.core.process import host
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.overseer.driver import RunOutcome
from etlcraft.overseer.local import Interrupted, signals_as_interrupts
from etlcraft.services.runs import (
    Pipeline,
    RunRequest,
    action_arguments,
    create_run_settings,
    find_pipeline,
    named_run,
    run_date_of,
)
from etlcraft.supervisor.local import Ended

#: How often the followed run is read again.
POLL_SECONDS = 0.5
_ENDED = (RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.SKIPPED, RunStatus.CANCELLED)


def hand_over(db: EngineDB, config: ProjectConfig, request: RunRequest, server: dict[str, Any],
              on_event: Callable[[str], None] = lambda _: None) -> RunOutcome:
    """Create or choose the run as `etl-craft run` would, leave it to the server, and follow it until it ends."""
    pipeline = find_pipeline(db, request.pipeline_code)
    run_id, key = _the_run(db, config, pipeline, request, run_date_of(request, config, pipeline))
    who = f"overseer {server.get('overseer_id')} on {server.get('host')} pid {server.get('pid')}"
    call(db, "record_action", command="run", arguments=action_arguments(request, handed_to=who),
         pipeline_id=pipeline.pipeline_id, run_id=run_id, host=host())
    on_event(f"run {run_id} ({key}) of {pipeline.code} is run by the server ({who}); following it here: Ctrl-C stops "
             "following, not the run")
    try:
        with signals_as_interrupts():
            return _follow(db, run_id, on_event)
    except Interrupted as exc:
        raise IncompleteError(
            f"stopped following run {run_id} of {pipeline.code} ({exc}); the server goes on running it: etl-craft "
            f"status --pipeline-code {pipeline.code} --run-id {run_id}") from exc


def _the_run(db: EngineDB, config: ProjectConfig, pipeline: Pipeline, request: RunRequest,
             run_date: date) -> tuple[int, str]:
    """The run named by id or key, else the pipeline's single active run; a new key (or none) creates a QUEUED run
    for the server to admit."""
    with db.read() as conn:
        if request.run_id is not None:
            row = named_run(db, conn, pipeline, request.run_id)
            return _active(row), str(row["run_key"])
        if request.run_key is not None:
            found = fetch_one(db, conn, "run_by_key", pipeline_id=pipeline.pipeline_id, run_key=request.run_key)
            if found is not None:
                return _active(found), request.run_key
        else:
            active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
            if len(active) > 1:
                listed = "; ".join(f"run {r['pipeline_run_id']} ({r['run_key']}, {r['status']})" for r in active)
                raise AmbiguousError(f"pipeline {pipeline.code} has {len(active)} active runs: {listed}; "
                                     "name one with --run-id or --run-key")
            if active:
                return int(active[0]["pipeline_run_id"]), str(active[0]["run_key"])
    key = request.run_key or f"manual:{uuid.uuid4()}"
    with db.write() as conn:
        row = call_in(db, conn, "create_run", pipeline_id=pipeline.pipeline_id, run_key=key, run_date=run_date,
                      status="QUEUED", reason=request.reason, **create_run_settings(config))[0]
    return int(row.pipeline_run_id), key


def _active(row: dict[str, Any]) -> int:
    if row["status"] not in (RunStatus.QUEUED, RunStatus.IN_PROGRESS):
        raise RefusedByPolicyError(
            f"run {row['pipeline_run_id']} is {row['status']}, so there is nothing to run; start a new run (another "
            "--run-key), or reopen this one to repair it")
    return int(row["pipeline_run_id"])


def _follow(db: EngineDB, run_id: int, on_event: Callable[[str], None]) -> RunOutcome:
    """Say each task's status as it changes, until the run ends; the run's outcome."""
    seen: dict[str, tuple[str, Any]] = {}
    while True:
        with db.read() as conn:
            header = fetch_one(db, conn, "run_header", run_id=run_id)
            tasks = fetch_all(db, conn, "run_task_rows", run_id=run_id)
        for task in tasks:
            state = (task["status"], task["attempt_id"])
            if task["status"] is not None and seen.get(task["task_code"]) != state:
                seen[task["task_code"]] = state
                on_event(f"{task['task_code']}: {task['status']}"
                         + (f" (attempt {task['attempt_id']} {task['attempt_status']})" if task["attempt_id"] else ""))
        assert header is not None
        if header["status"] in _ENDED:
            message = f"run {run_id} ended {header['status']}"
            ended = [Ended(int(t["attempt_id"]), str(t["task_code"]), str(t["attempt_status"]), None)
                     for t in tasks if t["attempt_id"] is not None]
            return RunOutcome(run_id, str(header["status"]), message, ended=ended)
        time.sleep(POLL_SECONDS)
