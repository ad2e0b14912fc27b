"""Queued attempts and row snapshots for the attempt and lease contract tests, on either dialect.

Attempts are queued here with plain inserts through an engine write transaction (the task run IN-PROGRESS with
ATTEMPT_COUNT = n, the attempt QUEUED with ATTEMPT_NUMBER = n), as queue_attempt will; every later change goes
through the write API under test.

A pipeline has at most one IN-PROGRESS run (ux_one_running_run), so every run key has a pipeline of its own, with
the same tasks; a test that needs successive runs of one pipeline (one task's offset, say) ends the earlier run
and names its key in pipeline_of.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.engine.functions import call
from tests.py.support.scenario import Project

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OWNER = "host-a:100:1700000000:0a0a0a0a"
OTHER = "host-b:200:1700000001:0b0b0b0b"

# Every table an attempt function may write, with the order that makes a snapshot comparable.
WRITTEN = {
    "AUD_PIPELINES_RUN_LOG": "PIPELINE_RUN_ID",
    "AUD_TASK_RUN_LOG": "TASK_RUN_ID",
    "AUD_TASK_ATTEMPTS": "ATTEMPT_ID",
    "AUD_TASK_OFFSETS": "TASK_ID",
    "AUD_DEPENDENCY_CONSUMPTION": "CONSUMPTION_ID",
    "AUD_RUN_INTERVENTIONS": "INTERVENTION_ID",
}


@dataclass(frozen=True)
class Queued:
    attempt_id: int
    task_run_id: int
    run_id: int


def stamp(db: EngineDB, value: datetime) -> Any:
    """A time as the dialect stores it (SQLite: fixed-width UTC text)."""
    return value if db.is_postgres else format_timestamp(value)


def as_utc(value: Any) -> datetime | None:
    """A stored time read back as an aware UTC datetime, on either dialect."""
    if value is None:
        return None
    stamp_ = datetime.fromisoformat(value) if isinstance(value, str) else value
    return stamp_.astimezone(UTC)


def _insert(db: EngineDB, conn: sa.Connection, table: str, key: str, **values: Any) -> int:
    columns, binds = ", ".join(values), ", ".join(f":{k}" for k in values)
    sql = f"INSERT INTO {db.qualify(table)} ({columns}) VALUES ({binds}) RETURNING {key}"
    return int(conn.execute(sa.text(sql), values).scalar_one())


class Attempts:
    """A project in which each run key has a pipeline of its own ('orders_<key>', tasks 'load' (SQL) and 'ingest'
    (PYTHON)), and helpers to queue and read attempts."""

    def __init__(self, db: EngineDB) -> None:
        self.db = db
        self.project = Project(db)
        self._pipelines: dict[str, str] = {}
        self._tasks: dict[tuple[str, str], int] = {}
        self._runs: dict[str, int] = {}

    def pipeline(self, key: str = "manual:1", *, pipeline_of: str | None = None) -> str:
        """The code of run key `key`'s pipeline: on first use, the pipeline of run key `pipeline_of` when given (its
        run must have ended by the time `key` runs), else a new pipeline 'orders_<key>' with tasks 'load' and
        'ingest'."""
        if key not in self._pipelines:
            if pipeline_of is not None:
                self._pipelines[key] = self.pipeline(pipeline_of)
            else:
                code = "orders_" + re.sub(r"[^A-Za-z0-9_]", "_", key)
                self.project.pipeline(code)
                self._tasks[code, "load"] = self.project.task(code, "load")
                self._tasks[code, "ingest"] = self.project.task(code, "ingest", handler="PYTHON")
                self._pipelines[key] = code
        elif pipeline_of is not None:
            assert self._pipelines[key] == self.pipeline(pipeline_of), f"run key {key} has a pipeline already"
        return self._pipelines[key]

    def task_id(self, task: str = "load", key: str = "manual:1") -> int:
        """The TASK_ID of `task` ('load' or 'ingest') in run key `key`'s pipeline."""
        return self._tasks[self.pipeline(key), task]

    def run(self, key: str = "manual:1", status: str = "IN-PROGRESS", *, pipeline_of: str | None = None) -> int:
        """The run with run key `key` of its pipeline (see pipeline), created (IN-PROGRESS, or QUEUED) by create_run
        when missing."""
        if key not in self._runs:
            self._runs[key] = self.project.run(self.pipeline(key, pipeline_of=pipeline_of), key=key, status=status)
        return self._runs[key]

    def depends(self, task: str, on: int, key: str = "manual:1") -> int:
        """A SUCCESS task dependency of `task` in run key `key`'s pipeline on task id `on`: its TASK_DEPENDENCY_ID."""
        task_id = self.task_id(task, key)  # creates the pipeline first: its own write transaction
        with self.db.write() as conn:
            return _insert(self.db, conn, "CFG_TASK_DEPENDENCY", "TASK_DEPENDENCY_ID", TASK_ID=task_id,
                           DEPENDS_ON_TASK_ID=on, DEPENDENCY_TYPE="SUCCESS", CONSUME_REPAIRS="Y")

    def queue(self, task: str = "load", *, key: str = "manual:1", pipeline_of: str | None = None, pool: str = "default",
              slot_kind: str | None = None, priority: int = 0, not_before: datetime | None = None,
              queued_at: datetime | None = None) -> Queued:
        """Queue the next attempt of the task's task run in run `key` (creating the run, see run, and the task run
        IN-PROGRESS)."""
        run_id = self.run(key, pipeline_of=pipeline_of)
        task_id = self.task_id(task, key)
        kind = slot_kind or ("ingestion" if task == "ingest" else "warehouse")
        with self.db.write() as conn:
            task_runs = self.db.qualify("AUD_TASK_RUN_LOG")
            found = conn.execute(sa.text(f"SELECT TASK_RUN_ID, ATTEMPT_COUNT FROM {task_runs}"
                                         " WHERE PIPELINE_RUN_ID = :r AND TASK_ID = :t"),
                                 {"r": run_id, "t": task_id}).first()
            if found is None:
                task_run_id, number = _insert(self.db, conn, "AUD_TASK_RUN_LOG", "TASK_RUN_ID", PIPELINE_RUN_ID=run_id,
                                              TASK_ID=task_id, STATUS="IN-PROGRESS", ATTEMPT_COUNT=1), 1
            else:
                task_run_id, number = int(found[0]), int(found[1]) + 1
                conn.execute(sa.text(f"UPDATE {task_runs} SET STATUS = 'IN-PROGRESS', END_DATE = NULL,"
                                     " ATTEMPT_COUNT = :n WHERE TASK_RUN_ID = :id"), {"n": number, "id": task_run_id})
            attempt_id = _insert(
                self.db, conn, "AUD_TASK_ATTEMPTS", "ATTEMPT_ID", TASK_RUN_ID=task_run_id, ATTEMPT_NUMBER=number,
                STATUS="QUEUED", POOL=pool, SLOT_KIND=kind, PRIORITY=priority,
                NOT_BEFORE=None if not_before is None else stamp(self.db, not_before),
                QUEUED_AT=stamp(self.db, queued_at or self.db.clock.now()),
                REQUESTED_BY="tester@pytest", REQUESTED_BY_KIND="HUMAN")
        return Queued(attempt_id, task_run_id, run_id)

    def claimed(self, task: str = "load", owner: str = OWNER, **queue_args: Any) -> Queued:
        """A queued attempt, claimed by `owner` (it must be the only one ready in its pool and slot kind)."""
        queued = self.queue(task, **queue_args)
        kind = queue_args.get("slot_kind") or ("ingestion" if task == "ingest" else "warehouse")
        rows = call(self.db, "claim_attempt", pool=queue_args.get("pool", "default"), slot_kinds=kind, owner_id=owner)
        assert [r.attempt_id for r in rows] == [queued.attempt_id]
        return queued

    def running(self, task: str = "load", owner: str = OWNER, **queue_args: Any) -> Queued:
        queued = self.claimed(task, owner, **queue_args)
        call(self.db, "start_attempt", attempt_id=queued.attempt_id, owner_id=owner, host="host-a", pid=4242,
             process_start="1700000000.25")
        return queued

    def gate_decision(self, queued: Queued, *, upstream_run: int, upstream_task_run: int | None, dependency: int,
                      result: str = "SATISFIED", revision: int = 1) -> int:
        """A task-dependency gate decision recorded for the attempt (as the gate functions will)."""
        with self.db.write() as conn:
            return _insert(self.db, conn, "AUD_GATE_DECISIONS", "DECISION_ID", PIPELINE_RUN_ID=queued.run_id,
                           TASK_RUN_ID=queued.task_run_id, ATTEMPT_ID=queued.attempt_id,
                           TASK_DEPENDENCY_ID=dependency, SELECTED_PIPELINE_RUN_ID=upstream_run,
                           SELECTED_TASK_RUN_ID=upstream_task_run,
                           SELECTED_REVISION=revision if result == "SATISFIED" else None, RESULT=result,
                           REASON="upstream ended SUCCESS", DECIDED_AT=stamp(self.db, self.db.clock.now()),
                           DECIDED_BY="tester@pytest", DECIDED_BY_KIND="SYSTEM")

    # -- reads -----------------------------------------------------------------------------------------------

    def row(self, table: str, key: str, value: int) -> dict[str, Any]:
        with self.db.read() as conn:
            found = conn.execute(sa.text(f"SELECT * FROM {self.db.qualify(table)} WHERE {key} = :v"), {"v": value})
            mapping = found.mappings().one()
        return {k.upper(): v for k, v in mapping.items()}

    def attempt(self, attempt_id: int) -> dict[str, Any]:
        return self.row("AUD_TASK_ATTEMPTS", "ATTEMPT_ID", attempt_id)

    def task_run(self, task_run_id: int) -> dict[str, Any]:
        return self.row("AUD_TASK_RUN_LOG", "TASK_RUN_ID", task_run_id)

    def run_row(self, run_id: int) -> dict[str, Any]:
        return self.row("AUD_PIPELINES_RUN_LOG", "PIPELINE_RUN_ID", run_id)

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table the attempt functions write: equal snapshots mean nothing changed."""
        with self.db.read() as conn:
            return {table: [tuple(r) for r in conn.execute(sa.text(
                        f"SELECT * FROM {self.db.qualify(table)} ORDER BY {key}"))]
                    for table, key in WRITTEN.items()}


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)
