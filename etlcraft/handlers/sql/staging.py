"""Staging: the task's SELECT into a scratch table of its own, then one row per key for merges.

A scratch table is a temporary table of the attempt's session, named etl_<what>_<task run>_<attempt>_<6 hex>, and is
always named qualified with the session's temporary schema: another table of the same name in any schema or
catalog is never read or changed (B34). The user's SELECT is wrapped on lines of its own, so a trailing comment
cannot swallow the wrapper (B44, B57).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import Column

#: Helper columns etl-craft adds to its own scratch tables.
RANK_COLUMN = "etl__rank"
HASH_COLUMN = "etl__hash"
#: How many example keys a refusal shows.
EXAMPLES = 5


@dataclass(frozen=True)
class Stage:
    name: str  # the scratch table's name
    ref: str  # how SQL names it
    columns: tuple[Column, ...]  # the SELECT's columns, in its order, with their full types
    rows: int | None  # None: not counted (SETUP_TABLE stages no rows)

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.key == name.lower()), None)


def scratch_name(task: SqlTask, what: str) -> str:
    return f"etl_{what}_{task.stamp.task_run_id}_{task.stamp.attempt_id}_{token()}"


def token() -> str:
    """The random part of scratch names: a new one for every scratch table."""
    return secrets.token_hex(3)


def wrap(select: str, *, empty: bool = False) -> str:
    """The user's SELECT as a subquery, each part on its own line (a trailing -- comment stays inside)."""
    return f"SELECT * FROM (\n{select}\n) etl_src" + ("\nWHERE 1 = 0" if empty else "")


def output_names(session: Session, task: SqlTask) -> list[str]:
    """The SELECT's output names as it returns them, a repeated name kept (a scratch table cannot show one: DuckDB
    renames the repeat, PostgreSQL refuses it). The warehouse plans the SELECT and reads no row (LIMIT 0)."""
    return session.names(f"(\n{task.select}\n) LIMIT 0")


def build_stage(session: Session, task: SqlTask, *, empty: bool = False) -> Stage:
    """Run the SELECT into a new scratch table (`empty`: only its shape) and read its columns."""
    name = scratch_name(task, "stage")
    written = session.run(session.dialect.create_scratch(name, wrap(task.select, empty=empty)))
    return _stage(session, name, None if empty else written)


def derive_stage(session: Session, task: SqlTask, what: str, query: str) -> Stage:
    """A scratch table holding the rows of `query` (etl-craft's own SQL over another scratch table)."""
    name = scratch_name(task, what)
    written = session.run(session.dialect.create_scratch(name, query))
    return _stage(session, name, written)


def derive_scratch(session: Session, task: SqlTask, what: str, query: str, columns: tuple[Column, ...]) -> Stage:
    """derive_stage for a query whose columns the caller knows (etl-craft's own columns over a stage's): the
    catalog is not read again."""
    name = scratch_name(task, what)
    written = session.run(session.dialect.create_scratch(name, query))
    return Stage(name, session.dialect.scratch(name), columns, _rows(session, session.dialect.scratch(name), written))


def _stage(session: Session, name: str, written: int | None) -> Stage:
    """The scratch table's columns, read from the catalog, and its rows: the count CREATE TABLE AS reported (both
    warehouses report it), counted only when the driver could not say. `written` None: not counted."""
    dialect = session.dialect
    columns = tuple(dialect.column(n, t) for n, t in session.rows(dialect.scratch_columns_sql(name)))
    ref = dialect.scratch(name)
    return Stage(name, ref, columns, None if written is None else _rows(session, ref, written))


def _rows(session: Session, ref: str, written: int) -> int:
    return written if written >= 0 else int(session.scalar(f"SELECT COUNT(*) FROM {ref}"))


def drop(session: Session, stage: Stage) -> None:
    session.run(f"DROP TABLE IF EXISTS {stage.ref}")


# -- keys ----------------------------------------------------------------------------------------------------------

def key_match(session: Session, keys: list[str], left: str = "t", right: str = "s") -> str:
    q = session.dialect.quote
    return " AND ".join(f"{left}.{q(k)} = {right}.{q(k)}" for k in keys)


def key_examples(session: Session, keys: list[str], query: str) -> tuple[int, str]:
    """How many key values `query` (selecting the key columns) returns, and up to five of them as text
    (customer_id=7; customer_id=9)."""
    count = int(session.scalar(f"SELECT COUNT(*) FROM ({query}) etl_k"))
    return count, examples_of(session, keys, query) if count else ""


def examples_of(session: Session, keys: list[str], query: str) -> str:
    """Up to five of the key values `query` returns, as text (customer_id=7; customer_id=9)."""
    rows = session.rows(f"{query} LIMIT {EXAMPLES}")
    return "; ".join(", ".join(f"{k}={_show(v)}" for k, v in zip(keys, row, strict=True)) for row in rows)


def _show(value: object) -> str:
    return "NULL" if value is None else repr(value) if isinstance(value, str) else str(value)


def null_key_rows(session: Session, stage: Stage, keys: list[str]) -> int:
    """Rows of the stage with a NULL in any key column (B5); a stage without rows is not read."""
    return 0 if stage.rows == 0 else int(session.scalar(f"SELECT {_null_rows(session, stage, keys)}"))


def _null_rows(session: Session, stage: Stage, keys: list[str]) -> str:
    q = session.dialect.quote
    where = " OR ".join(f"{q(k)} IS NULL" for k in keys)
    return f"(SELECT COUNT(*) FROM {stage.ref} WHERE {where})"


def _repeated(session: Session, stage: Stage, keys: list[str]) -> str:
    """The key values the stage returns more than once, in key order."""
    columns = ", ".join(session.dialect.quote(k) for k in keys)
    return f"SELECT {columns} FROM {stage.ref} GROUP BY {columns} HAVING COUNT(*) > 1 ORDER BY {columns}"


def null_and_repeated_keys(session: Session, stage: Stage, keys: list[str]) -> tuple[int, int]:
    """Rows of the stage with a NULL in any key column (B5), and key values it returns more than once: one query
    (a stage without rows has neither, and is not read)."""
    if stage.rows == 0:
        return 0, 0
    nulls, repeated = session.rows(f"SELECT {_null_rows(session, stage, keys)}, "
                                   f"(SELECT COUNT(*) FROM ({_repeated(session, stage, keys)}) etl_k)")[0]
    return int(nulls), int(repeated)


def repeated_examples(session: Session, stage: Stage, keys: list[str]) -> str:
    """Up to five key values the stage returns more than once."""
    return examples_of(session, keys, _repeated(session, stage, keys))


def ranked_ties(session: Session, task: SqlTask, stage: Stage, keys: list[str], order: str
                ) -> tuple[Stage, int, str]:
    """Rank each key's rows by `order` into a scratch table; the keys whose first place is shared by rows that
    differ (B41), counted, with examples."""
    q = session.dialect.quote
    columns = ", ".join(q(k) for k in keys)
    every = ", ".join(q(c.name) for c in stage.columns)
    name = scratch_name(task, "ranked")
    session.run(session.dialect.create_scratch(name, (
        f"SELECT s.*, RANK() OVER (PARTITION BY {columns} ORDER BY {order}) AS {q(RANK_COLUMN)} FROM {stage.ref} s")))
    ranked = _stage(session, name, None)
    firsts = f"SELECT DISTINCT {every} FROM {ranked.ref} WHERE {q(RANK_COLUMN)} = 1"
    count, examples = key_examples(session, keys, f"SELECT {columns} FROM ({firsts}) etl_f GROUP BY {columns} "
                                                  f"HAVING COUNT(*) > 1 ORDER BY {columns}")
    return ranked, count, examples


def first_of_each_key(session: Session, task: SqlTask, stage: Stage, ranked: Stage) -> Stage:
    """The deduplicated stage: the first row of each key (identical first rows kept once)."""
    q = session.dialect.quote
    every = ", ".join(q(c.name) for c in stage.columns)
    return derive_stage(session, task, "dedup", f"SELECT DISTINCT {every} FROM {ranked.ref} "
                                                f"WHERE {q(RANK_COLUMN)} = 1")
