"""The migration runner: the Engine DB's own schema (stream ENGINE) and a project's metadata (stream PROJECT).

Everything one call applies happens in one transaction under the migration lock (a transaction-level advisory
lock on PostgreSQL, BEGIN IMMEDIATE on SQLite): versioned migrations that are pending, then the repeatable
objects (functions, triggers and views) whose rendered text changed, or that create a view the Engine DB
lacks (all of them when a versioned migration was applied), then (PostgreSQL) the privileges on them (PUBLIC
executes no function; the roles of `etl-craft grant` get their grants again), then the project's pending metadata
migrations. Only a transaction holding the migration lock may write SCHEMA_MIGRATIONS and the ENG_ reference
tables.
An applied migration whose file changed is refused: migrations are immutable once applied.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from etlcraft.core import parameters
from etlcraft.core.actor import current_actor
from etlcraft.core.errors import MigrationError
from etlcraft.core.graph import Cycle, TaskDependency, dependency_cycles
from etlcraft.core.sqltext import SQLGLOT_DIALECTS, Statement, split_statements
from etlcraft.engine.actions import record_action
from etlcraft.engine.catalog import owned_tables, table_exists, view_names
from etlcraft.engine.db import EngineDB
from etlcraft.engine.queries import fetch_all
from etlcraft.engine.refusals import refusal
from etlcraft.engine.render import MIGRATE_LOCK_KEY, render
from etlcraft.paths import sql_dir

ENGINE = "ENGINE"
PROJECT = "PROJECT"
_VERSIONED = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql\.j2$")
_REPEATABLE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql\.j2$")
_PROJECT_FILE = re.compile(r"^(\d{4})_([A-Za-z0-9_]+)\.sql$")
_CREATE_VIEW = re.compile(r"^CREATE (?:OR REPLACE )?VIEW (?:\w+\.)?(\w+)", re.MULTILINE)
_CHANGED_TABLE = re.compile(
    r"\b(?:CREATE TABLE|ALTER TABLE|INSERT INTO|CREATE (?:UNIQUE )?INDEX \w+ ON)\s+(?:\w+\.)?(\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class Migration:
    stream: str
    version: str  # "0001" for a versioned migration, "R:090_guards" for a repeatable object
    name: str
    kind: str  # VERSIONED or REPEATABLE
    sql: str
    source: str  # the file, as a user would find it

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()

    @property
    def views(self) -> frozenset[str]:
        """The views the rendered SQL creates, upper case."""
        return frozenset(name.upper() for name in _CREATE_VIEW.findall(self.sql))


@dataclass
class MigrateReport:
    applied: list[Migration] = field(default_factory=list)
    refreshed: list[Migration] = field(default_factory=list)
    project: list[tuple[Migration, dict[tuple[str, str], int]]] = field(default_factory=list)
    engine_version: str | None = None

    @property
    def changed_anything(self) -> bool:
        return bool(self.applied or self.refreshed or self.project)


def engine_migrations(dialect: str, schema: str) -> list[Migration]:
    """The packaged versioned migrations, rendered for `dialect`, in order."""
    found = []
    for path in sorted((sql_dir() / "migrations").glob("*.sql.j2")):
        match = _VERSIONED.match(path.name)
        if not match:
            raise MigrationError(
                f"sql/migrations/{path.name} is not named NNNN_name.sql.j2; rename it, e.g. 0002_add_pools.sql.j2"
            )
        sql = render(f"migrations/{path.name}", dialect, schema)
        found.append(Migration(ENGINE, match.group(1), match.group(2), "VERSIONED", sql, f"sql/migrations/{path.name}"))
    return found


def repeatable_objects(dialect: str, schema: str, tables: Sequence[object]) -> list[Migration]:
    """The functions, triggers and views of sql/functions, rendered against the live catalog."""
    found = []
    for path in sorted((sql_dir() / "functions").glob("*.sql.j2")):
        match = _REPEATABLE.match(path.name)
        if not match:
            continue  # _macros.sql.j2 and other partials
        sql = render(f"functions/{path.name}", dialect, schema, tables=tables)
        name = f"{match.group(1)}_{match.group(2)}"
        found.append(Migration(ENGINE, f"R:{name}", name, "REPEATABLE", sql, f"sql/functions/{path.name}"))
    return found


def project_migrations(folder: Path) -> list[Migration]:
    """A project's metadata migrations: migrations/NNNN_name.sql, in order."""
    if not folder.is_dir():
        return []
    found: dict[str, Migration] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or (path.is_dir() and not path.name.endswith(".sql")):
            continue
        match = _PROJECT_FILE.match(path.name)
        if not match:
            raise MigrationError(
                f"{path} is not a migration file name; expected NNNN_name.sql (four digits, letters, digits "
                "and _), e.g. 0002_add_orders.sql"
            )
        if not path.is_file():
            raise MigrationError(
                f"{path} is a folder, not a migration file; a migration is one file of SQL statements: move what "
                "the folder holds out of migrations/ (or into one file NNNN_name.sql) and remove the folder"
            )
        version = match.group(1)
        if version in found:
            raise MigrationError(
                f"{path.name} and {found[version].name} share the number {version}; give each migration its own"
            )
        found[version] = Migration(PROJECT, version, path.name, "VERSIONED", _read_migration(path), str(path))
    return list(found.values())


def _read_migration(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise MigrationError(
            f"{path} is not UTF-8 text: byte {exc.start} (line {line}) is 0x{data[exc.start]:02x}, which UTF-8 does "
            "not allow there; save the file as UTF-8 (for example iconv -f latin1 -t utf-8) and run etl-craft "
            "migrate again; nothing was applied"
        ) from exc


def project_migration(name: str, sql: str) -> Migration | None:
    """The metadata migration migrations/`name` holding `sql`; None when `name` is not NNNN_name.sql (etl-craft
    test reads the files itself, confined to the project)."""
    match = _PROJECT_FILE.match(name)
    return None if match is None else Migration(PROJECT, match.group(1), name, "VERSIONED", sql, f"migrations/{name}")


def migrate(
    db: EngineDB, *, project_dir: Path | None = None, up_to: str | None = None, command: str = "migrate",
    project: Sequence[Migration] | None = None, project_code: str | None = None, engine_current: bool = False,
    record: bool = True,
) -> MigrateReport:
    """Bring the Engine DB up to date (engine migrations up to `up_to`, all by default), then apply the pending
    metadata migrations of `project_dir`/migrations when a project is given (or `project`, migrations already
    read), against the ledger of project `project_code` (_project_scope). A call that changes anything is recorded
    in AUD_ACTIONS as `command`, in the same transaction. `engine_current`: the caller knows the Engine DB's own
    schema is this etl-craft's (etl-craft test's in-memory copy of the schema it has just migrated or verified), so
    the engine's migrations and objects are neither rendered nor compared again: only the project's are applied.
    `record` False: no AUD_ACTIONS row (etl-craft test's in-memory Engine DB, read once for its metadata and
    dropped, where the row would have no reader)."""
    report = MigrateReport()
    pending_project = (list(project) if project is not None
                       else project_migrations(project_dir / "migrations") if project_dir else [])
    with db.write() as conn:
        _lock(db, conn)
        if not engine_current:
            _migrate_engine(db, conn, report, up_to)
        if project_dir is not None or project is not None:
            scope = _project_scope(db, conn, project_code)
            project_ledger = _ledger(db, conn, scope)
            _check_applied(project_ledger, pending_project, PROJECT, known=pending_project,
                           owner=_LedgerOwner(scope, named=bool(project_code)))
            for migration in pending_project:
                if (PROJECT, migration.version) not in project_ledger:
                    report.project.append((migration, _apply_project_migration(db, conn, migration)))
            _record(db, conn, project_ledger, [m for m, _ in report.project], scope)
        _analyze(db, conn, _changed_tables(report))
        if report.changed_anything and record:
            record_action(db, conn, command, {
                "project": str(project_dir) if project_dir else None,
                "applied": [f"{m.stream}:{m.version}" for m in [*report.applied, *(p for p, _ in report.project)]],
            })
    return report


def _migrate_engine(db: EngineDB, conn: sa.Connection, report: MigrateReport, up_to: str | None) -> None:
    """The engine's part of migrate(): its pending versioned migrations, then the repeatable objects that changed."""
    ledger = _ledger(db, conn)
    known = engine_migrations(db.dialect, db.schema)
    engine = [m for m in known if up_to is None or m.version <= up_to]
    _check_applied(ledger, engine, ENGINE, known=known)
    for migration in engine:
        if (ENGINE, migration.version) not in ledger:
            db.execute_script(conn, migration.sql)
            report.applied.append(migration)
    tables = owned_tables(db, conn)
    views = view_names(db, conn)
    for obj in repeatable_objects(db.dialect, db.schema, tables):
        # A view a versioned migration dropped (to change a column the view reads) is created again here, and
        # after any versioned migration every object is: on SQLite a migration that makes a table again (to
        # change a NOT NULL or a CHECK) drops the table's triggers with it, whatever the guards' text says.
        if report.applied or ledger.get((ENGINE, obj.version)) != obj.checksum or not obj.views <= views:
            db.execute_script(conn, obj.sql)
            report.refreshed.append(obj)
    if db.is_postgres:
        from etlcraft.engine import grants  # PostgreSQL's privileges: a SQLite Engine DB need not load them

        # A function created again has PUBLIC's EXECUTE and none of the roles' grants; views may be new.
        grants.reapply(db, conn)
    _record(db, conn, ledger, [*report.applied, *report.refreshed])
    report.engine_version = max((m.version for m in engine), default=None)


def _changed_tables(report: MigrateReport) -> set[str]:
    """The tables this call created or changed, upper case: those an applied engine migration creates, alters,
    indexes or fills, and the CFG_ tables an applied project migration wrote (AUD_METADATA_CHANGES)."""
    tables = {name.upper() for m in report.applied for name in _CHANGED_TABLE.findall(m.sql)}
    return tables | {table.upper() for _, changes in report.project for table, _ in changes}


def _analyze(db: EngineDB, conn: sa.Connection, tables: set[str]) -> None:
    """ANALYZE the tables this call changed, in its transaction: the planner then knows the metadata's real size
    and spread (a 1,000-task pipeline's edges) on a server whose autovacuum is off or has not come round yet, and
    the readiness and claim plans do not wait for it (issue 27). Tables a migration dropped are passed over, and so
    are empty ones: their statistics would say nothing of the rows to come, and on PostgreSQL an analyzed empty
    table loses the planner's floor of ten pages for a table never analyzed, so a plan made while the table is
    small reads it whole (tests/py/conformance/test_claim_at_scale.py saw the runs table scanned for each claim)."""
    live = {t.name.upper() for t in owned_tables(db, conn)}
    for table in sorted(tables & live):
        name = db.qualify(table)
        if conn.execute(sa.text(f"SELECT 1 FROM {name} LIMIT 1")).first() is not None:
            conn.execute(sa.text(f"ANALYZE {name}"))


def _lock(db: EngineDB, conn: sa.Connection) -> None:
    if db.is_postgres:
        db.without_statement_timeout(conn)  # it waits for another migrate, and may rebuild large tables
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
        conn.execute(sa.text(f"CREATE SCHEMA IF NOT EXISTS {db.schema}"))
        conn.execute(sa.text(f"SET LOCAL search_path TO {db.schema}"))
    # SQLite: write() began with BEGIN IMMEDIATE, which already holds the database's single write lock.


def _ledger(db: EngineDB, conn: sa.Connection, scope: str | None = None) -> dict[tuple[str, str], str]:
    """The applied migrations: the ENGINE ones, or with `scope` the PROJECT ones of that project's ledger (an Engine
    DB before 0021_project_ledgers has one ledger of PROJECT rows, whatever `scope` says)."""
    if not table_exists(db, conn, "SCHEMA_MIGRATIONS"):
        return {}
    table = db.qualify("SCHEMA_MIGRATIONS")
    if scope is None or not _has_project_ledgers(db, conn):
        stream = ENGINE if scope is None else PROJECT
        rows = conn.execute(sa.text(f"SELECT STREAM, VERSION, CHECKSUM FROM {table} WHERE STREAM = :s"), {"s": stream})
    else:
        rows = conn.execute(sa.text(f"SELECT STREAM, VERSION, CHECKSUM FROM {table} WHERE STREAM = :s"
                                    " AND PROJECT_CODE = :p"), {"s": PROJECT, "p": scope})
    return {(stream, version): checksum for stream, version, checksum in rows}


def _has_project_ledgers(db: EngineDB, conn: sa.Connection) -> bool:
    """Whether SCHEMA_MIGRATIONS keeps one ledger per project (PROJECT_CODE, from 0021_project_ledgers)."""
    if db.is_postgres:
        found = conn.execute(sa.text("SELECT 1 FROM information_schema.columns WHERE table_schema = :schema AND"
                                     " table_name = 'schema_migrations' AND column_name = 'project_code'"),
                             {"schema": db.schema})
    else:
        found = conn.execute(sa.text("SELECT 1 FROM pragma_table_info('SCHEMA_MIGRATIONS')"
                                     " WHERE upper(name) = 'PROJECT_CODE'"))
    return found.first() is not None


def _project_scope(db: EngineDB, conn: sa.Connection, project_code: str | None) -> str:
    """The ledger a project folder's migrations are kept in: `project_code` (Orchestration: Project or
    --project-code), else the one project the ledgers hold ('' before any was named). Several ledgers and no code
    are refused: the folder's migrations could be taken for another project's."""
    if project_code:
        return project_code
    if not table_exists(db, conn, "SCHEMA_MIGRATIONS") or not _has_project_ledgers(db, conn):
        return ""
    scopes = sorted(str(r[0]) for r in conn.execute(sa.text(
        f"SELECT DISTINCT PROJECT_CODE FROM {db.qualify('SCHEMA_MIGRATIONS')} WHERE STREAM = :s"), {"s": PROJECT}))
    if len(scopes) <= 1:
        return scopes[0] if scopes else ""
    listed = ", ".join(s or "(unnamed)" for s in scopes)
    raise MigrationError(
        f"this Engine DB holds the metadata migrations of {len(scopes)} projects ({listed}) "
        "and no project was named, expected one: set Orchestration: Project in the project's craft-connector.yml "
        "(or give --project-code P) so its migrations are checked against its own ledger; nothing was applied")


@dataclass(frozen=True)
class _LedgerOwner:
    """Whose ledger a project folder's migrations were checked against: project `code`, either `named` by the folder
    (Orchestration: Project or --project-code) or taken as the only ledger the Engine DB holds."""

    code: str
    named: bool

    def refusal(self, found: str, remedy: str) -> str:
        """The refusal of a folder whose migrations disagree with this ledger (`found` says how): it may be another
        project's folder checked against this ledger, or this project's folder with an edited or deleted file
        (`remedy` then)."""
        project = f"project {self.code}" if self.code else "the project that migrated without a name"
        if self.named:
            why = ("this folder names that project (Orchestration: Project in its craft-connector.yml, or "
                   "--project-code). If this folder is another project, correct that name to its own code")
        else:
            why = ("this folder names no project (no Orchestration: Project in its craft-connector.yml, no "
                   f"--project-code), so it was checked against the only project ledger the Engine DB holds, "
                   f"{project}'s. If this folder is another project, set Orchestration: Project to its code in "
                   "craft-connector.yml (or give --project-code P)")
        return (f"{found}, in the Engine DB's ledger of {project}: {why} and run etl-craft migrate again; if it is "
                f"{project}, {remedy}; nothing was applied")


def _check_applied(
    ledger: dict[tuple[str, str], str], files: list[Migration], stream: str, *, known: list[Migration],
    owner: _LedgerOwner | None = None,
) -> None:
    """Refuse a ledger entry whose file is gone or changed; for a project folder's migrations `owner` says whose
    ledger they were checked against, which the refusal names."""
    by_version = {m.version: m for m in known}
    for (applied_stream, version), checksum in sorted(ledger.items()):
        if applied_stream != stream or version.startswith("R:"):
            continue
        migration = by_version.get(version)
        if migration is None:
            where = "this etl-craft" if stream == ENGINE else "the project's migrations/ folder"
            found = f"the Engine DB has {stream} migration {version} applied, which {where} does not have"
            remedy = ("upgrade etl-craft to the version that applied it" if stream == ENGINE
                      else "restore the file (migrations are never deleted once applied)")
        elif migration in files and migration.checksum != checksum:
            found = (f"{stream} migration {migration.source} was applied with checksum {checksum}, but the file now "
                     f"has checksum {migration.checksum}")
            remedy = ("applied migrations are immutable: restore the file as it was (for example with git checkout) "
                      "and put the change in a new numbered migration")
        else:
            continue
        raise MigrationError(owner.refusal(found, remedy) if owner is not None else f"{found}; {remedy}")


def _apply_project_migration(db: EngineDB, conn: sa.Connection, migration: Migration) -> dict[tuple[str, str], int]:
    statements = _metadata_statements(db, migration)
    cycles_before = {c.members for c in _cycles(db, conn)}
    db.set_migration(conn, migration.name)
    for statement in statements:
        savepoint = conn.begin_nested()
        try:
            db.execute_script(conn, statement.text)
        except (sa.exc.DBAPIError, sqlite3.Error, *_driver_errors()) as exc:  # type: ignore[misc]
            savepoint.rollback()
            raise refusal(db, conn, migration.source, statement, exc, db._sqlite_state(conn)) from exc
        savepoint.commit()
    db.set_migration(conn, None)
    _check_parameter_values(db, conn, migration)
    _check_cycles(db, conn, migration, cycles_before)
    rows = conn.execute(
        sa.text(
            f"SELECT TABLE_NAME, OPERATION, COUNT(*) FROM {db.qualify('AUD_METADATA_CHANGES')}"
            " WHERE MIGRATION = :name GROUP BY TABLE_NAME, OPERATION ORDER BY TABLE_NAME, OPERATION"
        ),
        {"name": migration.name},
    )
    return {(table, operation): count for table, operation, count in rows}


def _driver_errors() -> tuple[type[BaseException], ...]:
    """psycopg's base error, when a PostgreSQL Engine DB imported it (a SQLite one need not pay for the import)."""
    module = sys.modules.get("psycopg")
    error: type[BaseException] | None = getattr(module, "Error", None)
    return (error,) if error is not None else ()


def _cycles(db: EngineDB, conn: sa.Connection) -> list[Cycle]:
    """The dependency cycles of the active metadata as this transaction sees it (validate finds the same ones)."""
    pipelines = fetch_all(db, conn, "pipelines")
    # Pipeline codes are unique per project: with several projects a pipeline is named project.pipeline here.
    several = len({p["project_code"] for p in pipelines}) > 1
    codes = {p["pipeline_id"]: f"{p['project_code']}.{p['pipeline_code']}" if several else p["pipeline_code"]
             for p in pipelines}
    tasks = [t for t in fetch_all(db, conn, "tasks") if t["pipeline_id"] in codes]
    by_id = {t["task_id"]: t for t in tasks}
    task_edges = [TaskDependency(codes[by_id[e["task_id"]]["pipeline_id"]], by_id[e["task_id"]]["task_code"],
                                 codes[e["upstream_pipeline_id"]], e["upstream_task_code"])
                  for e in fetch_all(db, conn, "task_dependencies")
                  if e["task_id"] in by_id and str(e["upstream_active"]) == "Y" and e["upstream_pipeline_id"] in codes]
    pipeline_edges = [(codes[e["pipeline_id"]], codes[e["depends_on_pipeline_id"]])
                      for e in fetch_all(db, conn, "pipeline_dependencies")
                      if e["pipeline_id"] in codes and str(e["upstream_active"]) == "Y"
                      and e["depends_on_pipeline_id"] in codes]
    return dependency_cycles(list(codes.values()), [(codes[t["pipeline_id"]], t["task_code"]) for t in tasks],
                             task_edges, pipeline_edges)


def _check_cycles(db: EngineDB, conn: sa.Connection, migration: Migration, before: set[frozenset[str]]) -> None:
    """Refuse the migration when its statements close a dependency cycle: the tasks (or pipelines) of a cycle wait
    for each other, so none of them would ever run. A cycle the Engine DB already had is validate's finding."""
    new = [c for c in _cycles(db, conn) if c.members not in before]
    if not new:
        return
    cycle = new[0]
    if cycle.pipeline is not None:
        what = f"the tasks of pipeline {cycle.pipeline} would wait for each other in a cycle: {cycle.text}"
        fix = "leave out (or switch off with ACTIVE_FLAG = 'N') one CFG_TASK_DEPENDENCY row of the cycle"
    else:
        what = f"pipelines would wait for each other in a cycle: {cycle.text}"
        fix = ("leave out (or switch off with ACTIVE_FLAG = 'N') one CFG_PIPELINE_DEPENDENCY or cross-pipeline "
               "CFG_TASK_DEPENDENCY row of the cycle")
    more = f" ({len(new) - 1} more cycle{'s' if len(new) > 2 else ''} too)" if len(new) > 1 else ""
    raise MigrationError(
        f"{migration.source}: after its statements, {what}{more}; none of them could ever run (an arrow reads "
        f"'waits for'); {fix}, then run etl-craft migrate again; nothing of this migration was applied (a "
        "migration is one transaction)")


def _check_parameter_values(db: EngineDB, conn: sa.Connection, migration: Migration) -> None:
    """Refuse the migration (nothing of it is applied) when a task parameter it inserted or updated has a value its
    parameter cannot take (RETRIES = 'two'): found here, the value never reaches a run, whose task would fail on it.
    Unknown parameter names and parameters that do not apply to their task are validate's findings, not refusals."""
    changes, tasks, values = (db.qualify(t) for t in ("AUD_METADATA_CHANGES", "CFG_TASKS", "CFG_TASK_PARAMETERS"))
    rows = conn.execute(sa.text(
        f"SELECT t.TASK_CODE, p.PARAMETER_NAME, p.PARAMETER_VALUE FROM {values} p"
        f" JOIN {tasks} t ON t.TASK_ID = p.TASK_ID"
        f" WHERE p.ACTIVE_FLAG = 'Y' AND EXISTS (SELECT 1 FROM {changes} c"
        "   WHERE c.MIGRATION = :name AND c.TABLE_NAME = 'CFG_TASK_PARAMETERS' AND c.OPERATION IN ('INSERT', 'UPDATE')"
        "     AND c.ROW_KEY = 'PARAMETER_ID=' || CAST(p.PARAMETER_ID AS VARCHAR(20)))"
        " ORDER BY t.TASK_CODE, p.PARAMETER_NAME"), {"name": migration.name})
    for task_code, name, value in rows:
        if value is None or not str(value).strip():
            continue  # no value: the parameter's default applies (validate reports it)
        spec = parameters.parameter(str(name).upper())
        reason = None if spec is None else spec.check(value)
        if spec is not None and reason is not None:
            raise MigrationError(
                f"{migration.source}: task {task_code}, parameter {spec.name} {reason}; expected {spec.expected}; "
                "nothing of this migration was applied: correct the value in the file (it has not been applied) "
                "and run etl-craft migrate again")


def _metadata_statements(db: EngineDB, migration: Migration) -> list[Statement]:
    """The file's statements, each checked to be an INSERT, UPDATE or DELETE of a CFG_ table."""
    try:
        statements = split_statements(migration.sql, db.dialect, source=migration.source)
    except ValueError as exc:
        raise MigrationError(str(exc)) from exc
    if not statements:
        raise MigrationError(f"{migration.source} holds no SQL statement; add the metadata it should change")
    for statement in statements:
        where = f"{migration.source}, statement {statement.number} (line {statement.line})"
        try:
            tree = sqlglot.parse_one(statement.text, read=SQLGLOT_DIALECTS[db.dialect])
        except ParseError as exc:
            raise MigrationError(f"{where} is not valid SQL: {exc.errors[0]['description']}") from exc
        is_dml = isinstance(tree, exp.Insert | exp.Update | exp.Delete)
        target = tree.this if is_dml else tree
        table = target.find(exp.Table) if isinstance(target, exp.Expression) else None
        if not is_dml or table is None or not table.name.upper().startswith("CFG_"):
            verb = tree.key.upper()
            found = f"{'an' if verb[0] in 'AEIOU' else 'a'} {verb}" + (f" of {table.name}" if table is not None else "")
            raise MigrationError(
                f"{where} is {found}; project migrations change metadata only: INSERT, UPDATE or DELETE on "
                "CFG_ tables (etl-craft creates and changes the Engine DB's tables itself)"
            )
    return statements


def _record(db: EngineDB, conn: sa.Connection, ledger: dict[tuple[str, str], str], done: list[Migration],
            scope: str = "") -> None:
    """Write `done` into the ledger: PROJECT rows into project `scope`'s (named after the project the folder
    created when it was not named and the Engine DB now holds exactly one)."""
    if not done:
        return
    table = db.qualify("SCHEMA_MIGRATIONS")
    per_project = _has_project_ledgers(db, conn)
    if per_project and done[0].stream == PROJECT and not scope:
        scope = _only_project(db, conn)
        conn.execute(sa.text(f"UPDATE {table} SET PROJECT_CODE = :p WHERE STREAM = :s AND PROJECT_CODE = ''"),
                     {"p": scope, "s": PROJECT})
    column, value, match = (", PROJECT_CODE", ", :project", " AND PROJECT_CODE = :project") if per_project \
        else ("", "", "")
    for migration in done:
        values = {
            "stream": migration.stream, "version": migration.version, "name": migration.name,
            "kind": migration.kind, "checksum": migration.checksum, "by": current_actor().name,
            "project": scope if migration.stream == PROJECT else "",
        }
        if (migration.stream, migration.version) in ledger:
            conn.execute(
                sa.text(f"UPDATE {table} SET CHECKSUM = :checksum, APPLIED_AT = {db.now_sql}, APPLIED_BY = :by"
                        f" WHERE STREAM = :stream AND VERSION = :version{match}"),
                values,
            )
        else:
            conn.execute(
                sa.text(f"INSERT INTO {table} (STREAM, VERSION, NAME, KIND, CHECKSUM, APPLIED_AT, APPLIED_BY{column})"
                        f" VALUES (:stream, :version, :name, :kind, :checksum, {db.now_sql}, :by{value})"),
                values,
            )


def _only_project(db: EngineDB, conn: sa.Connection) -> str:
    """The code of the Engine DB's only active project; '' when it has none or several."""
    codes = [str(r[0]) for r in conn.execute(sa.text(
        f"SELECT PROJECT_CODE FROM {db.qualify('CFG_PROJECTS')} WHERE ACTIVE_FLAG = 'Y'"))]
    return codes[0] if len(codes) == 1 else ""
