"""Read views of runs for status, history and logs: what happened, from the Engine DB, changing nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from etlcraft.core.errors import AmbiguousError, NotFoundError, UsageError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all, fetch_one
from etlcraft.services.runs import find_pipeline, not_a_run_of
from etlcraft.services.values import required_time


@dataclass(frozen=True)
class TaskLine:
    task_code: str
    status: str  # NOT RUN when the task has no task run in this run
    attempts: int
    rows_written: int | None
    seconds: float | None
    attempt_id: int | None
    note: str


@dataclass(frozen=True)
class RunStatus:
    run: dict[str, Any]
    tasks: tuple[TaskLine, ...]
    pipeline_gate_wait: str | None = None  # what the run's pipeline gate waits for, while it waits


def _wait_note(wait: dict[str, Any]) -> str:
    return (f"waiting on its gate (look {wait['looks']}, next at {_utc(wait['next_check_at'])}, gives up at "
            f"{_utc(wait['wait_until'])}): {wait['waiting_for']}")


def _utc(value: Any) -> str:
    return required_time(value).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seconds(start: Any, end: Any) -> float | None:
    if start is None or end is None:
        return None
    return round((required_time(end) - required_time(start)).total_seconds(), 3)


def run_status(db: EngineDB, pipeline_code: str, run_id: int | None, run_key: str | None = None) -> RunStatus:
    """The run named by id or by key, else the pipeline's one active run (never "the latest")."""
    pipeline = find_pipeline(db, pipeline_code)
    with db.read() as conn:
        if run_id is not None and run_key is not None:
            raise UsageError("name the run by --run-id or by --run-key, not both")
        if run_key is not None:
            keyed = fetch_one(db, conn, "run_by_key", pipeline_id=pipeline.pipeline_id, run_key=run_key)
            if keyed is None:
                raise NotFoundError(f"pipeline {pipeline_code} has no run keyed {run_key!r}; "
                                    f"see etl-craft history --pipeline-code {pipeline_code}")
            run_id = int(keyed["pipeline_run_id"])
        elif run_id is None:
            active = fetch_all(db, conn, "active_runs", pipeline_id=pipeline.pipeline_id)
            if len(active) != 1:
                recent = fetch_all(db, conn, "run_history", pipeline_id=pipeline.pipeline_id, limit=5, before=None)
                listed = ", ".join(f"{r['pipeline_run_id']} ({r['status']})" for r in recent) or "none"
                error = AmbiguousError if active else NotFoundError
                raise error(f"pipeline {pipeline_code} has {len(active)} active runs; name one with --run-id "
                            f"(recent runs: {listed}; all of them: etl-craft history --pipeline-code {pipeline_code})")
            run_id = int(active[0]["pipeline_run_id"])
        run = fetch_one(db, conn, "run_header", run_id=run_id)
        if run is None or run["pipeline_id"] != pipeline.pipeline_id:
            raise not_a_run_of(pipeline_code, run_id, run["pipeline_code"] if run else None)
        return _status_of(db, conn, run)


def run_status_by_id(db: EngineDB, run_id: int) -> RunStatus:
    """Run `run_id`, of whichever pipeline (the HTTP API names runs by id alone): the document of run_status."""
    with db.read() as conn:
        run = fetch_one(db, conn, "run_header", run_id=run_id)
        if run is None:
            raise _no_run(run_id)
        return _status_of(db, conn, run)


def _status_of(db: EngineDB, conn: Connection, run: dict[str, Any]) -> RunStatus:
    rows = fetch_all(db, conn, "run_task_rows", run_id=run["pipeline_run_id"])
    waits = {w["task_id"]: w for w in fetch_all(db, conn, "run_open_gate_waits", run_id=run["pipeline_run_id"])}
    tasks = tuple(
        TaskLine(task_code=r["task_code"], status=r["status"] or "NOT RUN", attempts=int(r["attempt_count"] or 0),
                 rows_written=r["rows_written"], seconds=_seconds(r["start_date"], r["end_date"]),
                 attempt_id=r["attempt_id"], note=_wait_note(waits[r["task_id"]]) if r["task_id"] in waits and
                 not r["status"] else (r["error_message"] or r["message"] or "").splitlines()[0][:200]
                 if (r["error_message"] or r["message"]) else "")
        for r in rows
    )
    return RunStatus(run, tasks, _wait_note(waits[None]) if None in waits else None)


def run_history(db: EngineDB, pipeline_code: str, limit: int, before: int | None = None) -> list[dict[str, Any]]:
    """The pipeline's runs, newest first, at most `limit`; with `before`, only runs of smaller ids (the next
    page after the run `before`)."""
    pipeline = find_pipeline(db, pipeline_code)
    with db.read() as conn:
        return fetch_all(db, conn, "run_history", pipeline_id=pipeline.pipeline_id, limit=limit, before=before)


def pipeline_of_run(db: EngineDB, run_id: int) -> tuple[str, str]:
    """The codes of the pipeline run `run_id` belongs to and of its project, for requests that name a run by id
    alone (the run settles the project: pipeline codes are unique per project)."""
    with db.read() as conn:
        row = fetch_one(db, conn, "run_pipeline_project", run_id=run_id)
    if row is None:
        raise _no_run(run_id)
    return str(row["pipeline_code"]), str(row["project_code"])


def _no_run(run_id: int) -> NotFoundError:
    return NotFoundError(f"run {run_id} does not exist; etl-craft history --pipeline-code P lists the runs")


# --- JSON documents: the one serializer of each read (the CLI prints what these return) ---------------------------

def status_json(view: RunStatus) -> dict[str, Any]:
    """`etl-craft status`: etl-craft/run-status/1."""
    return {"schema": "etl-craft/run-status/1", "run": view.run, "tasks": [t.__dict__ for t in view.tasks],
            "pipeline_gate_wait": view.pipeline_gate_wait}


def history_json(pipeline_code: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """`etl-craft history`: etl-craft/run-history/1."""
    return {"schema": "etl-craft/run-history/1", "pipeline_code": pipeline_code, "runs": runs}
