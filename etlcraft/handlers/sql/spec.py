"""One SQL task attempt as the actions see it: the SELECT after $$ substitution, the target, the task parameters
read through the parameter table, and the identities and time every written row is stamped with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from etlcraft.core import parameters as params
from etlcraft.core.errors import SqlGuardError
from etlcraft.core.selects import SelectError, read_select
from etlcraft.core.sqltext import RUN_VALUES, UnknownTokenError, substitute
from etlcraft.handlers.context import TaskContext
from etlcraft.warehouse.names import TableName, parse_table_name

ACTIONS = ("CREATE_TABLE", "SETUP_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE",
           "DELETE_ROWS")
MERGES = ("SCD1_MERGE", "SCD2_MERGE")


@dataclass(frozen=True)
class Stamp:
    """Who and when: written into the engine-managed columns of every row an attempt inserts or changes."""

    pipeline_id: int
    pipeline_run_id: int
    task_run_id: int
    attempt_id: int
    actor: str
    now: datetime


@dataclass(frozen=True)
class SqlTask:
    action: str
    task: str  # PIPELINE.TASK, for messages
    source: str  # sql_files/<file>, for messages
    select: str  # the one SELECT, $$ tokens substituted, without its trailing semicolon
    target: TableName
    keys: tuple[str, ...]  # MERGE_KEY
    compare: tuple[str, ...] | None  # MERGE_COMPARE_COLUMNS; None: every column but the key
    order: tuple[str, ...]  # MERGE_DEDUPE_ORDER items
    evolve: bool  # SCHEMA_EVOLUTION
    table_format: str  # TABLE_FORMAT
    delete_mode: str  # DELETE_MODE
    stamp: Stamp
    missing_keys: str = "KEEP"  # SCD2_MISSING_KEYS: KEEP, CLOSE or MARK_DELETED
    full_snapshot: bool = False  # FULL_SNAPSHOT: the SELECT returns the whole source

    def refuse(self, problem: str) -> SqlGuardError:
        """The error for a refusal before the target was touched; `problem` names the value and the remedy."""
        return SqlGuardError(f"{self.action} of task {self.task} into {self.target} refused: {problem} "
                             f"(the target was not changed)")


def read_task(ctx: TaskContext, dialect: str, stamp: Stamp) -> SqlTask:
    """The attempt's SqlTask from its context: the SQL file read and checked, the parameters parsed."""
    task = f"{ctx.pipeline_code}.{ctx.task_code}"
    text = _read_sql(ctx, task) if ctx.sql_path is not None else None
    run_values: dict[str, object] = dict(zip(RUN_VALUES, (ctx.pipeline_id, ctx.pipeline_run_id, ctx.task_run_id,
                                                          ctx.run_date), strict=True))
    return task_from_text(task=task, action=ctx.action, sql_file=ctx.sql_file, text=text,
                          target_object=ctx.target_object, parameters=ctx.parameters, run_values=run_values,
                          dialect=dialect, stamp=stamp)


def task_from_text(*, task: str, action: str | None, sql_file: str | None, text: str | None,
                   target_object: str | None, parameters: Mapping[str, str], run_values: Mapping[str, object],
                   dialect: str, stamp: Stamp) -> SqlTask:
    """A SqlTask from the text of its SQL file (None: the task has no SQL_FILE), as `read_task` and
    `etl-craft test` (which reads the file itself, confined to the project) both build it."""
    if (action or "") not in ACTIONS:
        raise SqlGuardError(f"task {task} has ACTION {action!r}; a SQL task's ACTION is one of "
                            f"{', '.join(ACTIONS)}: correct it with a project migration")
    if text is None or not target_object:
        missing = "SQL_FILE" if text is None else "TARGET_OBJECT"
        raise SqlGuardError(f"task {task} ({action}) has no {missing}; set it with a project migration")
    assert action is not None
    try:
        target = parse_table_name(target_object, dialect)
    except ValueError as exc:
        raise SqlGuardError(f"task {task}: TARGET_OBJECT {exc}; correct it with a project migration") from None
    values = _parameters(parameters, task, action)
    missing_keys, full_snapshot = str(values["SCD2_MISSING_KEYS"] or "KEEP"), bool(values["FULL_SNAPSHOT"])
    if (problem := missing_keys_problem(missing_keys, full_snapshot)) is not None:
        raise SqlGuardError(f"task {task} ({action}): {problem}")
    source = f"sql_files/{sql_file}"
    return SqlTask(action, task, source, _select(text, {**dict(parameters), **run_values}, dialect, task, source),
                   target, tuple(values["MERGE_KEY"] or ()), _optional_tuple(values["MERGE_COMPARE_COLUMNS"]),
                   tuple(values["MERGE_DEDUPE_ORDER"] or ()), bool(values["SCHEMA_EVOLUTION"]),
                   str(values["TABLE_FORMAT"] or "native"), str(values["DELETE_MODE"] or "soft"), stamp,
                   missing_keys, full_snapshot)


def missing_keys_problem(missing_keys: str, full_snapshot: bool) -> str | None:
    """Why SCD2_MISSING_KEYS cannot be used as set (None: it can): closing the keys a SELECT does not return is
    only right when that SELECT is the whole source, which the task declares with FULL_SNAPSHOT = Y. validate
    reports the same refusal before any run."""
    if missing_keys == "KEEP" or full_snapshot:
        return None
    return (f"parameter SCD2_MISSING_KEYS is {missing_keys}, but FULL_SNAPSHOT is not Y, so a key the SELECT does "
            f"not return may only be outside an incremental extract; {missing_keys} needs FULL_SNAPSHOT = Y: set "
            "FULL_SNAPSHOT to Y if the SELECT returns the whole source on every run, else set SCD2_MISSING_KEYS to "
            "KEEP, with a project migration")


def _optional_tuple(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _parameters(parameters: Mapping[str, str], task: str, action: str) -> dict[str, Any]:
    names = ("MERGE_KEY", "MERGE_COMPARE_COLUMNS", "MERGE_DEDUPE_ORDER", "SCHEMA_EVOLUTION", "TABLE_FORMAT",
             "DELETE_MODE", "SCD2_MISSING_KEYS", "FULL_SNAPSHOT")
    values: dict[str, Any] = {}
    for name in names:
        spec = params.BY_NAME[name]
        raw = parameters.get(name)
        if not spec.applies("SQL", action):
            values[name] = None
            continue
        if raw is None and spec.required("SQL", action):
            raise SqlGuardError(f"task {task} ({action}) has no parameter {name}; expected {spec.expected}: add it "
                                "with a project migration")
        try:
            values[name] = spec.resolve(raw)
        except ValueError as exc:
            raise SqlGuardError(f"task {task}: parameter {name} {exc}; expected {spec.expected}: correct it with a "
                                "project migration") from None
    return values


def _read_sql(ctx: TaskContext, task: str) -> str:
    path = ctx.sql_path
    assert path is not None
    source = f"sql_files/{ctx.sql_file}"
    try:
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise SqlGuardError(f"task {task}: cannot read {path} ({exc.strerror}); create the file or correct "
                            "SQL_FILE with a project migration") from None
    except UnicodeDecodeError as exc:
        raise SqlGuardError(f"task {task}: {source} is not UTF-8 text ({exc.reason} at byte {exc.start}); save the "
                            "file as UTF-8") from None


def _select(text: str, values: Mapping[str, object], dialect: str, task: str, source: str) -> str:
    try:
        sql = substitute(text, values, dialect, source=source)
        return read_select(sql, dialect, source=source).text
    except UnknownTokenError as exc:
        raise SqlGuardError(f"task {task}: {exc}") from None
    except SelectError as exc:
        raise SqlGuardError(f"task {task}: {source} {exc.found}; {exc.remedy}") from None
    except ValueError as exc:
        raise SqlGuardError(f"task {task}: {exc}") from None
