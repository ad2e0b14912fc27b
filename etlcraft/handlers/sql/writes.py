"""The statements every action shares: inserting staged rows with etl-craft's columns filled in, the stamps an
update writes, ROW_ID allocation and counting.

ROW_ID continues from the target's MAX(ROW_ID), read in the same warehouse transaction as the INSERT while the
caller holds the target's Engine DB lock, so two writers never hand out the same ids (S3.G.5, B38). An action
reads its target's row count, largest ROW_ID and the rows of its own task run in one pass (`read_target`) and
derives TARGET_COUNT from what it changed: a target of many rows is scanned once, not once per figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.target import Target
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import ENGINE_COLUMN_TYPES, Column, Dialect


def insert_values(dialect: Dialect, task: SqlTask, *, row_base: int = 0, order: str = "",
                  hash_sql: str | None = None) -> dict[str, str]:
    """What an inserted row gets in each engine-managed column (by upper-case name); columns left out stay NULL."""
    stamp, lit = task.stamp, dialect.literal
    values = {
        "PIPELINE_ID": lit(stamp.pipeline_id), "PIPELINE_RUN_ID": lit(stamp.pipeline_run_id),
        "TASK_RUN_ID": lit(stamp.task_run_id), "ROW_ID": f"{row_base} + ROW_NUMBER() OVER ({order})",
        "CREATE_DATE": lit(stamp.now), "CREATED_BY": lit(stamp.actor), "UPDATE_DATE": lit(stamp.now),
        "UPDATED_BY": lit(stamp.actor), "DELETE_FLAG": "'N'", "ACTIVE_FLAG": "'Y'",
    }
    if hash_sql is not None:
        values["HASH_KEY"] = hash_sql
    if task.action == "SCD2_MERGE":
        values["VALID_FROM"] = lit(stamp.now)
    return values


def update_stamps(dialect: Dialect, task: SqlTask, target: Target) -> list[tuple[str, str]]:
    """(column, value) for the identities and the update time an UPDATE writes, for the columns the target has."""
    stamp, lit = task.stamp, dialect.literal
    values = {"PIPELINE_ID": lit(stamp.pipeline_id), "PIPELINE_RUN_ID": lit(stamp.pipeline_run_id),
              "TASK_RUN_ID": lit(stamp.task_run_id), "UPDATE_DATE": lit(stamp.now), "UPDATED_BY": lit(stamp.actor)}
    return [(target.name_of(name), value) for name, value in values.items() if target.has(name)]


@dataclass(frozen=True)
class TargetRows:
    """What an action needs to know of its target's rows before it writes, read in one pass."""

    count: int
    max_row_id: int  # 0 when the target has no ROW_ID or no rows
    of_task_run: int  # rows stamped with this task run's TASK_RUN_ID (an earlier attempt's, S3.G.7); 0 unless asked


def read_target(session: Session, task: SqlTask, target: Target, *, own_rows: bool = False) -> TargetRows:
    """COUNT(*), MAX(ROW_ID) and, with `own_rows` (APPEND_TABLE's retry), the rows of this task run, in one
    statement: one scan of the target. Read in the write's transaction, under the target's Engine DB lock. A target
    this attempt created has no rows yet, and is not read."""
    if target.created:
        return TargetRows(count=0, max_row_id=0, of_task_run=0)
    q = session.dialect.quote
    row_id = f"MAX({q(target.name_of('ROW_ID'))})" if target.has("ROW_ID") else "NULL"
    of_task_run = (f"COUNT(CASE WHEN {q(target.name_of('TASK_RUN_ID'))} = {task.stamp.task_run_id} THEN 1 END)"
                   if own_rows and target.has("TASK_RUN_ID") else "0")
    count, max_row_id, own = session.rows(f"SELECT COUNT(*), {row_id}, {of_task_run} FROM {target.ref}")[0]
    return TargetRows(count=int(count), max_row_id=int(max_row_id or 0), of_task_run=int(own or 0))


def insert_rows(session: Session, task: SqlTask, target: Target, source: str, columns: tuple[Column, ...], *,
                row_base: int, where: str = "", order: str = "", hash_sql: str | None = None) -> int:
    """INSERT INTO the target the rows of `source` (alias s) that match `where`: the SELECT's `columns` and the
    engine-managed columns the target has. ROW_ID numbers the rows in `order` after `row_base`, the target's
    largest ROW_ID (read_target)."""
    dialect = session.dialect
    q = dialect.quote
    names = [target.name_of(c.name) for c in columns]
    values = [f"s.{q(c.name)}" for c in columns]
    for name, value in insert_values(dialect, task, row_base=row_base, order=order, hash_sql=hash_sql).items():
        if target.has(name):
            names.append(target.name_of(name))
            values.append(value)
    condition = f"\n WHERE {where}" if where else ""
    return session.run(f"INSERT INTO {target.ref} ({', '.join(q(n) for n in names)})\n"
                       f"SELECT {', '.join(values)}\n  FROM {source} s{condition}")


def create_as_select(session: Session, task: SqlTask, target: Target, source: str, columns: tuple[Column, ...],
                     engine_columns: tuple[str, ...], *, order: str = "", hash_sql: str | None = None) -> int:
    """CREATE TABLE target AS the rows of `source` (alias s) with `engine_columns` filled in (ROW_ID numbered in
    `order` from 1, HASH_KEY from `hash_sql` when given); the rows written, as CREATE TABLE AS reports them."""
    dialect = session.dialect
    q = dialect.quote
    values = insert_values(dialect, task, order=order, hash_sql=hash_sql)
    engine = [f"CAST({values.get(n, 'NULL')} AS {ENGINE_COLUMN_TYPES[n]}) AS {q(dialect.engine_name(n))}"
              for n in engine_columns]
    select = ", ".join([*(f"s.{q(c.name)}" for c in columns), *engine])
    written = session.run(f"CREATE TABLE {target.ref} AS\nSELECT {select}\n  FROM {source} s")
    return written if written >= 0 else count_rows(session, target)


def count_rows(session: Session, target: Target, where: str = "") -> int:
    condition = f" WHERE {where}" if where else ""
    return int(session.scalar(f"SELECT COUNT(*) FROM {target.ref} t{condition}"))
