"""Upstream history, task runs and attempts for the gate, finalize and control contract tests, on either dialect.

Task runs and attempts are moved through their statuses with plain statements in an engine write transaction
(respecting the transition triggers), so these tests depend only on the functions they test and on 010_runs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.functions import call
from tests.py.support.scenario import _TABLES, SETUP_BYPASS, Project

T0 = datetime(2026, 1, 2, 6, 0, tzinfo=UTC)
ENDED = ("SUCCESS", "FAILED", "SKIPPED", "CANCELLED")


def execute(project: Project, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    """Run one statement in an engine write transaction; {TABLE} names are qualified, {now} is the clock."""
    names = {t: project.db.qualify(t) for t in _TABLES} | {"now": project.db.now_sql}
    with project.db.write() as conn:
        result = conn.execute(sa.text(sql.format(**names)), params)
        return [tuple(r) for r in result] if result.returns_rows else []


def task_run(project: Project, run_id: int, task: str, status: str = "SUCCESS", rows_written: int | None = None,
             attempts: int = 1) -> int:
    """A task run of `task` in run `run_id`, created IN-PROGRESS and moved to `status` (ended now when ended)."""
    [(task_run_id,)] = execute(
        project, "INSERT INTO {AUD_TASK_RUN_LOG} (PIPELINE_RUN_ID, TASK_ID, STATUS, ATTEMPT_COUNT, START_DATE)"
        " VALUES (:run, :task, 'IN-PROGRESS', :attempts, {now}) RETURNING TASK_RUN_ID",
        run=run_id, task=project.tasks[task], attempts=attempts)
    if status != "IN-PROGRESS":
        set_task_run(project, task_run_id, status, rows_written)
    return int(task_run_id)


def set_task_run(project: Project, task_run_id: int, status: str, rows_written: int | None = None) -> None:
    """Move a task run to `status` (END_DATE now when it ends, NULL when it goes back IN-PROGRESS)."""
    end = "NULL" if status == "IN-PROGRESS" else "{now}"
    execute(project, "UPDATE {AUD_TASK_RUN_LOG} SET STATUS = :status, ROWS_WRITTEN = :rows, END_DATE = " + end
            + " WHERE TASK_RUN_ID = :id", status=status, rows=rows_written, id=task_run_id)


def attempt(project: Project, task_run_id: int, status: str = "RUNNING", owner: str = "host:1:a") -> int:
    """An attempt of a task run, inserted QUEUED and moved QUEUED -> CLAIMED -> RUNNING -> `status`."""
    [(number,)] = execute(project, "SELECT COALESCE(MAX(ATTEMPT_NUMBER), 0) + 1 FROM {AUD_TASK_ATTEMPTS}"
                                   " WHERE TASK_RUN_ID = :id", id=task_run_id)
    [(attempt_id,)] = execute(
        project, "INSERT INTO {AUD_TASK_ATTEMPTS} (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, REQUESTED_BY,"
        " REQUESTED_BY_KIND) VALUES (:id, :n, 'QUEUED', {now}, 'tester@pytest', 'HUMAN') RETURNING ATTEMPT_ID",
        id=task_run_id, n=number)
    if status != "QUEUED":
        move_attempt(project, int(attempt_id), status, owner)
    return int(attempt_id)


def move_attempt(project: Project, attempt_id: int, status: str, owner: str = "host:1:a") -> None:
    """Move a live attempt on to `status` through the statuses the state machine allows."""
    [(current,)] = execute(project, "SELECT STATUS FROM {AUD_TASK_ATTEMPTS} WHERE ATTEMPT_ID = :id", id=attempt_id)
    live = ["QUEUED", "CLAIMED", "RUNNING"]
    path = live[:live.index(status) + 1] if status in live else [*live, status]
    steps = [status] if status == "CANCELLED" else path[path.index(current) + 1:]
    for step in steps:
        sets = {"CLAIMED": "OWNER_ID = :owner, CLAIMED_AT = {now}", "RUNNING": "STARTED_AT = {now}"}.get(
            step, "ENDED_AT = {now}")
        execute(project, "UPDATE {AUD_TASK_ATTEMPTS} SET STATUS = :status, " + sets + " WHERE ATTEMPT_ID = :id",
                status=step, id=attempt_id, **({"owner": owner} if step == "CLAIMED" else {}))


def finish(project: Project, attempt_id: int, status: str = "SUCCESS", rows_written: int | None = None) -> None:
    """End a live attempt and write its task run's summary, as finish_attempt does."""
    move_attempt(project, attempt_id, status)
    summary = {"TIMED_OUT": "FAILED", "LOST": "FAILED"}.get(status, status)
    [(task_run_id,)] = execute(project, "SELECT TASK_RUN_ID FROM {AUD_TASK_ATTEMPTS} WHERE ATTEMPT_ID = :id",
                               id=attempt_id)
    set_task_run(project, int(task_run_id), summary, rows_written)


def upstream_run(project: Project, pipeline: str, key: str, status: str = "SUCCESS", trigger_kind: str = "MANUAL",
                 rows: dict[str, int] | None = None) -> int:
    """A run of `pipeline` that ended `status`: its task runs in `rows` (task code: rows written) end SUCCESS,
    then an operator mark sets the run's status."""
    run_id = project.run(pipeline, key=key, trigger_kind=trigger_kind)
    for task, written in (rows or {}).items():
        task_run(project, run_id, task, "SUCCESS", rows_written=written)
    call(project.db, "mark_run", run_id=run_id, status=status, reason="upstream history for the test")
    return run_id


#: The decisions a test's set-up records (Project.run: a run created IN-PROGRESS bypasses its pipeline gate).
_NOT_SETUP = f" AND REASON NOT LIKE '%{SETUP_BYPASS}'"


def decisions(project: Project, run_id: int) -> list[tuple[Any, ...]]:
    """(dependency id, result, selected run, selected task run, revision, attempt, task run) of a run's decisions,
    less those of the test's set-up."""
    return project.rows(
        "SELECT COALESCE(PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID), RESULT, SELECTED_PIPELINE_RUN_ID,"
        " SELECTED_TASK_RUN_ID, SELECTED_REVISION, ATTEMPT_ID, TASK_RUN_ID FROM {AUD_GATE_DECISIONS}"
        " WHERE PIPELINE_RUN_ID = :run" + _NOT_SETUP + " ORDER BY DECISION_ID", run=run_id)


def reasons(project: Project, run_id: int) -> list[str]:
    return [r[0] for r in project.rows("SELECT REASON FROM {AUD_GATE_DECISIONS} WHERE PIPELINE_RUN_ID = :run"
                                       + _NOT_SETUP + " ORDER BY DECISION_ID", run=run_id)]


def consumption(project: Project, run_id: int | None = None) -> list[tuple[Any, ...]]:
    """(run, pipeline dependency, consumed run, consumed revision, decision) rows, of one run or all."""
    where = "" if run_id is None else " WHERE PIPELINE_RUN_ID = :run"
    return project.rows(
        "SELECT PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_REVISION, DECISION_ID"
        " FROM {AUD_DEPENDENCY_CONSUMPTION}" + where + " ORDER BY CONSUMPTION_ID", run=run_id)


def run_row(project: Project, run_id: int) -> tuple[Any, ...]:
    """The columns of a run that admission and finalization write."""
    [row] = project.rows(
        "SELECT STATUS, START_DATE, END_DATE, OWNER_ID, LEASE_EXPIRES_AT, ENDED_BY, ENDED_BY_KIND, SLA_STATUS,"
        " OUTPUT_REVISION, REPAIR_PENDING, MESSAGE FROM {AUD_PIPELINES_RUN_LOG} WHERE PIPELINE_RUN_ID = :id",
        id=run_id)
    return row


def snapshot(project: Project) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the tables these functions write, to prove a refused call changed nothing."""
    keys = {"AUD_PIPELINES_RUN_LOG": "PIPELINE_RUN_ID", "AUD_TASK_RUN_LOG": "TASK_RUN_ID",
            "AUD_TASK_ATTEMPTS": "ATTEMPT_ID", "AUD_GATE_DECISIONS": "DECISION_ID",
            "AUD_DEPENDENCY_CONSUMPTION": "CONSUMPTION_ID", "AUD_PIPELINE_PAUSES": "PAUSE_ID",
            "AUD_RUN_INTERVENTIONS": "INTERVENTION_ID"}
    return {t: project.rows(f"SELECT * FROM {{{t}}} ORDER BY {k}") for t, k in keys.items()}


def as_utc(value: Any) -> datetime | None:
    """A stored time read back as an aware UTC datetime, on either dialect."""
    if value is None:
        return None
    stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
    return stamp.astimezone(UTC)
