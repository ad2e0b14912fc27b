"""The canonical change hash, version 2 (S3.G.1, B22, B35).

HASH_KEY = md5 of the concatenation, over the compare columns in order, of
    'N'                                    when the value is NULL
    'V' || <length of x> || ':' || x       otherwise, x being the value's canonical text:
timestamps with time zone as UTC `YYYY-MM-DDTHH:MM:SS.ffffffZ`, timestamps without as `YYYY-MM-DDTHH:MM:SS.ffffff`,
dates `YYYY-MM-DD`, times `HH:MM:SS.ffffff`, decimals at the target column's declared scale (PostgreSQL numeric
without a scale: trailing zeros trimmed), booleans `true`/`false`, integers and text as they are. The value is
first cast to the target column's type, so the stage and the target hash one value the same way. The result does
not depend on the session's time zone or on the warehouse: DuckDB and PostgreSQL give the same digest.

The compare columns are MERGE_COMPARE_COLUMNS in the order given, else every column of the SELECT except MERGE_KEY,
in alphabetical order (so reordering the SELECT changes no hash). Floating-point columns are refused: they have no
stable text form.
"""

from __future__ import annotations

from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.staging import Stage
from etlcraft.handlers.sql.target import Target
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import Column, Dialect, Family

HASH_VERSION = 2


def compare_columns(task: SqlTask, stage: Stage) -> list[Column]:
    """The stage's compare columns, in hashing order (see the module docstring)."""
    if task.compare is None:
        keys = {k.lower() for k in task.keys}
        return sorted((c for c in stage.columns if c.key not in keys), key=lambda c: c.key)
    found = [stage.column(name) for name in task.compare]
    return [c for c in found if c is not None]


def refuse_floats(task: SqlTask, pairs: list[tuple[Column, Column]]) -> None:
    """Floats among the compare columns (in the SELECT or in the target) are refused."""
    for stage_column, target_column in pairs:
        for column in (stage_column, target_column):
            if column.family is Family.FLOAT:
                which = ("MERGE_COMPARE_COLUMNS" if task.compare is not None
                         else "MERGE_COMPARE_COLUMNS (by default every column but MERGE_KEY)")
                raise task.refuse(f"{which} includes {stage_column.name} ({column.type}): floats have no stable "
                                  "text form; cast to DECIMAL in the SELECT, or leave the column out of "
                                  "MERGE_COMPARE_COLUMNS")


def hash_sql(dialect: Dialect, pairs: list[tuple[Column, Column]], alias: str = "s") -> str:
    """The version-2 hash of the `alias` row's values of each (source column, target column) pair."""
    segments = []
    for source, target in pairs:
        value = f"{alias}.{dialect.quote(source.name)}"
        if source.type.lower() != target.type.lower():
            value = f"CAST({value} AS {target.type})"
        segments.append(dialect.hash_segment(value, target))
    return f"md5({' || '.join(segments) if segments else repr('')})"


def target_pairs(task: SqlTask, target: Target, columns: list[Column]) -> list[tuple[Column, Column]]:
    """Each stage compare column with the target column it is written to."""
    return [(c, target.columns[c.key]) for c in columns]


def has_hashes(session: Session, target: Target) -> bool:
    """Whether any row of the target has a HASH_KEY (rows without one cannot be compared wrongly)."""
    if not target.exists or target.created or not target.has("HASH_KEY"):
        return False
    column = session.dialect.quote(target.name_of("HASH_KEY"))
    return session.scalar(f"SELECT 1 FROM {target.ref} WHERE {column} IS NOT NULL LIMIT 1") is not None


def refuse_old_hashes(task: SqlTask, session: Session, target: Target, version: int | None) -> bool:
    """Refuse a merge into a target whose hashes may come from an older formula (S3.G.1). True when version 2
    should be recorded for the target after the commit (it had none, and no row had a hash)."""
    if version == HASH_VERSION:
        return False
    if has_hashes(session, target):
        raise task.refuse(f"{task.target} has HASH_KEY values but no hash version {HASH_VERSION} in "
                          f"AUD_TARGET_HASH_VERSION, so they may come from an older formula and every row would "
                          f"look changed: run etl-craft rehash --target {task.target.key}, then run the task again")
    return True
