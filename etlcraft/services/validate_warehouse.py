"""validate's warehouse checks (skipped by `etl-craft validate --offline`): each SQL task's SELECT against the
warehouse's catalog, and its target against what its action would write.

- every table and column the SELECT reads exists (sqlglot qualifies the SELECT against the catalog: warehouse.catalog);
- every MERGE_KEY and MERGE_COMPARE_COLUMNS column is among the SELECT's output columns, when only the warehouse
  can say (a * over a table; the offline checks cover the rest);
- the target's existing columns and format suit the action: the SQL handler's own judgement (target.inspect,
  check_format, require, new_columns and guards.check_parameter_columns) over the SELECT staged empty in a
  transaction that is rolled back, so nothing in the warehouse changes.

A table that a SQL task of the project writes is not an error before that task's first run: it is "made by" the
task, its columns are those the task's SELECT returns (plus the columns etl-craft adds) where sqlglot can name them,
and a note says so. A warehouse that cannot be reached gives one warning; the metadata checks are not affected.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import psycopg
import sqlalchemy as sa

from etlcraft.config.loader import ProjectConfig
from etlcraft.core import parameters as params
from etlcraft.core.errors import EtlCraftError, SqlGuardError
from etlcraft.core.selects import read_select
from etlcraft.handlers.context import TaskContext
from etlcraft.handlers.sql import guards, staging
from etlcraft.handlers.sql.spec import ACTIONS, SqlTask, Stamp, read_task
from etlcraft.handlers.sql.staging import Stage
from etlcraft.handlers.sql.target import CREATES, REQUIRES, check_format, inspect, new_columns, require
from etlcraft.services.metadata import Metadata, TaskView
from etlcraft.warehouse.catalog import Catalog, Resolution, declared_tables, read_catalog
from etlcraft.warehouse.connection import Session, Warehouse, driver_message, open_warehouse

_DRIVER_ERRORS = (sa.exc.DBAPIError, psycopg.Error, duckdb.Error)
_MERGE_COLUMNS = ("MERGE_KEY", "MERGE_COMPARE_COLUMNS")
_SHOWN = 12  # how many column names a message lists
SCRIPT_DIR = "ingestion_scripts"


@dataclass(frozen=True)
class Problem:
    """The fields of services.validate.Problem (built there from these)."""

    check: str
    task: TaskView
    finding: str
    value: str | None
    expected: str
    remedy: str


@dataclass
class Findings:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warning: str | None = None


@dataclass(frozen=True)
class _Maker:
    """A task that creates a table on its first run: a SQL task (its target) or an ingestion script (a CREATE
    TABLE statement in its text)."""

    key: str  # PIPELINE.TASK
    file: str  # SQL_FILE or SCRIPT_FILE
    select: str | None = None  # a SQL task's SELECT, whose output names are the table's columns
    action: str | None = None


@dataclass(frozen=True)
class _Task:
    view: TaskView
    sql: SqlTask
    file: str  # SQL_FILE as the metadata names it

    @property
    def key(self) -> str:
        return self.view.key


def check_warehouse(metadata: Metadata, config: ProjectConfig, pipeline_code: str | None = None) -> Findings:
    """The warehouse checks of the active SQL tasks (of `pipeline_code` only, when given)."""
    findings = Findings()
    try:
        warehouse = open_warehouse(config, checks=True)
    except EtlCraftError as exc:
        findings.warning = _unreachable(str(exc))
        return findings
    try:
        with _connection(warehouse, config) as (conn, database):
            _Checks(warehouse, conn, metadata, config, findings, database).run(pipeline_code)
    except _Unreachable as exc:
        findings.warning = _unreachable(exc.reason)
    finally:
        warehouse.dispose()
    return findings


class _Unreachable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _unreachable(reason: str) -> str:
    """The warning: `reason` names the Warehouse section, its secret variable and the remedy (Warehouse.failure)."""
    return f"the warehouse checks were skipped: {reason}; or pass --offline to skip these checks"


@contextlib.contextmanager
def _connection(warehouse: Warehouse, config: ProjectConfig) -> Iterator[tuple[sa.Connection, str | None]]:
    """A connection that cannot write: DuckDB's file opened read-only (a file not created yet reads as an empty
    warehouse of that name, and is not created); PostgreSQL's transactions are rolled back. With the name of the
    DuckDB database unqualified names are read in, when it is not the connection's."""
    engine, database = warehouse.engine, None
    if warehouse.dialect.name == "duckdb":
        path = sa.engine.make_url(str(warehouse.engine.url)).database or ":memory:"
        if path != ":memory:" and not Path(path).exists():
            engine, database = sa.create_engine("duckdb:///:memory:", poolclass=sa.pool.NullPool), Path(path).stem
        else:
            engine = sa.create_engine(warehouse.engine.url, poolclass=sa.pool.NullPool,
                                      connect_args={"read_only": True})
    try:
        conn = warehouse.connect() if engine is warehouse.engine else engine.connect()
    except EtlCraftError as exc:
        raise _Unreachable(str(exc)) from exc
    except _DRIVER_ERRORS as exc:
        raise _Unreachable(warehouse.failure(exc)) from exc
    try:
        with conn:
            yield conn, database
    finally:
        if engine is not warehouse.engine:
            engine.dispose()


class _Checks:
    def __init__(self, warehouse: Warehouse, conn: sa.Connection, metadata: Metadata, config: ProjectConfig,
                 findings: Findings, database: str | None) -> None:
        self.warehouse, self.conn, self.findings = warehouse, conn, findings
        self.dialect = warehouse.dialect.name
        with self._rolled_back() as session:
            try:
                self.catalog: Catalog = read_catalog(session)
            except _DRIVER_ERRORS as exc:
                timed_out = warehouse.statement_failure(exc)
                if timed_out is None:
                    raise
                raise _Unreachable(timed_out) from exc
        if database is not None:
            self.catalog.database = database
        self.tasks = [t for t in (_sql_task(v, config, self.dialect) for v in metadata.tasks) if t is not None]
        self.makers: dict[str, _Maker] = {}
        self._made_tables(metadata, config)

    @contextlib.contextmanager
    def _rolled_back(self) -> Iterator[Session]:
        """A session whose transaction is always rolled back: whatever the checks stage is gone after."""
        transaction = self.conn.begin()
        try:
            yield Session(self.conn, self.warehouse.dialect)
        finally:
            transaction.rollback()

    def _key(self, task: _Task) -> str:
        target = task.sql.target
        return self.catalog.key((target.catalog, target.schema, target.table))

    def _made_tables(self, metadata: Metadata, config: ProjectConfig) -> None:
        """The tables the warehouse does not have yet that a task creates, with their columns where known: an
        ingestion script's CREATE TABLE lists them; a SQL task's SELECT returns them where sqlglot can name them
        (a task reading another's output resolves once that one has)."""
        for view in metadata.tasks:
            if view.handler == "PYTHON" and view.script_file:
                for parts, columns in declared_tables(config.project_dir / SCRIPT_DIR / view.script_file,
                                                      self.dialect):
                    self._made(self.catalog.key(parts), _Maker(view.key, view.script_file), columns)
        for task in self.tasks:
            if task.sql.action != "DELETE_ROWS":
                self._made(self._key(task), _Maker(task.key, task.file, task.sql.select, task.sql.action), None)
        for _ in range(len(self.makers)):
            if not any([self._resolve_made(key, maker) for key, maker in self.makers.items()]):
                break

    def _made(self, key: str, maker: _Maker, columns: tuple[str, ...] | None) -> None:
        if key not in self.catalog.tables and key not in self.makers:
            self.makers[key] = maker
            self.catalog.made[key] = columns

    def _resolve_made(self, key: str, maker: _Maker) -> bool:
        if self.catalog.made[key] is not None or maker.select is None:
            return False
        outputs = self.catalog.resolve(maker.select).outputs
        if outputs is None:
            return False
        engine = [self.warehouse.dialect.engine_name(n) for n in CREATES.get(maker.action or "", ())]
        self.catalog.made[key] = (*outputs, *engine)
        return True

    def run(self, pipeline_code: str | None) -> None:
        for task in self.tasks:
            if pipeline_code in (None, task.view.pipeline_code):
                self._check(task)

    def _check(self, task: _Task) -> None:
        resolution = self.catalog.resolve(task.sql.select)
        if resolution.error is not None:
            self.findings.notes.append(f"task {task.key}: sqlglot cannot resolve the SELECT of {task.file!r} "
                                       f"({resolution.error}), so its tables and columns were not checked")
        found = [*self._table_problems(task, resolution), *self._column_problems(task, resolution)]
        self.findings.problems += found
        waiting = [k for k in resolution.reads if k not in self.catalog.tables and k in self.makers]
        for key in waiting:
            maker = self.makers[key]
            if self.catalog.made.get(key) is None:
                shown = self.catalog.show(key)
                self.findings.notes.append(f"task {task.key}: {shown} is made by task {maker.key} on its first run; "
                                           f"the columns read from it are not checked until it exists ({maker.file} "
                                           "does not say which columns it has)")
        if found or resolution.missing_tables:
            return
        offline_named = read_select(task.sql.select, self.dialect).resolved
        if not offline_named and resolution.outputs is not None:
            before = len(self.findings.problems)
            self._output_problems(task, resolution.outputs)
            if len(self.findings.problems) > before:
                return
        if waiting:
            self._judge_unstaged(task)
        else:
            self._judge_staged(task, check_keys=not offline_named and resolution.outputs is None)

    # -- tables and columns ------------------------------------------------------------------------------------

    def _problem(self, task: _Task, check: str, finding: str, value: str | None, expected: str, remedy: str) -> None:
        self.findings.problems.append(Problem(check, task.view, finding, value, expected, remedy))

    def _table_problems(self, task: _Task, resolution: Resolution) -> Iterator[Problem]:
        show = self.catalog.show
        for key in resolution.missing_tables:
            near = [show(k) for k in self.catalog.near(key)]
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            yield Problem("table-missing", task.view, f"the SELECT of {task.file!r} reads {show(key)}, which the "
                          f"{self.dialect} warehouse does not have and no task of the project writes{hint}", show(key),
                          "a table or view of the warehouse, or the TARGET_OBJECT of a SQL task of the project",
                          f"correct the table in sql_files/{task.file}, or create {show(key)} in the warehouse")

    def _column_problems(self, task: _Task, resolution: Resolution) -> Iterator[Problem]:
        for key, column in resolution.missing_columns:
            keys, table = key.split(" or "), self.catalog.show(key)
            columns = list(dict.fromkeys(c for k in keys for c in self.catalog.columns(k) or ()))
            makers = [self.makers[k] for k in keys if k not in self.catalog.tables and k in self.makers]
            near = [c for c in columns if c.lower() in {n.lower() for n in _near(column, columns)}]
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            owner = f" (made by task {makers[0].key} from {makers[0].file})" if makers else ""
            if not makers:
                remedy = f"correct the column in sql_files/{task.file}, or add it to {table}"
            elif makers[0].select is not None:
                remedy = f"correct the column in sql_files/{task.file}, or return it from sql_files/{makers[0].file}"
            else:
                remedy = (f"correct the column in sql_files/{task.file}, or add it to the CREATE TABLE in "
                          f"{SCRIPT_DIR}/{makers[0].file}")
            which = f"{table} does not have" if len(keys) == 1 else f"none of {table.replace(' or ', ', ')} has"
            yield Problem("column-missing", task.view, f"the SELECT of {task.file!r} reads column {column}, which "
                          f"{which}{hint}", column, f"a column of {table}{owner}: {_listed(columns)}", remedy)

    def _output_problems(self, task: _Task, outputs: tuple[str, ...]) -> None:
        returned = {o.lower() for o in outputs}
        for name in _MERGE_COLUMNS:
            spec, raw = params.BY_NAME[name], task.view.parameter(name)
            if raw is None or not spec.applies("SQL", task.sql.action) or spec.check(raw) is not None:
                continue
            missing = [c for c in spec.parse(raw) if c.lower() not in returned]
            if missing:
                self._problem(task, "merge-column-missing", f"parameter {name} names {', '.join(missing)}, which the "
                              f"SELECT of {task.file!r} does not return", raw,
                              f"columns the SELECT returns ({_listed(list(outputs))})",
                              f"correct {name} in a new project migration (migrations/NNNN_name.sql), or return "
                              "the column")

    # -- the target, judged as the SQL handler judges it ------------------------------------------------------

    def _judge_staged(self, task: _Task, *, check_keys: bool) -> None:
        with self._rolled_back() as session:
            try:
                stage = staging.build_stage(session, task.sql, empty=True)
            except _DRIVER_ERRORS as exc:
                timed_out = self.warehouse.statement_failure(exc)
                if timed_out is not None:  # not a fault of the SELECT: say so, and leave its target unchecked
                    self.findings.notes.append(f"task {task.key}: the trial of the SELECT of {task.file!r} was "
                                               f"stopped: {timed_out}; its target was not checked")
                    return
                self._problem(task, "select-fails", f"the {self.dialect} warehouse cannot run the SELECT of "
                              f"{task.file!r}: {driver_message(exc)}", task.file, "a SELECT the warehouse can run",
                              f"fix sql_files/{task.file}")
                return
            try:
                if check_keys and task.sql.action in ("SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"):
                    self._refusal(task, "merge-column-missing", guards.check_parameter_columns, task.sql, stage)
                target = inspect(session, task.sql)
                check_format(task.sql, target, self.dialect)
                if target.exists and task.sql.action not in ("CREATE_TABLE", "DELETE_ROWS"):
                    require(task.sql, target, REQUIRES.get(task.sql.action, ()))
                    new_columns(task.sql, target, stage)
                if target.exists and task.sql.action == "DELETE_ROWS" and task.sql.delete_mode == "soft":
                    require(task.sql, target, ("DELETE_FLAG",))
            except SqlGuardError as exc:
                self._guard_problem(task, "target-incompatible", exc)
            except _Refused:
                pass

    def _judge_unstaged(self, task: _Task) -> None:
        """A SELECT that reads a table not made yet cannot be staged: the target's format and the engine-managed
        columns the action needs are still judged; its columns against the SELECT's wait for the first run."""
        with self._rolled_back() as session:
            try:
                target = inspect(session, task.sql)
                check_format(task.sql, target, self.dialect)
                if target.exists and task.sql.action not in ("CREATE_TABLE", "DELETE_ROWS"):
                    require(task.sql, target, REQUIRES.get(task.sql.action, ()))
            except SqlGuardError as exc:
                self._guard_problem(task, "target-incompatible", exc)
                return
        if target.exists and task.sql.action not in ("CREATE_TABLE", "DELETE_ROWS"):
            self.findings.notes.append(f"task {task.key}: the columns of {task.sql.target} are checked against its "
                                       "SELECT once the tables it reads exist")

    def _refusal(self, task: _Task, check: str, guard: Callable[[SqlTask, Stage], None], sql: SqlTask,
                 stage: Stage) -> None:
        try:
            guard(sql, stage)
        except SqlGuardError as exc:
            self._guard_problem(task, check, exc)
            raise _Refused from exc

    def _guard_problem(self, task: _Task, check: str, exc: SqlGuardError) -> None:
        text = str(exc)
        text = text.split(" refused: ", 1)[-1].removesuffix(" (the target was not changed)")
        finding, _, remedy = text.partition("; ")
        self._problem(task, check, f"{task.sql.action} into {task.sql.target} would be refused: {finding}",
                      str(task.sql.target), f"a target {task.sql.action} can write: the columns and format the "
                      "SELECT and the task's parameters need", remedy or "see the SQL tasks guide")


class _Refused(Exception):
    """A guard refused: the target is not judged further (one problem per task)."""


def _sql_task(view: TaskView, config: ProjectConfig, dialect: str) -> _Task | None:
    """The task as the SQL handler reads it at run time; None when the offline checks already report why not."""
    if view.handler != "SQL" or view.action not in ACTIONS or not view.sql_file or not view.target:
        return None
    ctx = TaskContext(config.project_dir, config, view.pipeline_id, view.pipeline_code, 0, date(2000, 1, 1),
                      view.task_id, view.code, 0, 0, "SQL", view.action, view.sql_file, None, view.target,
                      {p.name: p.value or "" for p in view.parameters})
    try:
        sql = read_task(ctx, dialect, Stamp(view.pipeline_id, 0, 0, 0, "validate", datetime.now(UTC)))
    except (SqlGuardError, OSError):
        return None
    return _Task(view, sql, view.sql_file)


def _near(name: str, columns: list[str]) -> list[str]:
    return difflib.get_close_matches(name.lower(), [c.lower() for c in columns], n=2, cutoff=0.75)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "") if names else "no column"
