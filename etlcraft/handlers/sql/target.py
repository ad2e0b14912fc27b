"""The target table: what it is (columns with full types, table format), creating it from the stage's shape,
adding the SELECT's new columns by ALTER TABLE (S3.G.4), and the values etl-craft writes into the columns it
manages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from etlcraft.core.selects import ENGINE_MANAGED_COLUMNS, SCD2_COLUMNS
from etlcraft.handlers.sql.spec import SqlTask
from etlcraft.handlers.sql.staging import Stage
from etlcraft.warehouse.connection import Session
from etlcraft.warehouse.dialects import ENGINE_COLUMN_TYPES, Column, Family

#: Every column etl-craft manages, in the order it creates them (after the SELECT's columns).
ALL_ENGINE_COLUMNS = ENGINE_MANAGED_COLUMNS + SCD2_COLUMNS
_BASE = ("PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "ROW_ID", "CREATE_DATE", "CREATED_BY", "UPDATE_DATE",
         "UPDATED_BY")
_CREATES = {
    "CREATE_TABLE": _BASE, "OVERWRITE_TABLE": _BASE, "APPEND_TABLE": _BASE,
    "SCD1_MERGE": (*_BASE, "HASH_KEY", "DELETE_FLAG"),
    "SCD2_MERGE": (*_BASE, "HASH_KEY", "DELETE_FLAG", "ACTIVE_FLAG", "VALID_FROM", "VALID_TO"),
    "SETUP_TABLE": ALL_ENGINE_COLUMNS,
}
#: The engine-managed columns each action gives a target it creates, in the order of ALL_ENGINE_COLUMNS.
CREATES = {action: tuple(n for n in ALL_ENGINE_COLUMNS if n in names) for action, names in _CREATES.items()}
#: The engine-managed columns an existing target must have for the action to write it.
REQUIRES = {
    "APPEND_TABLE": ("TASK_RUN_ID",),
    "SCD1_MERGE": ("HASH_KEY",),
    "SCD2_MERGE": ("HASH_KEY", "ACTIVE_FLAG", "VALID_FROM", "VALID_TO"),
}


@dataclass
class Target:
    ref: str  # how SQL names it
    columns: dict[str, Column] = field(default_factory=dict)  # by lower-case name, in table order
    table_format: str | None = None  # None: the table does not exist
    created: bool = False  # created by this attempt
    schema_exists: bool = True  # whether its schema exists (read with the relation)

    @property
    def exists(self) -> bool:
        return self.table_format is not None

    def has(self, name: str) -> bool:
        return name.lower() in self.columns

    def name_of(self, name: str) -> str:
        """The column as the table spells it."""
        return self.columns[name.lower()].name


def inspect(session: Session, task: SqlTask) -> Target:
    """The target as the warehouse has it now. A view is refused: etl-craft writes tables."""
    dialect = session.dialect
    target = Target(dialect.table(task.target))
    # One catalog read: the relation and, for a target to create, whether its schema exists.
    schema = dialect.schema_exists_sql(task.target)
    rows = session.rows(f"SELECT * FROM (\n{dialect.relation_sql(task.target)}\n) etl_r\n"
                        f"UNION ALL SELECT 'schema', 'schema' FROM (\n{schema}\n) etl_s")
    found = [row for row in rows if row[0] != "schema"]
    target.schema_exists = len(found) < len(rows)
    if not found:
        return target
    kind, table_format = found[0]
    if kind == "view":
        raise task.refuse(f"{task.target} is a view; etl-craft writes tables: point TARGET_OBJECT at a table, or "
                          "drop the view")
    target.table_format = str(table_format)
    target.columns = {c.key: c for c in _columns(session, task)}
    return target


def _columns(session: Session, task: SqlTask) -> list[Column]:
    dialect = session.dialect
    return [dialect.column(name, type_text) for name, type_text in session.rows(dialect.columns_sql(task.target))]


def check_format(task: SqlTask, target: Target, dialect: str) -> None:
    """One table format per target (S3.G.6, B43): a task never changes the format of the table it writes."""
    if target.exists and target.table_format != task.table_format:
        raise task.refuse(f"{task.target} is a {target.table_format} table and the task's TABLE_FORMAT is "
                          f"{task.table_format}; a task never changes its target's format: set TABLE_FORMAT = "
                          f"'{target.table_format}' on every task writing {task.target}, or move the table with "
                          "the warehouse's own tools first")
    if task.table_format != "native":
        raise task.refuse(f"TABLE_FORMAT {task.table_format} is not available on {dialect} warehouses, where "
                          "etl-craft writes native tables; set TABLE_FORMAT = 'native' or leave it out")


def require(task: SqlTask, target: Target, names: Iterable[str]) -> None:
    """Refuse an existing target that lacks engine-managed columns the action needs."""
    missing = [n for n in names if not target.has(n)]
    if not missing:
        return
    adds = "; ".join(f"ALTER TABLE {task.target} ADD COLUMN {n} {ENGINE_COLUMN_TYPES[n]}" for n in missing)
    why = (" (APPEND_TABLE first deletes the rows an earlier attempt of the same task run wrote, by TASK_RUN_ID, so "
           "a retry never duplicates rows)" if missing == ["TASK_RUN_ID"] else "")
    raise task.refuse(f"{task.target} has no {', '.join(missing)} column{'s' if len(missing) > 1 else ''}, which "
                      f"{task.action} writes{why}; add {'them' if len(missing) > 1 else 'it'} ({adds}; existing rows "
                      "keep NULL), or run a SETUP_TABLE task on the target, which adds every column etl-craft writes")


def new_columns(task: SqlTask, target: Target, stage: Stage) -> list[Column]:
    """The SELECT's columns the target lacks, to add (SCHEMA_EVOLUTION = 'Y') or refuse; with evolution on, a
    column whose type changed is refused naming both types (S3.G.4)."""
    missing = [c for c in stage.columns if not target.has(c.name)]
    if missing and not task.evolve:
        names = ", ".join(c.name for c in missing)
        raise task.refuse(f"the SELECT returns {names}, which {task.target} does not have; set SCHEMA_EVOLUTION = 'Y' "
                          "to add new columns, or add them to the table yourself")
    if task.evolve:
        for column in stage.columns:
            existing = target.columns.get(column.key)
            if existing is not None and type_changed(column, existing):
                raise task.refuse(f"column {column.name} is {column.type} in the SELECT and {existing.type} in "
                                  f"{task.target}; schema evolution adds columns but never changes a type: cast it "
                                  f"to {existing.type} in the SELECT, or change the column in the warehouse")
    return missing


def type_changed(selected: Column, existing: Column) -> bool:
    """Another kind of type (text to integer, timestamp to timestamp with time zone, ...), or another declared
    length, precision or scale. A SELECT type that declares none (a literal, an expression) is not a change: the
    warehouse writes it into the column's declared type, as without schema evolution."""
    if selected.family is not existing.family:
        return True
    if selected.family is Family.OTHER:
        return _normal(selected.type) != _normal(existing.type)
    modifiers = _modifiers(selected.type), _modifiers(existing.type)
    return all(modifiers) and modifiers[0] != modifiers[1]


def _modifiers(type_text: str) -> str:
    found = re.search(r"\(([^)]*)\)", type_text)
    return "" if found is None else "".join(found.group(1).split())


def _normal(type_text: str) -> str:
    return " ".join(type_text.lower().split())


def add_columns(session: Session, target: Target, columns: Iterable[Column]) -> None:
    """ALTER TABLE ... ADD COLUMN with each column's full type: the table keeps its definition and properties."""
    q = session.dialect.quote
    for column in columns:
        session.run(f"ALTER TABLE {target.ref} ADD COLUMN {q(column.name)} {column.type}")
        target.columns[column.key] = column


def add_engine_columns(session: Session, target: Target, names: Iterable[str]) -> list[str]:
    """Add the engine-managed columns the target lacks (SETUP_TABLE); the names added."""
    dialect = session.dialect
    added = [n for n in names if not target.has(n)]
    add_columns(session, target, [dialect.column(dialect.engine_name(n), ENGINE_COLUMN_TYPES[n]) for n in added])
    return added


def create_empty(session: Session, task: SqlTask, target: Target, stage: Stage) -> None:
    """Create the target with the stage's columns and types and the action's engine-managed columns, no rows
    (`target` as inspect found it: missing). Its columns are the ones it was made with, not read back."""
    dialect = session.dialect
    q = dialect.quote
    ensure_schema(session, task, target)
    engine = [dialect.column(dialect.engine_name(n), ENGINE_COLUMN_TYPES[n]) for n in CREATES[task.action]]
    select = ", ".join([*(f"s.{q(c.name)}" for c in stage.columns),
                        *(f"CAST(NULL AS {c.type}) AS {q(c.name)}" for c in engine)])
    session.run(f"CREATE TABLE {target.ref} AS SELECT {select} FROM {stage.ref} s WHERE 1 = 0")
    target.table_format, target.created = "native", True
    target.columns = {c.key: c for c in (*stage.columns, *engine)}


def ensure_schema(session: Session, task: SqlTask, target: Target) -> None:
    """Create the missing target's schema, when inspect found it missing too."""
    if not target.schema_exists:
        session.run(session.dialect.create_schema(task.target))
        target.schema_exists = True
