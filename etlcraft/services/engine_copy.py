"""etl-craft engine copy --to URL: move a project's Engine DB to another database (SQLite to PostgreSQL, say) with
what its next runs need, so that the first run there goes on from where the old database stopped.

The target is brought up to date first (the engine migrations and the project's own, as `etl-craft migrate`
does), then in one transaction it is given, through the write API: each ingestion task's last offset
(carry_offset, naming the database and attempt that stored it), each warehouse target's hash version
(record_hash_version: the rows in the warehouse keep theirs, so a merge needs no rehash) and each open pipeline
pause (pause_pipeline: a paused pipeline stays paused). Both databases record the copy in AUD_ACTIONS.

Run history is not copied. A run, task run or attempt enters an Engine DB only through the state machine: a new
row starts QUEUED or IN-PROGRESS and moves on through the allowed transitions, its actor columns are stamped with
the actor of the transaction, its times are the transaction's clock, and ended attempts and audit rows never
change. A copy could only replay a history as new transitions made now by the copier, which is not the history;
so it stays in the source, which `etl-craft --engine-url <source> history|status|logs|explain` keeps reading.

Refused before anything is written: a source whose migrations are not all applied (the target's metadata comes
from the same files), a source with a run that has not ended, a target that is the source, and a target that is
not fresh (it has runs, offsets, hash versions or pauses of its own).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from etlcraft.config.loader import SECRET_QUERY_KEYS
from etlcraft.core.errors import ConfigurationError, MigrationError, RefusedByPolicyError
from etlcraft.engine.actions import record_action
from etlcraft.engine.catalog import table_exists
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in
from etlcraft.engine.migrations import ENGINE, engine_migrations, migrate, project_migrations
from etlcraft.engine.queries import fetch_all
from etlcraft.engine.settings import engine_id
from etlcraft.engine.timeouts import EngineTimeouts

SCHEMA = "etl-craft/engine-copy/1"
#: A progress report every this many rows of one kind (and at the end of each kind).
PROGRESS_EVERY = 100
#: What a fresh target has no row in, with what each holds.
FRESH = (("AUD_PIPELINES_RUN_LOG", "run(s)"), ("AUD_TASK_OFFSETS", "offset(s)"),
         ("AUD_TARGET_HASH_VERSION", "target hash version(s)"), ("AUD_PIPELINE_PAUSES", "pipeline pause(s)"))
NOT_COPIED = ("run history (runs, task runs, attempts, gate decisions, consumption, interventions, actions): a run "
              "enters an Engine DB only through the state machine, with the actor and time of the transaction "
              "that writes it, so it cannot be copied as it happened; it stays in the source")

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class Carried:
    what: str  # "offsets", "target hash versions", "pipeline pauses"
    table: str
    count: int
    skipped: int = 0  # rows of switched-off tasks or pipelines, which no run reads


@dataclass(frozen=True)
class CopyOutcome:
    source: str
    source_engine_id: str
    target: str
    target_engine_id: str
    engine_migrations: tuple[str, ...]  # what the copy applied to the target first: versions ("0014")
    project_migrations: tuple[str, ...]  # and file names ("0001_shop_ingest.sql")
    carried: tuple[Carried, ...]


@dataclass(frozen=True)
class _Source:
    """What the next runs need, read from the source in one read transaction."""

    engine_id: str
    offsets: list[dict[str, Any]]
    hash_versions: list[dict[str, Any]]
    pauses: list[dict[str, Any]]


def target_db(url: str, schema: str | None, password: str | None) -> EngineDB:
    """The target Engine DB of `--to URL`: a URL that carries a credential is refused (name its variable with
    --to-secret instead), as craft-connector.yml refuses one."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError; any failure here is a malformed URL
        raise ConfigurationError(f"--to {url!r} is not a URL; expected postgresql://user@host:5432/db or "
                                 "sqlite:///path") from exc
    if parsed.password is not None:
        raise ConfigurationError("--to holds a password; remove it from the URL and name the variable that holds it "
                                 "with --to-secret (the environment, then the project's .env)")
    for key in parsed.query:
        if key.lower() in SECRET_QUERY_KEYS:
            raise ConfigurationError(f"--to has the query key {key!r}, which carries a credential; put the secret in "
                                     "a variable and name it with --to-secret")
    return EngineDB(url, schema=schema or "etl_craft", password=password, timeouts=EngineTimeouts(option="--to"))


def copy_engine(source: EngineDB, target: EngineDB, project_dir: Path,
                on_progress: Progress = lambda *_: None) -> CopyOutcome:
    """Copy what the next runs need from `source` into `target` (migrated first with the project's migrations);
    every refusal is decided before anything is written."""
    _require_other(source, target)
    state = _read_source(source, project_dir)
    _require_fresh(target)
    report = migrate(target, project_dir=project_dir, command="engine copy")
    with target.write() as conn:
        identity = engine_id(target, conn)
        if identity == state.engine_id:
            raise RefusedByPolicyError(
                f"the target {target.display_url} has the identity of the source ({identity}): it is a copy of the "
                "source's database (its file, or CREATE DATABASE ... TEMPLATE), not a new Engine DB; give "
                "engine copy a new empty database")
        _require_same_metadata(source, target, conn)
        carried = (_carry_offsets(target, conn, state, on_progress), _carry_hash_versions(target, conn, state,
                                                                                          on_progress),
                   _carry_pauses(target, conn, state, on_progress))
        record_action(target, conn, "engine copy", _arguments("from", source.display_url, state.engine_id, carried))
    with source.write() as conn:
        record_action(source, conn, "engine copy", _arguments("to", target.display_url, identity, carried))
    return CopyOutcome(source.display_url, state.engine_id, target.display_url, identity,
                       tuple(m.version for m in report.applied), tuple(p.name for p, _ in report.project), carried)


def _arguments(direction: str, url: str, identity: str, carried: tuple[Carried, ...]) -> dict[str, Any]:
    return {direction: url, f"{direction}_engine_id": identity,
            **{c.what.replace(" ", "_"): c.count for c in carried}}


def _require_other(source: EngineDB, target: EngineDB) -> None:
    if _place(source) == _place(target):
        raise RefusedByPolicyError(f"--to names the source Engine DB itself ({source.display_url}); give engine "
                                   "copy another, new database")


def _place(db: EngineDB) -> tuple[str, ...]:
    url = db.url
    if not db.is_postgres:
        return ("sqlite", str(Path(url.database or "").resolve()))
    return ("postgresql", url.host or "", str(url.port or 5432), url.database or "", db.schema)


def _read_source(source: EngineDB, project_dir: Path) -> _Source:
    with source.read() as conn:
        identity = engine_id(source, conn)
        _require_migrated(source, conn, project_dir)
        unended = fetch_all(source, conn, "copy_unended_runs")
        if unended:
            listed = "; ".join(f"run {r['pipeline_run_id']} of {r['pipeline_code']} ({r['run_key']}) is {r['status']}"
                               for r in unended[:5])
            raise RefusedByPolicyError(
                f"the source Engine DB {source.display_url} has {len(unended)} run(s) that have not ended: {listed}; "
                "a run going on while the Engine DB moves would store its offsets in the old one: let them end (or "
                "etl-craft cancel them) and copy again; nothing was written")
        return _Source(identity, fetch_all(source, conn, "copy_offsets"), fetch_all(source, conn, "copy_hash_versions"),
                       fetch_all(source, conn, "copy_open_pauses"))


def _require_migrated(db: EngineDB, conn: sa.Connection, project_dir: Path) -> None:
    """The source has applied every engine migration and exactly the project's migration files: the target gets its
    metadata from the same files, so the tasks of both are the same."""
    applied = {r["version"]: r["checksum"] for r in fetch_all(db, conn, "copy_project_ledger")}
    engine = conn.execute(sa.text(f"SELECT VERSION FROM {db.qualify('SCHEMA_MIGRATIONS')} WHERE STREAM = :s"),
                          {"s": ENGINE}).scalars().all()
    pending_engine = [m.version for m in engine_migrations(db.dialect, db.schema) if m.version not in engine]
    files = project_migrations(project_dir / "migrations")
    pending = [m.name for m in files if applied.get(m.version) != m.checksum]
    unknown = sorted(set(applied) - {m.version for m in files})
    if pending_engine or pending or unknown:
        folder = project_dir / "migrations"
        found = (f"engine migrations {', '.join(pending_engine)} are not applied" if pending_engine else
                 f"project migrations {', '.join(pending)} are not applied (or changed since)" if pending else
                 f"it applied project migrations {', '.join(unknown)}, which {folder} does not have")
        raise MigrationError(
            f"the source Engine DB {db.display_url} is not up to date with the project: {found}; the target gets its "
            "metadata from the project's migration files, so both must hold the same: run etl-craft migrate (or "
            "restore the missing files) and copy again; nothing was written")


def _require_fresh(target: EngineDB) -> None:
    with target.read() as conn:
        found = [(n, what, table) for table, what in FRESH if table_exists(target, conn, table)
                 and (n := int(conn.execute(sa.text(f"SELECT COUNT(*) FROM {target.qualify(table)}")).scalar() or 0))]
    if found:
        held = ", ".join(f"{n} {what} ({table})" for n, what, table in found)
        raise RefusedByPolicyError(
            f"the target Engine DB {target.display_url} is not fresh: it has {held}; engine copy writes only into a "
            "database where nothing has run yet, whose offsets it would otherwise overwrite: give it a new empty "
            "database (on PostgreSQL another schema, with --to-schema); nothing was written")


def _require_same_metadata(source: EngineDB, target: EngineDB, conn: sa.Connection) -> None:
    with source.read() as source_conn:
        expected = fetch_all(source, source_conn, "copy_project_ledger")
    found = fetch_all(target, conn, "copy_project_ledger")
    if found != expected:
        raise MigrationError(
            f"the project migrations of the target {target.display_url} ({_ledger(found)}) are not the source's "
            f"({_ledger(expected)}), so their tasks may differ; give engine copy a new empty database")


def _ledger(rows: list[dict[str, Any]]) -> str:
    return ", ".join(str(r["version"]) for r in rows) or "none"


def _carry_offsets(target: EngineDB, conn: sa.Connection, state: _Source, on_progress: Progress) -> Carried:
    tasks = {(r["pipeline_code"], r["task_code"]): r["task_id"] for r in fetch_all(target, conn, "copy_active_tasks")}
    rows = [r for r in state.offsets if r["task_active"] == "Y" and r["pipeline_active"] == "Y"]
    for done, row in enumerate(rows, 1):
        key = (row["pipeline_code"], row["task_code"])
        if key not in tasks:
            raise MigrationError(f"task {key[1]} of pipeline {key[0]} has an offset in the source, but the target "
                                 "has no such active task; its metadata differs from the source's: give engine copy "
                                 "a new empty database")
        local = row["source_engine_id"] is None  # stored by an attempt of the source itself
        call_in(target, conn, "carry_offset", task_id=tasks[key], offset_type=row["offset_type"],
                offset_value=row["offset_value"], stored_at=_time(row["stored_at"]),
                source_engine_id=state.engine_id if local else row["source_engine_id"],
                source_attempt_id=row["attempt_id"] if local else row["source_attempt_id"])
        _report(on_progress, "offsets", done, len(rows))
    return Carried("offsets", "AUD_TASK_OFFSETS", len(rows), len(state.offsets) - len(rows))


def _carry_hash_versions(target: EngineDB, conn: sa.Connection, state: _Source, on_progress: Progress) -> Carried:
    for done, row in enumerate(state.hash_versions, 1):
        call_in(target, conn, "record_hash_version", target_object=row["target_object"],
                hash_version=int(row["hash_version"]))
        _report(on_progress, "target hash versions", done, len(state.hash_versions))
    return Carried("target hash versions", "AUD_TARGET_HASH_VERSION", len(state.hash_versions))


def _carry_pauses(target: EngineDB, conn: sa.Connection, state: _Source, on_progress: Progress) -> Carried:
    pipelines = {r["pipeline_code"]: r["pipeline_id"] for r in fetch_all(target, conn, "copy_active_pipelines")}
    carried = [p for p in state.pauses if p["pipeline_code"] in pipelines]
    for done, pause in enumerate(carried, 1):
        reason = (f"carried from Engine DB {state.engine_id}, where {pause['paused_by']} paused it at "
                  f"{_time(pause['paused_at']):%Y-%m-%d %H:%M:%S %Z}" + (f": {pause['pause_reason']}"
                                                                        if pause["pause_reason"] else ""))
        call_in(target, conn, "pause_pipeline", pipeline_id=pipelines[pause["pipeline_code"]], reason=reason)
        _report(on_progress, "pipeline pauses", done, len(carried))
    return Carried("pipeline pauses", "AUD_PIPELINE_PAUSES", len(carried), len(state.pauses) - len(carried))


def _report(on_progress: Progress, what: str, done: int, total: int) -> None:
    if done % PROGRESS_EVERY == 0 or done == total:
        on_progress(what, done, total)


def _time(value: Any) -> datetime:
    """A time read from either dialect: SQLite keeps text, PostgreSQL hands back a datetime."""
    return (datetime.fromisoformat(value) if isinstance(value, str) else value).astimezone(UTC)


def to_json(outcome: CopyOutcome) -> dict[str, Any]:
    """`etl-craft engine copy`: etl-craft/engine-copy/1."""
    return {"schema": SCHEMA, "source": {"url": outcome.source, "engine_id": outcome.source_engine_id},
            "target": {"url": outcome.target, "engine_id": outcome.target_engine_id},
            "migrated": {"engine": list(outcome.engine_migrations), "project": list(outcome.project_migrations)},
            "copied": [{"what": c.what, "table": c.table, "count": c.count, "skipped": c.skipped}
                       for c in outcome.carried],
            "not_copied": NOT_COPIED}


def describe(outcome: CopyOutcome) -> list[str]:
    """The lines `engine copy` prints for people."""
    engine, project = outcome.engine_migrations, outcome.project_migrations
    migrated = [*([f"engine migrations {engine[0]} to {engine[-1]}" if len(engine) > 1 else
                   f"engine migration {engine[0]}"] if engine else []),
                *([f"project migrations {', '.join(project)}"] if project else [])]
    lines = [f"Engine DB {outcome.source} (identity {outcome.source_engine_id})",
             f"  copied to  {outcome.target} (identity {outcome.target_engine_id})",
             "  migrated   the target: " + ("; ".join(migrated) or "nothing to apply, it was up to date")]
    for c in outcome.carried:
        skipped = f" ({c.skipped} of switched-off tasks or pipelines left out)" if c.skipped else ""
        lines.append(f"  copied     {c.count} {c.what} ({c.table}){skipped}")
    lines.append(f"  not copied {NOT_COPIED}")
    return lines
