"""The actions that write whole tables or add rows: CREATE_TABLE, SETUP_TABLE, OVERWRITE_TABLE, APPEND_TABLE.

Each runs inside the attempt's one warehouse transaction, so a failure at any statement (the SELECT failing on a
row, a fault after the DROP or TRUNCATE) leaves the target with its previous rows, definition and properties:
replacement is atomic on DuckDB and PostgreSQL (S3.G.3, B37).
"""

from __future__ import annotations

from dataclasses import dataclass

from etlcraft.handlers.context import Counts
from etlcraft.handlers.sql import hashing
from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.staging import Stage
from etlcraft.handlers.sql.target import (
    ALL_ENGINE_COLUMNS,
    CREATES,
    REQUIRES,
    Target,
    add_columns,
    add_engine_columns,
    check_format,
    create_empty,
    ensure_schema,
    inspect,
    new_columns,
    require,
)
from etlcraft.handlers.sql.writes import count_rows, create_as_select, insert_rows, read_target
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import Column


@dataclass(frozen=True)
class Outcome:
    counts: Counts
    record_version: bool = False  # record hash version 2 for the target once the warehouse has committed
    absent_closed: int = 0  # SCD2_MISSING_KEYS: current versions of keys the SELECT no longer returns, closed
    markers: int = 0  # SCD2_MISSING_KEYS = MARK_DELETED: deletion markers opened (counted in insert too)


def counts(stage: Stage, target_rows: int, *, insert: int = 0, update: int = 0, delete: int = 0,
           duplicate: int = 0) -> Counts:
    """The attempt's counts; rows written is insert + update + delete (B42)."""
    return Counts(source=stage.rows, insert=insert, update=update, delete=delete, duplicate=duplicate,
                  rows_written=insert + update + delete, target=target_rows)


def writable(session: Session, task: SqlTask, stage: Stage) -> tuple[Target, list[Column]]:
    """The target ready to be written, created empty when missing; the SELECT's columns it still lacks (added by
    the caller once every guard has passed)."""
    target = inspect(session, task)
    check_format(task, target, session.dialect.name)
    if not target.exists:
        create_empty(session, task, target, stage)
        return target, []
    require(task, target, REQUIRES.get(task.action, ()))
    return target, new_columns(task, target, stage)


def create_table(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """Replace the target with the SELECT's rows and etl-craft's columns, in the transaction."""
    target = inspect(session, task)
    check_format(task, target, session.dialect.name)
    old_rows = count_rows(session, target) if target.exists else 0
    if target.exists:
        _refuse_dependent_views(session, task)
        session.run(f"DROP TABLE {target.ref}")
    else:
        ensure_schema(session, task, target)
    rows = create_as_select(session, task, target, stage.ref, stage.columns, CREATES["CREATE_TABLE"])
    return Outcome(counts(stage, rows, insert=rows, delete=old_rows), record_version=True)


def _refuse_dependent_views(session: Session, task: SqlTask) -> None:
    sql = session.dialect.dependent_views_sql(task.target)
    views = [str(v) for (v,) in session.rows(sql)] if sql else []
    if views:
        raise task.refuse(f"views depend on {task.target} ({', '.join(views)}), and CREATE_TABLE replaces the table, "
                          "which would drop them: use OVERWRITE_TABLE, which keeps the table and what depends on it, "
                          "or drop the views first")


def setup_table(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """Create the target from the SELECT's shape with every engine-managed column, no rows; on an existing target,
    add the engine-managed columns it lacks (and, with SCHEMA_EVOLUTION, the SELECT's new columns)."""
    target = inspect(session, task)
    check_format(task, target, session.dialect.name)
    if not target.exists:
        create_empty(session, task, target, stage)
        return Outcome(counts(stage, 0), record_version=True)
    added = new_columns(task, target, stage)
    unversioned = version != hashing.HASH_VERSION and not hashing.has_hashes(session, target)
    add_columns(session, target, added)
    add_engine_columns(session, target, ALL_ENGINE_COLUMNS)
    return Outcome(counts(stage, count_rows(session, target)), record_version=unversioned)


def overwrite_table(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """Replace the target's rows with the SELECT's, keeping the table itself (definition, grants, comments)."""
    target, added = writable(session, task, stage)
    add_columns(session, target, added)
    old_rows = 0
    if not target.created:  # a target made by this attempt is empty already
        old_rows = count_rows(session, target)
        session.run(session.dialect.clear_table(target.ref))
    inserted = insert_rows(session, task, target, stage.ref, stage.columns, row_base=0)
    return Outcome(counts(stage, inserted, insert=inserted, delete=old_rows), record_version=target.created)


def append_table(session: Session, task: SqlTask, stage: Stage, version: int | None) -> Outcome:
    """Add the SELECT's rows; first delete the rows an earlier attempt of this task run wrote (S3.G.7), so a retry
    after a commit the Engine DB never heard of does not duplicate them. The target is read once (read_target):
    the DELETE runs only when that read found such rows."""
    target, added = writable(session, task, stage)
    add_columns(session, target, added)
    before = read_target(session, task, target, own_rows=True)
    deleted = 0
    if before.of_task_run:
        column = session.dialect.quote(target.name_of("TASK_RUN_ID"))
        deleted = max(session.run(f"DELETE FROM {target.ref} WHERE {column} = {task.stamp.task_run_id}"), 0)
    inserted = insert_rows(session, task, target, stage.ref, stage.columns, row_base=before.max_row_id)
    return Outcome(counts(stage, before.count - deleted + inserted, insert=inserted, delete=deleted),
                   record_version=target.created)
