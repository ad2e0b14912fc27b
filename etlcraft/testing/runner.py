"""Running one hermetic test: the project's metadata from an in-memory SQLite Engine DB, each step's SELECT in an
in-memory DuckDB over the fixtures, its action applied by the SQL handler's own code (run_in_warehouse), and the
expectations compared. Nothing here opens a socket, starts a process or resolves a secret: the warehouse and the
Engine DB exist only in memory, and craft-connector.yml is read only for Warehouse.dialect.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import sqlglot
from sqlalchemy.exc import DBAPIError

from etlcraft.core.errors import EtlCraftError, SqlGuardError
from etlcraft.core.selects import SelectError, read_condition
from etlcraft.core.sqltext import RUN_VALUES, SQLGLOT_DIALECTS
from etlcraft.engine.migrations import Migration, project_migration
from etlcraft.handlers.business_rules import Rule, judge
from etlcraft.handlers.sql.hashing import HASH_VERSION
from etlcraft.handlers.sql.spec import SqlTask, Stamp, task_from_text
from etlcraft.handlers.sql.task import run_in_warehouse
from etlcraft.services.metadata import Metadata, TaskView, load_metadata
from etlcraft.testing.errors import HermeticError, InvalidTest, SafetyViolation
from etlcraft.testing.files import Deadline, Limits, ReadFile, parse_jsonl, parse_yaml, read_confined
from etlcraft.testing.manifest import KIND, Expect, Manifest, Table
from etlcraft.testing.sandbox import engine_db, warehouse_for_test
from etlcraft.warehouse.connection import Session, Warehouse
from etlcraft.warehouse.dialects import ENGINE_COLUMN_TYPES
from etlcraft.warehouse.names import TableName, parse_table_name

#: The actor stamped on every row a test writes, and the time of step 1 (step n is n - 1 seconds later).
ACTOR = "etl-craft-test"
BASE_TIME = datetime(2000, 1, 1, tzinfo=UTC)
MAX_SQL_BYTES = 1024 * 1024
MAX_MIGRATION_BYTES = 10 * 1024 * 1024
MAX_MIGRATIONS = 10_000
_DRIVER_ERRORS = (DBAPIError, duckdb.Error)


@dataclass
class Project:
    """What every test of one project shares: its metadata, read once from its migrations, and its dialect."""

    root: Path
    metadata: Metadata
    dialect: str
    digests: list[tuple[str, str]]  # (migrations/<file>, sha256) of every migration applied


def load_project(root: Path) -> Project:
    """The project's migrations applied to a new in-memory SQLite Engine DB, and its warehouse dialect."""
    migrations, digests = _read_migrations(root)
    try:
        with engine_db(migrations) as db:
            metadata = load_metadata(db)
    except EtlCraftError as exc:
        raise InvalidTest("metadata_invalid", f"the project's metadata migrations cannot be applied: "
                                              f"{_redact(str(exc))}") from None
    return Project(root, metadata, _warehouse_dialect(root), digests)


def _read_migrations(root: Path) -> tuple[list[Migration], list[tuple[str, str]]]:
    try:
        fd = os.open(root / "migrations", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return [], []
    except OSError:
        raise InvalidTest("metadata_invalid", "migrations is not a readable folder of the project (a symbolic "
                                              "link is not followed)") from None
    try:
        names = sorted(os.listdir(fd))
    finally:
        os.close(fd)
    if len(names) > MAX_MIGRATIONS:
        raise InvalidTest("metadata_invalid", f"migrations holds more than {MAX_MIGRATIONS:,} entries")
    migrations, digests = [], []
    for name in names:
        if name.startswith("."):
            continue
        file = read_confined(root, f"migrations/{name}", max_bytes=MAX_MIGRATION_BYTES)
        try:
            text = file.data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidTest("not_utf8", f"{file.path} is not UTF-8; save it as UTF-8") from None
        migration = project_migration(name, text)
        if migration is None:
            raise InvalidTest("metadata_invalid", f"{file.path} is not a migration file name; expected "
                                                  "NNNN_name.sql")
        migrations.append(migration)
        digests.append((file.path, file.sha256))
    return migrations, digests


def _warehouse_dialect(root: Path) -> str:
    """Warehouse.dialect of craft-connector.yml (duckdb when absent); no other key is looked at."""
    try:
        config = parse_yaml(read_confined(root, "craft-connector.yml", max_bytes=1024 * 1024))
    except InvalidTest as exc:
        if exc.code == "file_missing":
            return "duckdb"
        raise
    section = config.get("Warehouse") if isinstance(config, dict) else None
    dialect = section.get("dialect", "duckdb") if isinstance(section, dict) else "duckdb"
    return str(dialect)


# -- results ---------------------------------------------------------------------------------------------------

@dataclass
class Finding:
    """One failed expectation: a code and metadata (counts, columns, line numbers, key digests), never values."""

    step: int
    task: str
    code: str
    detail: dict[str, Any]


@dataclass
class Outcome:
    findings: list[Finding] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (role, sha256) of every file consumed


def run_manifest(project: Project, manifest: Manifest, outcome: Outcome) -> None:
    """Run the manifest's steps on a new in-memory warehouse; failed expectations land in outcome.findings."""
    deadline = Deadline(manifest.limits.timeout_seconds)
    outcome.inputs.append((f"manifest:{manifest.path}", manifest.sha256))
    outcome.inputs.extend((f"migration:{p}", d) for p, d in project.digests)
    dialect = manifest.dialect or project.dialect
    if dialect not in SQLGLOT_DIALECTS:
        raise InvalidTest("dialect_unsupported", f"the warehouse dialect {dialect!r} is not supported; etl-craft "
                                                 "test reads duckdb or postgresql SQL: set warehouse_dialect")
    pipeline = _pipeline(project, manifest)
    tasks = {t.code: t for t in project.metadata.tasks_of(pipeline.pipeline_id)}
    with warehouse_for_test(deadline) as warehouse:
        for name, table in sorted(manifest.relations.items()):
            _load(warehouse, project.root, table, parse_table_name(name, "duckdb"), manifest.limits, deadline,
                  outcome, role=f"relation:{name}")
        versions: dict[str, int | None] = {}
        stamps: dict[int, int] = {}
        for number, step in enumerate(manifest.steps, start=1):
            deadline.check(f"starting step {number}")
            task = tasks.get(step.task)
            if task is None:
                raise InvalidTest("task_unknown", f"{manifest.path}: step {number} names task {step.task!r}, which "
                                                  f"pipeline {manifest.pipeline} does not have (its tasks: "
                                                  f"{', '.join(sorted(tasks)) or 'none'})")
            now = BASE_TIME + timedelta(seconds=number - 1)
            stamps[int(now.timestamp())] = number
            target = _target(task, manifest, number)
            if step.initial_target is not None:
                _load(warehouse, project.root, step.initial_target, target, manifest.limits, deadline, outcome,
                      role=f"initial_target:{number}", engine_types=True)
                versions[target.key] = HASH_VERSION
            flags = _run_step(warehouse, project, manifest, task, number, now, dialect, versions, outcome)
            deadline.check(f"running step {number} ({task.code})")
            _check(warehouse, project.root, manifest, task, number, target, step.expect, stamps, flags, deadline,
                   outcome)


def _pipeline(project: Project, manifest: Manifest) -> Any:
    found = [p for p in project.metadata.pipelines if p.code == manifest.pipeline]
    if not found:
        known = ", ".join(sorted(p.code for p in project.metadata.pipelines)) or "none"
        raise InvalidTest("pipeline_unknown", f"{manifest.path}: pipeline {manifest.pipeline!r} is not an active "
                                              f"pipeline of the project's migrations (active: {known})")
    return found[0]


def _target(task: TaskView, manifest: Manifest, number: int) -> TableName:
    if task.handler not in ("SQL", "BUSINESS_RULES"):
        raise InvalidTest("handler_unsupported", f"{manifest.path}: step {number} names task {task.code}, a "
                                                 f"{task.handler} task; etl-craft test runs SQL and BUSINESS_RULES "
                                                 "tasks (test an ingestion script with its own unit tests)")
    if not task.target:
        raise InvalidTest("metadata_invalid", f"task {task.key} has no TARGET_OBJECT; set it with a migration")
    try:
        return parse_table_name(task.target, "duckdb")
    except ValueError as exc:
        raise InvalidTest("metadata_invalid", f"task {task.key}: TARGET_OBJECT {exc}") from None


def _run_step(warehouse: Warehouse, project: Project, manifest: Manifest, task: TaskView, number: int,
              now: datetime, dialect: str, versions: dict[str, int | None], outcome: Outcome) -> dict[str, int]:
    """Apply the step's task; the keys breaking each rule for a BUSINESS_RULES task, else {}."""
    parameters = {p.name: p.value for p in task.parameters if p.value is not None}
    parameters.update(manifest.parameters)
    if task.handler == "BUSINESS_RULES":
        return _judge_rules(warehouse, project, task, number, dialect)
    if task.sql_file is None:
        raise InvalidTest("metadata_invalid", f"task {task.key} has no SQL_FILE; set it with a migration")
    file = read_confined(project.root, f"sql_files/{task.sql_file}", max_bytes=MAX_SQL_BYTES)
    outcome.inputs.append((f"sql:{file.path}", file.sha256))
    try:
        text = file.data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidTest("not_utf8", f"{file.path} is not UTF-8; save it as UTF-8") from None
    pipeline_id = task.pipeline_id
    stamp = Stamp(pipeline_id, 1, number, number, ACTOR, now)
    run_values = dict(zip(RUN_VALUES, (pipeline_id, 1, number, manifest.run_date), strict=True))
    try:
        sql_task = _sql_task(task.key, task.action, task.sql_file, text, task.target, tuple(sorted(parameters.items())),
                             tuple(run_values.items()), dialect, stamp)
    except SqlGuardError as exc:
        raise InvalidTest("task_invalid", f"step {number}: {_redact(str(exc))}") from None
    try:
        result = run_in_warehouse(warehouse, sql_task, versions.get(sql_task.target.key))
    except SqlGuardError as exc:
        raise InvalidTest("task_refused", f"step {number}: {_redact(str(exc))}") from None
    except EtlCraftError as exc:
        if isinstance(exc.__cause__, duckdb.PermissionException):
            raise SafetyViolation("external_access", f"step {number} ({task.key}, {sql_task.action}): the SELECT "
                                  "reads a file or a URL (read_csv, COPY, ATTACH and the like), which a hermetic "
                                  "test refuses; give the data as a relation fixture of the manifest") from None
        cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "error"
        raise InvalidTest("warehouse_error", f"step {number} ({task.key}, {sql_task.action}): DuckDB refused a "
                                             f"statement ({cause}); run the SELECT over the fixtures yourself to see "
                                             "why (the report shows no SQL and no values)") from None
    if result.record_version:
        versions[sql_task.target.key] = HASH_VERSION
    counts = result.counts
    outcome.steps.append({"step": number, "task": task.code, "action": sql_task.action,
                          "counts": {k: v for k, v in dataclasses.asdict(counts).items() if v is not None}})
    return {}


@functools.lru_cache(maxsize=256)
def _sql_task(task: str, action: str | None, sql_file: str | None, text: str, target: str | None,
              parameters: tuple[tuple[str, str], ...], run_values: tuple[tuple[str, object], ...], dialect: str,
              stamp: Stamp) -> SqlTask:
    """The step's SqlTask, its SELECT read, checked and transpiled to DuckDB. A pure function of its arguments (the
    SqlTask is frozen), kept per process: the tests of one task in a suite share the parsing, which costs more than
    the step's small fixtures."""
    sql_task = task_from_text(task=task, action=action, sql_file=sql_file, text=text, target_object=target,
                              parameters=dict(parameters), run_values=dict(run_values), dialect=dialect, stamp=stamp)
    if dialect == "duckdb":
        return sql_task
    select = sqlglot.transpile(sql_task.select, read=SQLGLOT_DIALECTS[dialect], write="duckdb")[0]
    return dataclasses.replace(sql_task, select=select, target=parse_table_name(target or "", "duckdb"))


def _judge_rules(warehouse: Warehouse, project: Project, task: TaskView, number: int, dialect: str
                 ) -> dict[str, int]:
    rules = []
    for view in project.metadata.rules_of(task.task_id):
        try:
            condition = read_condition(view.rule_sql, dialect, source=f"rule {view.code}")
        except SelectError as exc:
            raise InvalidTest("task_invalid", f"step {number}: rule {view.code} {exc.found}; {exc.remedy}") from None
        if dialect != "duckdb":
            condition = sqlglot.transpile(condition, read=SQLGLOT_DIALECTS[dialect], write="duckdb")[0]
        rules.append(Rule(view.rule_id, view.code, view.rule_type, view.key_column, condition))
    if not rules:
        raise InvalidTest("task_invalid", f"step {number}: BUSINESS_RULES task {task.key} has no active rule")
    try:
        with warehouse.transaction() as session:
            _judged, _, judgements = judge(session, task.key, parse_table_name(task.target or "", "duckdb"), rules)
    except SqlGuardError as exc:
        raise InvalidTest("task_refused", f"step {number}: {_redact(str(exc))}") from None
    except _DRIVER_ERRORS as exc:
        raise InvalidTest("warehouse_error", f"step {number} ({task.key}): DuckDB refused a rule "
                                             f"({type(exc).__name__})") from None
    flags = {j.rule.code: len(j.failing) for j in judgements}
    return flags


# -- fixtures into tables -----------------------------------------------------------------------------------------

def _load(warehouse: Warehouse, root: Path, table: Table, name: TableName, limits: Limits, deadline: Deadline,
          outcome: Outcome, *, role: str, engine_types: bool = False) -> None:
    file = read_confined(root, table.fixture, max_bytes=limits.max_bytes)
    outcome.inputs.append((f"{role}:{file.path}", file.sha256))
    rows = parse_jsonl(file, limits, deadline)
    columns = _columns(file, rows, table.columns, engine_types)
    dialect = warehouse.dialect
    ref = dialect.table(name)
    with warehouse.transaction() as session:
        if name.catalog or name.schema.lower() != "main":  # the test's database has main already
            session.run(dialect.create_schema(name))
        session.run(f"CREATE OR REPLACE TABLE {ref} "
                    f"({', '.join(f'{dialect.quote(c)} {t}' for c, t in columns.items())})")
        _insert(session, ref, file, list(columns), rows)


#: Rows per INSERT statement when a fixture is loaded: one statement for a small fixture, a bounded one for a large.
INSERT_BATCH_ROWS = 500


def _insert(session: Session, ref: str, file: ReadFile, columns: list[str], rows: list[dict[str, Any]]) -> None:
    """The rows into table `ref`, a few hundred per INSERT ... VALUES (DuckDB casts each value to its column's type,
    as one INSERT per row would; executemany runs a statement per row, which costs more than a small test)."""
    marks = "(" + ", ".join("?" for _ in columns) + ")"
    cursor = session.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        for start in range(0, len(rows), INSERT_BATCH_ROWS):
            batch = rows[start:start + INSERT_BATCH_ROWS]
            values = [_value(row.get(c)) for row in batch for c in columns]
            cursor.execute(f"INSERT INTO {ref} VALUES {', '.join(marks for _ in batch)}", values)
    except duckdb.Error as exc:
        raise InvalidTest("fixture_invalid", f"{file.path}: a value does not fit its column's type "
                                             f"({type(exc).__name__}); declare the column's type in columns or "
                                             "correct the value") from None
    finally:
        cursor.close()


def _typed(session: Session, file: ReadFile, types: list[str], columns: list[str], rows: list[dict[str, Any]]
           ) -> list[tuple[Any, ...]]:
    """The rows as DuckDB reads them into columns of `types`, in fixture order: each value cast to its column's type
    as an INSERT into such a table casts it, selected from VALUES (a few hundred rows per query), with no table
    made, filled, read and dropped for them."""
    row_sql = "(" + ", ".join(f"CAST(? AS {t})" for t in types) + ")"
    cursor = session.conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    typed: list[tuple[Any, ...]] = []
    try:
        for start in range(0, len(rows), INSERT_BATCH_ROWS):
            batch = rows[start:start + INSERT_BATCH_ROWS]
            values = [_value(row.get(c)) for row in batch for c in columns]
            cursor.execute(f"SELECT * FROM (VALUES {', '.join(row_sql for _ in batch)}) etl_craft_expected",
                           values)
            typed += [tuple(r) for r in cursor.fetchall()]
    except duckdb.Error as exc:
        raise InvalidTest("fixture_invalid", f"{file.path}: a value does not fit its column's type "
                                             f"({type(exc).__name__}); declare the column's type in columns or "
                                             "correct the value") from None
    finally:
        cursor.close()
    return typed


def _value(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def _columns(file: ReadFile, rows: list[dict[str, Any]], declared: dict[str, str], engine_types: bool
             ) -> dict[str, str]:
    """Each column (in order of first appearance) with its DuckDB type: declared, else inferred from JSON."""
    names = list(dict.fromkeys([*declared, *(k for row in rows for k in row)]))
    if not names:
        raise InvalidTest("fixture_invalid", f"{file.path} has no row and the manifest declares no columns; add "
                                             "rows or declare the table's columns with their types")
    types: dict[str, str] = {}
    for name in names:
        if name in declared:
            types[name] = declared[name]
        elif engine_types and name.upper() in ENGINE_COLUMN_TYPES:
            types[name] = ENGINE_COLUMN_TYPES[name.upper()]
        else:
            types[name] = _infer(file, name, (row.get(name) for row in rows))
    return types


def _infer(file: ReadFile, column: str, values: Iterable[Any]) -> str:
    kinds = {_kind(v) for v in values if v is not None}
    if len(kinds) > 1:
        raise InvalidTest("fixture_mixed_types", f"{file.path}: column {column} holds values of several JSON types "
                                                 f"({', '.join(sorted(kinds))}); declare its type in columns")
    return {"boolean": "BOOLEAN", "integer": "BIGINT", "number": "DOUBLE", "string": "VARCHAR",
            "object": "JSON", "array": "JSON"}.get(next(iter(kinds), "string"), "VARCHAR")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# -- expectations -----------------------------------------------------------------------------------------------

def _check(warehouse: Warehouse, root: Path, manifest: Manifest, task: TaskView, number: int, target: TableName,
           expect: Expect, stamps: dict[int, int], flags: dict[str, int], deadline: Deadline,
           outcome: Outcome) -> None:
    def fail(code: str, **detail: Any) -> None:
        outcome.findings.append(Finding(number, task.code, code, detail))

    for rule, expected in sorted(expect.rule_flags.items()):
        found = flags.get(rule)
        if found is None:
            fail("rule_unknown", rule=rule)
        elif found != expected:
            fail("rule_flags", rule=rule, expected=expected, found=found)
    if expect.rows is None and not expect.schema and expect.output is None and expect.history is None:
        return
    ref = warehouse.dialect.table(target)
    compared: list[Finding] = []  # reported after the row count and the schema, in this order
    with warehouse.transaction() as session:
        types = {str(r[0]).lower(): (str(r[0]), str(r[1])) for r in session.rows(f"DESCRIBE {ref}")}
        keys = [k for k in (task.parameter("MERGE_KEY") or "").replace(" ", "").split(",") if k]
        count = None  # the target's rows, as the comparison read them
        for kind, path in (("output", expect.output), ("history", expect.history)):
            if path is not None:
                count = _compare(session, root, manifest, ref, types, path, kind, keys, stamps, deadline, outcome,
                                 lambda code, **detail: compared.append(Finding(number, task.code, code, detail)))
        if expect.rows is not None and count is None:
            count = int(session.scalar(f"SELECT COUNT(*) FROM {ref}"))
    if expect.rows is not None and count != expect.rows:
        fail("row_count", expected=expect.rows, found=count)
    for column, expected_type in sorted(expect.schema.items()):
        found_type = types.get(column.lower())
        if found_type is None:
            fail("schema_column_missing", column=column, expected=expected_type)
        elif _type(found_type[1]) != _type(expected_type):
            fail("schema_type", column=column, expected=_type(expected_type), found=_type(found_type[1]))
    outcome.findings.extend(compared)


def _type(text: str) -> str:
    return " ".join(text.upper().split())


def _compare(session: Session, root: Path, manifest: Manifest, ref: str, types: dict[str, tuple[str, str]],
             path: str, kind: str, keys: list[str], stamps: dict[int, int], deadline: Deadline, outcome: Outcome,
             fail: Any) -> int | None:
    """Exact rows, unordered, duplicates counted, on the expected fixture's columns. For `history` (SCD2) the
    expected rows give validity as steps: valid_from_step and valid_to_step (null while the version is open).
    The number of the target's rows it read; None when it could not compare (a column missing)."""
    file = read_confined(root, path, max_bytes=manifest.limits.max_bytes)
    outcome.inputs.append((f"{kind}:{file.path}", file.sha256))
    rows = parse_jsonl(file, manifest.limits, deadline)
    steps = ("valid_from_step", "valid_to_step") if kind == "history" else ()
    names = [n for n in dict.fromkeys(k for row in rows for k in row) if n not in steps]
    missing = [n for n in names if n.lower() not in types]
    if missing:
        fail(f"{kind}_column_missing", columns=missing)
        return None
    actual_columns = [types[n.lower()] for n in names]
    q = session.dialect.quote
    selected = [q(name) for name, _ in actual_columns]
    if kind == "history":
        for engine_name in ("VALID_FROM", "VALID_TO"):
            if engine_name.lower() not in types:
                fail("history_not_scd2", missing=engine_name)
                return None
            selected.append(f"CAST(epoch({q(types[engine_name.lower()][0])}) AS BIGINT)")
    expected = _typed(session, file, [*(t for _, t in actual_columns), *("BIGINT" for _ in steps)],
                      [*names, *steps], rows)
    actual = [tuple(r) for r in session.rows(f"SELECT {', '.join(selected)} FROM {ref}")]
    if kind == "history":
        actual = [(*r[:-2], _step(r[-2], stamps), _step(r[-1], stamps)) for r in actual]
    want, have = Counter(expected), Counter(actual)
    absent, extra = want - have, have - want
    if absent or extra:
        key_positions = [i for i, n in enumerate(names) if n.lower() in {k.lower() for k in keys}]
        lines = {row: [i + 1 for i, r in enumerate(expected) if r == row] for row in absent}
        fail(f"{kind}_rows", compared_columns=names, expected_rows=len(expected), found_rows=len(actual),
             missing={"count": sum(absent.values()),
                      "fixture_lines": sorted(line for ls in lines.values() for line in ls)[:20],
                      "keys": _digests(absent, key_positions, names)},
             unexpected={"count": sum(extra.values()), "keys": _digests(extra, key_positions, names)})
    return len(actual)


def _step(epoch: int | None, stamps: dict[int, int]) -> int | None:
    """The step whose time `epoch` is; 0 for a time before the test (an initial target's)."""
    return None if epoch is None else stamps.get(int(epoch), 0)


def _digests(rows: Counter[tuple[Any, ...]], positions: list[int], names: list[str]) -> list[dict[str, Any]]:
    """Each row's key as a digest of its values (never the values), with the key's column names; at most 20."""
    if not positions:
        return []
    found = []
    for row, times in sorted(rows.items(), key=lambda item: _key_digest(item[0], positions)):
        found.append({"columns": [names[i] for i in positions], "digest": _key_digest(row, positions),
                      "count": times})
    return found[:20]


def _key_digest(row: tuple[Any, ...], positions: list[int]) -> str:
    text = json.dumps([str(row[i]) for i in positions], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _redact(message: str) -> str:
    """A handler's message without the example values it may show ("for example customer_id=7; ...")."""
    message = re.sub(r"for example [^;()]*?(?=; |\)|$)", "for example <values not shown>", message)
    return re.sub(r"(/[^\s/]+)+/", "", message)


def test_id(manifest: Manifest, inputs: list[tuple[str, str]], dialect: str) -> str:
    """sha256 of the canonical inputs: the contract, the manifest as parsed, the dialect and every consumed file's
    project-relative path and digest. No absolute path, time, host or environment value enters it."""
    canonical = json.dumps({"contract": KIND, "manifest": manifest.document, "dialect": dialect,
                            "inputs": sorted(inputs)}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


__all__ = ["HermeticError", "Outcome", "Project", "load_project", "run_manifest", "test_id"]
