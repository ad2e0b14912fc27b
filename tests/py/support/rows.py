"""Write fixture rows through an engine connection, on either dialect, with plain SQL."""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from etlcraft.core.states import Entity
from etlcraft.engine.db import EngineDB, format_timestamp


def ts(db: EngineDB, value: datetime | None = None) -> Any:
    value = value or datetime(2026, 1, 1, tzinfo=UTC)
    return value if db.is_postgres else format_timestamp(value)


def insert(db: EngineDB, conn: sa.Connection, table: str, key: str, **values: Any) -> int:
    """INSERT one row and return its generated key."""
    columns = ", ".join(values)
    binds = ", ".join(f":{name}" for name in values)
    sql = f"INSERT INTO {db.qualify(table)} ({columns}) VALUES ({binds}) RETURNING {key}"
    return int(conn.execute(sa.text(sql), values).scalar_one())


def project_pipeline_task(db: EngineDB, conn: sa.Connection, suffix: str = "") -> tuple[int, int, int]:
    project = insert(db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE=f"proj{suffix}")
    pipeline = insert(db, conn, "CFG_PIPELINES", "PIPELINE_ID", PROJECT_ID=project, PIPELINE_CODE=f"pipe{suffix}")
    task = insert(db, conn, "CFG_TASKS", "TASK_ID", PIPELINE_ID=pipeline, TASK_CODE=f"task{suffix}",
                  HANDLER="SQL", ACTION="OVERWRITE_TABLE", SQL_FILE="t.sql", TARGET_OBJECT="main.t")
    return project, pipeline, task


def run(db: EngineDB, conn: sa.Connection, pipeline: int, key: str, status: str = "IN-PROGRESS") -> int:
    return insert(db, conn, "AUD_PIPELINES_RUN_LOG", "PIPELINE_RUN_ID", PIPELINE_ID=pipeline, RUN_KEY=key,
                  TRIGGER_KIND="MANUAL", RUN_DATE="2026-01-01", STATUS=status, QUEUED_AT=ts(db),
                  STARTED_BY="tester@pytest", STARTED_BY_KIND="HUMAN")


def task_run(db: EngineDB, conn: sa.Connection, run_id: int, task: int, status: str = "IN-PROGRESS") -> int:
    return insert(db, conn, "AUD_TASK_RUN_LOG", "TASK_RUN_ID", PIPELINE_RUN_ID=run_id, TASK_ID=task, STATUS=status)


def attempt(db: EngineDB, conn: sa.Connection, task_run_id: int, number: int = 1) -> int:
    return insert(db, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", TASK_RUN_ID=task_run_id, ATTEMPT_NUMBER=number,
                  STATUS="QUEUED", QUEUED_AT=ts(db), REQUESTED_BY="tester@pytest", REQUESTED_BY_KIND="HUMAN")


def path_to(entity: Entity, target: str) -> list[str]:
    """The statuses a new row goes through to reach `target` by allowed changes (initial status first)."""
    queue = deque([[s] for s in entity.initial])
    seen = set(entity.initial)
    while queue:
        path = queue.popleft()
        if path[-1] == target:
            return path
        for nxt in entity.allowed_from(path[-1]):
            if nxt not in seen:
                seen.add(nxt)
                queue.append([*path, nxt])
    raise AssertionError(f"{entity.name}: {target} cannot be reached from {entity.initial}")


def set_status(db: EngineDB, conn: sa.Connection, entity: Entity, row_id: int, status: str) -> None:
    conn.execute(
        sa.text(f"UPDATE {db.qualify(entity.table)} SET STATUS = :s WHERE {entity.key} = :id"),
        {"s": status, "id": row_id},
    )
