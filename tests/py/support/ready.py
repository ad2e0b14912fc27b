"""Task runs and attempts in any status for the task-run and ready-set tests, written directly through an engine
write transaction (respecting the transition guards), so these tests depend on no other write-API function."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from etlcraft.core.states import state_machine
from etlcraft.engine.functions import call
from tests.py.support import rows
from tests.py.support.scenario import Project

T0 = datetime(2026, 1, 1, 6, 0, tzinfo=UTC)


def task_run(project: Project, run_id: int, task: str, status: str, rows_written: int | None = None,
             **columns: Any) -> int:
    """The task run of `task` in `run_id`, in `status` (CANCELLED goes through IN-PROGRESS)."""
    db = project.db
    with db.write() as conn:
        initial = "IN-PROGRESS" if status == "CANCELLED" else status
        task_run_id = rows.insert(db, conn, "AUD_TASK_RUN_LOG", "TASK_RUN_ID", PIPELINE_RUN_ID=run_id,
                                  TASK_ID=project.tasks[task], STATUS=initial, ROWS_WRITTEN=rows_written, **columns)
        if status != initial:
            rows.set_status(db, conn, state_machine().entity("TASK_RUN"), task_run_id, status)
    return task_run_id


def attempt(project: Project, task_run_id: int, status: str, owner: str = "host:1:a",
            lease_expires_at: datetime | None = None, number: int = 1) -> int:
    """An attempt of `task_run_id` taken QUEUED -> CLAIMED -> RUNNING as far as `status` needs."""
    db = project.db
    with db.write() as conn:
        attempt_id = rows.insert(db, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", TASK_RUN_ID=task_run_id,
                                 ATTEMPT_NUMBER=number, STATUS="QUEUED", QUEUED_AT=rows.ts(db, T0),
                                 REQUESTED_BY="tester@pytest", REQUESTED_BY_KIND="HUMAN")
        if status == "QUEUED":
            return attempt_id
        lease = lease_expires_at or datetime(2026, 1, 1, 7, 0, tzinfo=UTC)
        _update(project, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", attempt_id, STATUS="CLAIMED", OWNER_ID=owner,
                CLAIMED_AT=rows.ts(db, T0), LEASE_EXPIRES_AT=rows.ts(db, lease), HEARTBEAT_AT=rows.ts(db, T0))
        if status == "RUNNING":
            _update(project, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", attempt_id, STATUS="RUNNING",
                    STARTED_AT=rows.ts(db, T0))
    return attempt_id


def _update(project: Project, conn: sa.Connection, table: str, key: str, row_id: int, **values: Any) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    conn.execute(sa.text(f"UPDATE {project.db.qualify(table)} SET {assignments} WHERE {key} = :_id"),
                 {**values, "_id": row_id})


def pause(project: Project, pipeline: str) -> None:
    """An open pause of `pipeline` (pause_pipeline belongs to another area)."""
    db = project.db
    with db.write() as conn:
        rows.insert(db, conn, "AUD_PIPELINE_PAUSES", "PAUSE_ID", PIPELINE_ID=project.pipelines[pipeline],
                    PAUSED_AT=rows.ts(db, T0), PAUSED_BY="tester@pytest", PAUSED_BY_KIND="HUMAN", PAUSE_REASON="t")


def ready(project: Project, run_id: int) -> list[tuple[str, str]]:
    """ready_tasks as (task_code, decision) pairs, in the order returned."""
    return [(r.task_code, r.decision) for r in call(project.db, "ready_tasks", run_id=run_id)]


def ready_reasons(project: Project, run_id: int) -> dict[str, tuple[str, str]]:
    return {r.task_code: (r.decision, r.reason) for r in call(project.db, "ready_tasks", run_id=run_id)}
