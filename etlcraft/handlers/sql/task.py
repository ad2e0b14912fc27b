"""run_sql_task: one attempt of a SQL task, from its context to its counts.

The SELECT (after $$ substitution) is staged into a scratch table, checked by the guards, and written into the
target with the task's action, all in one warehouse transaction, while the attempt holds the target's Engine DB
lock; hash version 2 is recorded for the target after the warehouse commit, still under the lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from etlcraft.core.actor import current_actor
from etlcraft.core.errors import EtlCraftError
from etlcraft.core.faults import fault_point
from etlcraft.engine import locks
from etlcraft.engine.db import EngineDB
from etlcraft.handlers.context import Counts, HandlerResult, TaskContext
from etlcraft.handlers.sql import guards, hashing, merges, staging, tables, versions
from etlcraft.handlers.sql.spec import SqlTask, Stamp, read_task
from etlcraft.handlers.sql.staging import Stage
from etlcraft.handlers.sql.tables import Outcome
from etlcraft.warehouse.connection import Session, Warehouse, driver_errors, driver_message, open_warehouse

log = logging.getLogger(__name__)

#: Where a test can make an attempt fail after its last statement and before the warehouse commit.
FAULT_BEFORE_COMMIT = "sql_before_commit"

Action = Callable[[Session, SqlTask, Stage, int | None], Outcome]
ACTIONS: dict[str, Action] = {
    "CREATE_TABLE": tables.create_table, "SETUP_TABLE": tables.setup_table, "OVERWRITE_TABLE": tables.overwrite_table,
    "APPEND_TABLE": tables.append_table, "SCD1_MERGE": merges.merge, "SCD2_MERGE": merges.merge,
    "DELETE_ROWS": merges.delete_rows,
}


def run_sql_task(ctx: TaskContext, *, engine_db: EngineDB) -> HandlerResult:
    """Run the task's SELECT into its target with its action; the counts, and a one-line summary."""
    warehouse = open_warehouse(ctx.config)
    try:
        stamp = Stamp(ctx.pipeline_id, ctx.pipeline_run_id, ctx.task_run_id, ctx.attempt_id, current_actor().name,
                      engine_db.clock.now())
        task = read_task(ctx, warehouse.dialect.name, stamp)
        with locks.target(engine_db, task.target.key):
            version = versions.recorded_version(engine_db, task.target.key) if task.action != "DELETE_ROWS" else None
            outcome = run_in_warehouse(warehouse, task, version)
            if outcome.record_version and version != hashing.HASH_VERSION:
                versions.record_version(engine_db, task.target.key, hashing.HASH_VERSION)
    finally:
        warehouse.dispose()
    message = summary(task, outcome.counts, outcome)
    log.info("%s", message)
    return HandlerResult(counts=outcome.counts, message=message)


def run_in_warehouse(warehouse: Warehouse, task: SqlTask, version: int | None) -> Outcome:
    """Stage, guard and write in one warehouse transaction; a driver error rolls all of it back."""
    phase = f"the SELECT of {task.source} failed"
    try:
        with warehouse.transaction() as session:
            guards.check_repeated_names(session, task)
            stage = staging.build_stage(session, task, empty=task.action == "SETUP_TABLE")
            guards.check_output_names(task, stage, warehouse.dialect.name)
            phase = f"writing {task.target} failed"
            outcome = ACTIONS[task.action](session, task, stage, version)
            staging.drop(session, stage)
            fault_point(FAULT_BEFORE_COMMIT)
    except driver_errors() as exc:
        raise EtlCraftError(
            f"{task.action} of task {task.task} into {task.target}: {phase} in the {warehouse.dialect.name} "
            f"warehouse: {driver_message(exc)}; the warehouse rolled back every change of this attempt, so "
            f"{task.target} is as it was: fix the SQL or the data, then run the task again") from exc
    return outcome


def summary(task: SqlTask, counts: Counts, outcome: Outcome | None = None) -> str:
    read = "the SELECT's shape staged" if counts.source is None else f"{counts.source:,} row(s) read"
    duplicates = f", {counts.duplicate:,} duplicate(s) removed" if counts.duplicate else ""
    absent = ""
    if task.action == "SCD2_MERGE" and task.missing_keys != "KEEP" and outcome is not None:
        markers = (f"; {outcome.markers:,} deletion marker(s) opened, counted as inserted"
                   if task.missing_keys == "MARK_DELETED" else "")
        absent = (f" (SCD2_MISSING_KEYS {task.missing_keys}: {outcome.absent_closed:,} key(s) the SELECT no longer "
                  f"returns closed, counted as deleted{markers})")
    return (f"{task.action} into {task.target}: {read}{duplicates}; {counts.insert or 0:,} inserted, "
            f"{counts.update or 0:,} updated, {counts.delete or 0:,} deleted{absent}; {counts.target or 0:,} row(s) "
            "in the target")

