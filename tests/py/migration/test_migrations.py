"""The migration runner: idempotent, immutable once applied, one transaction, the same catalog by every path."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

import etlcraft.engine.migrations as migrations
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import AppendOnlyError, EngineDbError, MigrationError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call, call_in
from etlcraft.engine.migrations import engine_migrations, migrate, repeatable_objects
from etlcraft.engine.render import MIGRATE_LOCK_KEY
from etlcraft.engine.settings import set_test_mode
from tests.py.support.catalog import snapshot

ACTOR = Actor("tester@pytest", ActorKind.HUMAN)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> EngineDB:
    url = f"sqlite:///{tmp_path / 'fresh.db'}" if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")
    db = EngineDB(url)
    request.addfinalizer(db.dispose)
    return db


@pytest.fixture
def second_empty_db(empty_db: EngineDB, request: pytest.FixtureRequest, tmp_path: Path) -> EngineDB:
    """Another empty database of empty_db's dialect (on PostgreSQL a database of its own: the empty_pg_url fixture
    would hand back empty_db's)."""
    if empty_db.is_postgres:
        server = request.getfixturevalue("pg_server")
        name = server.create()
        request.addfinalizer(lambda: server.drop(name))
        url = server.url_for(name)
    else:
        url = f"sqlite:///{tmp_path / 'other.db'}"
    db = EngineDB(url)
    request.addfinalizer(db.dispose)
    return db


def _ledger(db: EngineDB) -> list[tuple]:
    with db.read() as conn:
        sql = f"SELECT STREAM, VERSION, KIND, CHECKSUM, APPLIED_AT FROM {db.qualify('SCHEMA_MIGRATIONS')} ORDER BY 1, 2"
        return [tuple(r) for r in conn.execute(sa.text(sql))]


def _write_project(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "project"
    (project / "migrations").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (project / "migrations" / name).write_text(text, encoding="utf-8")
    return project


EXAMPLE = """
INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('demo');
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'orders' FROM CFG_PROJECTS;
"""


def test_init_db_twice_changes_nothing_the_second_time(empty_db: EngineDB) -> None:
    with acting_as(ACTOR):
        first = migrate(empty_db)
        ledger = _ledger(empty_db)
        second = migrate(empty_db)
    assert [m.version for m in first.applied] == [m.version for m in engine_migrations(empty_db.dialect, "etl_craft")]
    assert [m.name for m in first.refreshed] == [m.name for m in repeatable_objects(empty_db.dialect, "etl_craft", [])]
    assert not second.changed_anything
    assert _ledger(empty_db) == ledger


def test_b33_stepwise_upgrade_and_fresh_init_give_identical_catalogs(
    empty_db: EngineDB, second_empty_db: EngineDB
) -> None:
    """One database migrated release by release (each version in its own run, as upgrades happen), the other
    created in one init-db: columns, defaults, named constraints, indexes, triggers and functions agree."""
    with acting_as(ACTOR):
        for migration in engine_migrations(empty_db.dialect, empty_db.schema):
            migrate(empty_db, up_to=migration.version)
        migrate(empty_db)
        migrate(second_empty_db)
    assert snapshot(empty_db) == snapshot(second_empty_db)


def test_migrate_with_a_project_builds_the_same_engine_catalog_as_init_db(
    empty_db: EngineDB, second_empty_db: EngineDB, tmp_path: Path
) -> None:
    with acting_as(ACTOR):
        migrate(empty_db, project_dir=_write_project(tmp_path, {"0001_example.sql": EXAMPLE}))
        migrate(second_empty_db)
    assert snapshot(empty_db) == snapshot(second_empty_db)


def test_project_migrations_are_applied_once_and_recorded(empty_db: EngineDB, tmp_path: Path) -> None:
    project = _write_project(tmp_path, {"0001_example.sql": EXAMPLE})
    with acting_as(ACTOR):
        report = migrate(empty_db, project_dir=project)
        again = migrate(empty_db, project_dir=project)
    assert [(m.name, changes) for m, changes in report.project] == [
        ("0001_example.sql", {("CFG_PIPELINES", "INSERT"): 1, ("CFG_PROJECTS", "INSERT"): 1})
    ]
    assert not again.changed_anything
    with empty_db.read() as conn:
        changes = conn.execute(sa.text(
            f"SELECT ACTOR, MIGRATION, TABLE_NAME FROM {empty_db.qualify('AUD_METADATA_CHANGES')} ORDER BY CHANGE_ID"
        )).all()
        actions = conn.execute(sa.text(f"SELECT ACTOR, COMMAND FROM {empty_db.qualify('AUD_ACTIONS')}")).all()
    assert [tuple(c) for c in changes] == [
        ("tester@pytest", "0001_example.sql", "CFG_PROJECTS"), ("tester@pytest", "0001_example.sql", "CFG_PIPELINES")
    ]
    assert [tuple(a) for a in actions] == [("tester@pytest", "migrate")]


def test_an_edited_applied_project_migration_is_refused_naming_both_checksums(
    empty_db: EngineDB, tmp_path: Path
) -> None:
    project = _write_project(tmp_path, {"0001_example.sql": EXAMPLE})
    with acting_as(ACTOR):
        report = migrate(empty_db, project_dir=project)
    old = report.project[0][0].checksum
    path = project / "migrations" / "0001_example.sql"
    path.write_text(EXAMPLE.replace("orders", "invoices"), encoding="utf-8")
    new = migrations.project_migrations(project / "migrations")[0].checksum
    with pytest.raises(MigrationError) as raised, acting_as(ACTOR):
        migrate(empty_db, project_dir=project)
    assert str(raised.value) == (
        f"PROJECT migration {path} was applied with checksum {old}, but the file now has checksum {new}, in the "
        "Engine DB's ledger of project demo: this folder names no project (no Orchestration: Project in its "
        "craft-connector.yml, no --project-code), so it was checked against the only project ledger the Engine DB "
        "holds, project demo's. If this folder is another project, set Orchestration: Project to its code in "
        "craft-connector.yml (or give --project-code P) and run etl-craft migrate again; if it is project demo, "
        "applied migrations are immutable: restore the file as it was (for example with git checkout) and put the "
        "change in a new numbered migration; nothing was applied"
    )


def test_an_edited_applied_engine_migration_is_refused(empty_db: EngineDB, monkeypatch: pytest.MonkeyPatch) -> None:
    with acting_as(ACTOR):
        migrate(empty_db)
    real_render = migrations.render

    def edited(template: str, *args: object, **kwargs: object) -> str:
        text = real_render(template, *args, **kwargs)  # type: ignore[arg-type]
        return text + "-- edited\n" if template.startswith("migrations/0001") else text

    monkeypatch.setattr(migrations, "render", edited)
    with pytest.raises(MigrationError, match=r"ENGINE migration sql/migrations/0001_engine_schema.sql.j2 was applied"
                                             r" with checksum [0-9a-f]{64}, but the file now has checksum"):
        with acting_as(ACTOR):
            migrate(empty_db)


def test_a_changed_function_template_is_reapplied(empty_db: EngineDB, monkeypatch: pytest.MonkeyPatch) -> None:
    with acting_as(ACTOR):
        migrate(empty_db)
    real_render = migrations.render

    def changed(template: str, *args: object, **kwargs: object) -> str:
        text = real_render(template, *args, **kwargs)  # type: ignore[arg-type]
        return text + "-- changed\n" if template == "functions/005_reference.sql.j2" else text

    monkeypatch.setattr(migrations, "render", changed)
    with acting_as(ACTOR):
        report = migrate(empty_db, up_to="0014")
        again = migrate(empty_db, up_to="0014")
    assert [m.name for m in report.refreshed] == ["005_reference"]
    assert not again.changed_anything


def test_an_unknown_applied_project_migration_is_refused(empty_db: EngineDB, tmp_path: Path) -> None:
    project = _write_project(tmp_path, {"0001_example.sql": EXAMPLE})
    with acting_as(ACTOR):
        migrate(empty_db, project_dir=project)
    (project / "migrations" / "0001_example.sql").unlink()
    with pytest.raises(MigrationError, match="PROJECT migration 0001 applied, which the project's migrations/ folder"
                                             " does not have, in the Engine DB's ledger of project demo: .* if it is "
                                             "project demo, restore the file"), acting_as(ACTOR):
        migrate(empty_db, project_dir=project)


@pytest.mark.parametrize(("text", "message"), [
    ("CREATE TABLE CFG_EXTRA (ID INT);",
     "statement 1 (line 1) is a CREATE of CFG_EXTRA; project migrations change metadata only"),
    ("INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('a');\nDELETE FROM AUD_ACTIONS;",
     "statement 2 (line 2) is a DELETE of AUD_ACTIONS; project migrations change metadata only"),
    ("UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = 'x';",
     "statement 1 (line 1) is an UPDATE of SCHEMA_MIGRATIONS; project migrations change metadata only"),
    ("INSERT INTO CFG_PROJECTS (PROJECT_CODE VALUES ('a');", "statement 1 (line 1) is not valid SQL"),
    ("-- nothing here\n", "holds no SQL statement"),
])
def test_project_migrations_change_metadata_only_and_a_refusal_writes_nothing(
    empty_db: EngineDB, tmp_path: Path, text: str, message: str
) -> None:
    project = _write_project(tmp_path, {"0001_ok.sql": EXAMPLE, "0002_bad.sql": text})
    with pytest.raises(MigrationError, match=message.replace("(", r"\(").replace(")", r"\)")), acting_as(ACTOR):
        migrate(empty_db, project_dir=project)
    with empty_db.read() as conn:
        assert not conn.execute(sa.text(
            "SELECT to_regclass('etl_craft.schema_migrations')" if empty_db.is_postgres
            else "SELECT name FROM sqlite_master WHERE name = 'SCHEMA_MIGRATIONS'")).scalar()


def test_a_failing_statement_rolls_back_the_whole_migration_run(empty_db: EngineDB, tmp_path: Path) -> None:
    with acting_as(ACTOR):
        migrate(empty_db)
    project = _write_project(tmp_path, {
        "0001_ok.sql": EXAMPLE,
        "0002_breaks.sql": "INSERT INTO CFG_POOLS (POOL_NAME) VALUES ('fine');\n"
                           "INSERT INTO CFG_POOLS (POOL_NAME) VALUES ('not an identifier');",
    })
    with pytest.raises(Exception, match="pool_name_is_identifier"), acting_as(ACTOR):
        migrate(empty_db, project_dir=project)
    with empty_db.read() as conn:
        for table in ("CFG_PROJECTS", "CFG_POOLS", "AUD_METADATA_CHANGES"):
            assert conn.execute(sa.text(f"SELECT COUNT(*) FROM {empty_db.qualify(table)}")).scalar() == 0, table
        assert conn.execute(sa.text(
            f"SELECT COUNT(*) FROM {empty_db.qualify('SCHEMA_MIGRATIONS')} WHERE STREAM = 'PROJECT'")).scalar() == 0


@pytest.mark.parametrize("name", ["1_short.sql", "0001-dash.sql", "0001_x.SQL", "notes.txt"])
def test_badly_named_project_files_are_refused(tmp_path: Path, name: str) -> None:
    project = _write_project(tmp_path, {name: EXAMPLE})
    with pytest.raises(MigrationError, match="is not a migration file name; expected NNNN_name.sql"):
        migrations.project_migrations(project / "migrations")


def test_two_files_with_one_number_are_refused(tmp_path: Path) -> None:
    project = _write_project(tmp_path, {"0001_a.sql": EXAMPLE, "0001_b.sql": EXAMPLE})
    with pytest.raises(MigrationError, match="0001_b.sql and 0001_a.sql share the number 0001"):
        migrations.project_migrations(project / "migrations")


@pytest.mark.postgres
def test_concurrent_init_db_on_postgres_applies_once(empty_pg_url: str) -> None:
    """Two init-db at once: the migration lock serializes them; one applies, the other finds nothing to do."""
    reports: list[object] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        db = EngineDB(empty_pg_url)
        try:
            barrier.wait()
            with acting_as(ACTOR):
                reports.append(migrate(db))
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.dispose()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(len(r.applied) for r in reports) == [0, len(engine_migrations("postgresql", "etl_craft"))]  # type: ignore[attr-defined]


def test_0009_upgrade__live_attempts_get_their_run__ended_attempts_stay_as_they_were(empty_db: EngineDB) -> None:
    """A database of the release before 0009, with one QUEUED and one ended attempt: the upgrade gives the live one
    its run (the claim for one run reads it) and leaves the ended one's final row alone; new attempts get theirs
    from the trigger the upgrade's refreshed guards create."""
    q = empty_db.qualify
    with acting_as(ACTOR):
        migrate(empty_db, up_to="0008")
        with empty_db.write() as conn:
            # The guards of that release had no _050 trigger; the upgrade's guards differ, so they are refreshed.
            trigger = ("_050_run_of_task_run ON " + q("AUD_TASK_ATTEMPTS") if empty_db.is_postgres
                       else "_050_aud_task_attempts__run_of_task_run")
            conn.execute(sa.text(f"DROP TRIGGER {trigger}"))
            if empty_db.is_postgres:  # only a transaction holding migrate's lock writes the ledger
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
            conn.execute(sa.text(f"DELETE FROM {q('SCHEMA_MIGRATIONS')} WHERE VERSION = 'R:090_guards'"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES ('p')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PIPELINES')} (PROJECT_ID, PIPELINE_CODE) VALUES (1, 'pl')"))
            for code in ("a", "b", "c"):
                conn.execute(sa.text(f"INSERT INTO {q('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE)"
                                     " VALUES (1, :code, 'SQL', 'APPEND_TABLE', 't.sql')"), {"code": code})
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_PIPELINES_RUN_LOG')} (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS,"
                " QUEUED_AT, START_DATE, STARTED_BY, STARTED_BY_KIND) VALUES (1, 'manual:1', 'MANUAL', '2026-01-01',"
                " 'IN-PROGRESS', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
            for task in (1, 2, 3):
                conn.execute(sa.text(f"INSERT INTO {q('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS)"
                                     " VALUES (1, :task, 'IN-PROGRESS')"), {"task": task})
            for task_run in (1, 2):
                conn.execute(sa.text(
                    f"INSERT INTO {q('AUD_TASK_ATTEMPTS')} (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT,"
                    " REQUESTED_BY, REQUESTED_BY_KIND) VALUES (:tr, 1, 'QUEUED', '2026-01-01 00:00:00+00', 't',"
                    " 'HUMAN')"), {"tr": task_run})
            conn.execute(sa.text(f"UPDATE {q('AUD_TASK_ATTEMPTS')} SET STATUS = 'CLAIMED', OWNER_ID = 'w',"
                                 " CLAIMED_AT = '2026-01-01 00:00:00+00' WHERE TASK_RUN_ID = 2"))
            conn.execute(sa.text(f"UPDATE {q('AUD_TASK_ATTEMPTS')} SET STATUS = 'SUCCESS',"
                                 " ENDED_AT = '2026-01-01 00:00:00+00' WHERE TASK_RUN_ID = 2"))
        report = migrate(empty_db, up_to="0009")
        with empty_db.write() as conn:
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_TASK_ATTEMPTS')} (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, REQUESTED_BY,"
                " REQUESTED_BY_KIND) VALUES (3, 1, 'QUEUED', '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
    assert [m.version for m in report.applied] == ["0009"]
    assert "090_guards" in [m.name for m in report.refreshed]
    with empty_db.read() as conn:
        rows = conn.execute(sa.text(
            f"SELECT TASK_RUN_ID, STATUS, PIPELINE_RUN_ID FROM {q('AUD_TASK_ATTEMPTS')} ORDER BY TASK_RUN_ID")).all()
    assert [tuple(r) for r in rows] == [(1, "QUEUED", 1), (2, "SUCCESS", None), (3, "QUEUED", 1)]


@pytest.mark.postgres
def test_0010_upgrade__value_checks_compare_with_one_constant_array_and_still_refuse_other_values(
        empty_pg_url: str) -> None:
    """The value-set checks of runs, task runs and attempts keep their names and values, stored without a cast per
    value (which PostgreSQL folded again in every write), and a value outside the set is still refused."""
    db = EngineDB(empty_pg_url)
    try:
        with acting_as(ACTOR):
            migrate(db, up_to="0009")
            report = migrate(db, up_to="0010")
        assert [m.version for m in report.applied] == ["0010"]
        with db.read() as conn:
            checks = dict(conn.execute(sa.text(
                "SELECT c.relname || '.' || k.conname, pg_get_constraintdef(k.oid) FROM pg_constraint k"
                " JOIN pg_class c ON c.oid = k.conrelid"
                " WHERE k.contype = 'c' AND k.conrelid IN ('etl_craft.aud_pipelines_run_log'::regclass,"
                " 'etl_craft.aud_task_run_log'::regclass, 'etl_craft.aud_task_attempts'::regclass)")).all())
        assert checks["aud_task_attempts.status_is_valid"] == (
            "CHECK (((status)::text = ANY ('{QUEUED,CLAIMED,RUNNING,SUCCESS,FAILED,TIMED_OUT,CANCELLED,LOST}'"
            "::text[])))")
        assert checks["aud_pipelines_run_log.status_is_valid"] == (
            "CHECK (((status)::text = ANY ('{QUEUED,IN-PROGRESS,SUCCESS,FAILED,SKIPPED,CANCELLED}'::text[])))")
        assert [name for name, definition in checks.items() if "ARRAY[" in definition] == []
        with acting_as(ACTOR), pytest.raises(EngineDbError, match="trigger_kind_is_valid"), \
                db.write() as conn:
            conn.execute(sa.text("INSERT INTO etl_craft.CFG_PROJECTS (PROJECT_CODE) VALUES ('p')"))
            conn.execute(sa.text("INSERT INTO etl_craft.CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) VALUES (1, 'pl')"))
            conn.execute(sa.text(
                "INSERT INTO etl_craft.AUD_PIPELINES_RUN_LOG (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS,"
                " QUEUED_AT, STARTED_BY, STARTED_BY_KIND) VALUES (1, 'manual:1', 'HOURLY', '2026-01-01', 'QUEUED',"
                " now(), 't', 'HUMAN')"))
    finally:
        db.dispose()


def test_0011_upgrade__the_attempt_lease_index_is_gone__a_heartbeat_writes_no_index_entry(empty_db: EngineDB) -> None:
    """After 0011 no index holds an attempt's LEASE_EXPIRES_AT, so on PostgreSQL a heartbeat (renew_lease) keeps each
    new row version on its page (a HOT update) instead of writing an entry in each index that holds a live
    attempt."""
    q = empty_db.qualify
    with acting_as(ACTOR):
        migrate(empty_db, up_to="0010")
        report = migrate(empty_db, up_to="0011")
        # The write API is always this release's: it is called on the Engine DB brought up to date (no later
        # migration indexes LEASE_EXPIRES_AT again; the claim reads the limits of migration 0019).
        migrate(empty_db)
        with empty_db.write() as conn:
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES ('p')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PIPELINES')} (PROJECT_ID, PIPELINE_CODE) VALUES (1, 'pl')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE)"
                                 " VALUES (1, 'a', 'SQL', 'APPEND_TABLE', 'a.sql')"))
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_PIPELINES_RUN_LOG')} (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS,"
                " QUEUED_AT, START_DATE, STARTED_BY, STARTED_BY_KIND) VALUES (1, 'manual:1', 'MANUAL', '2026-01-01',"
                " 'IN-PROGRESS', '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
            conn.execute(sa.text(f"INSERT INTO {q('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS)"
                                 " VALUES (1, 1, 'IN-PROGRESS')"))
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_TASK_ATTEMPTS')} (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, REQUESTED_BY,"
                " REQUESTED_BY_KIND) VALUES (1, 1, 'QUEUED', '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
        claimed = call(empty_db, "claim_attempt", pool="default", slot_kinds="warehouse", owner_id="w")
        assert [row.attempt_id for row in claimed] == [1]
        with empty_db.write() as conn:
            renewed = call_in(empty_db, conn, "renew_lease", owner_id="w", lease_seconds=600)
            hot = (conn.execute(sa.text(
                "SELECT pg_stat_get_xact_tuples_hot_updated('etl_craft.aud_task_attempts'::regclass)")).scalar()
                   if empty_db.is_postgres else None)
    assert [m.version for m in report.applied] == ["0011"]
    assert "ix_attempts_lease" not in {i["name"] for i in sa.inspect(empty_db.engine).get_indexes(
        "aud_task_attempts" if empty_db.is_postgres else "AUD_TASK_ATTEMPTS",
        schema=empty_db.schema if empty_db.is_postgres else None)}
    assert [(row.kind, row.id) for row in renewed] == [("attempt", 1)]
    if empty_db.is_postgres:
        assert hot == 1


def _identity(db: EngineDB) -> str | None:
    with db.read() as conn:
        return conn.execute(sa.text(
            f"SELECT VALUE FROM {db.qualify('ENG_SETTINGS')} WHERE SETTING = 'ENGINE_ID'")).scalar()


def test_0014_upgrade__identity_created_once__offsets_and_settings_kept(
        empty_db: EngineDB, second_empty_db: EngineDB) -> None:
    """A database of the release before 0014, with an offset (and on PostgreSQL a setting): the upgrade keeps them
    (SQLite makes both tables again), gives the database an identity of 32 hex digits, and a later migrate keeps it;
    another Engine DB gets another identity. The offset still names its task run and attempt."""
    q = empty_db.qualify
    with acting_as(ACTOR):
        migrate(empty_db, up_to="0013")
        with empty_db.write() as conn:
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES ('p')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PIPELINES')} (PROJECT_ID, PIPELINE_CODE) VALUES (1, 'pl')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_TASKS')} (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE)"
                                 " VALUES (1, 'ingest', 'PYTHON', 'ingest.py')"))
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_PIPELINES_RUN_LOG')} (PIPELINE_ID, RUN_KEY, TRIGGER_KIND, RUN_DATE, STATUS,"
                " QUEUED_AT, STARTED_BY, STARTED_BY_KIND) VALUES (1, 'manual:1', 'MANUAL', '2026-01-01', 'QUEUED',"
                " '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
            conn.execute(sa.text(f"INSERT INTO {q('AUD_TASK_RUN_LOG')} (PIPELINE_RUN_ID, TASK_ID, STATUS)"
                                 " VALUES (1, 1, 'IN-PROGRESS')"))
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_TASK_ATTEMPTS')} (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, REQUESTED_BY,"
                " REQUESTED_BY_KIND) VALUES (1, 1, 'QUEUED', '2026-01-01 00:00:00+00', 't', 'HUMAN')"))
            conn.execute(sa.text(
                f"INSERT INTO {q('AUD_TASK_OFFSETS')} (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID,"
                " STORED_AT) VALUES (1, 'INTEGER', '80', 1, 1, '2026-01-01 00:00:00+00')"))
        if empty_db.is_postgres:
            set_test_mode(empty_db)
        assert _identity(empty_db) is None
        report = migrate(empty_db, up_to="0014")
        first = _identity(empty_db)
        again = migrate(empty_db, up_to="0014")
        migrate(second_empty_db)
    assert [m.version for m in report.applied] == ["0014"] and not again.changed_anything
    assert first is not None and re.fullmatch(r"[0-9a-f]{32}", first)
    assert _identity(empty_db) == first
    assert _identity(second_empty_db) not in (None, first)
    with empty_db.read() as conn:
        offset = conn.execute(sa.text(
            f"SELECT TASK_ID, OFFSET_VALUE, TASK_RUN_ID, ATTEMPT_ID, SOURCE_ENGINE_ID FROM {q('AUD_TASK_OFFSETS')}"))
        settings = conn.execute(sa.text(f"SELECT SETTING FROM {q('ENG_SETTINGS')} ORDER BY SETTING")).scalars()
        assert [tuple(r) for r in offset] == [(1, "80", 1, 1, None)]
        assert list(settings) == (["ENGINE_ID", "TEST_MODE"] if empty_db.is_postgres else ["ENGINE_ID"])


def test_0014_engine_id__never_changes__refused_with_ec002(engine_db: EngineDB) -> None:
    """The identity is final: an UPDATE, a DELETE or (SQLite) an INSERT OR REPLACE of its row is refused, even from
    etl-craft, naming the row and why."""
    q = engine_db.qualify
    statements = [f"UPDATE {q('ENG_SETTINGS')} SET VALUE = '{'0' * 32}' WHERE SETTING = 'ENGINE_ID'",
                  f"DELETE FROM {q('ENG_SETTINGS')} WHERE SETTING = 'ENGINE_ID'"]
    if not engine_db.is_postgres:
        statements.append(f"INSERT OR REPLACE INTO ENG_SETTINGS (SETTING, VALUE, SET_AT, SET_BY, SET_BY_KIND) "
                          f"VALUES ('ENGINE_ID', '{'0' * 32}', 'now', 't', 'HUMAN')")
    before = _identity(engine_db)
    for statement in statements:
        with pytest.raises(AppendOnlyError, match=r"SETTING=ENGINE_ID (exists, and an insert never "
                                                  r"replaces a row; the|refused: the) Engine DB's identity is "
                                                  r"created once \(migration 0014\) and never changes"):
            with engine_db.write() as conn:
                conn.execute(sa.text(statement))
    assert _identity(engine_db) == before


def test_0016_upgrade__project_timezone_may_be_null__utc_rows_defer_to_the_configuration__others_kept(
        empty_db: EngineDB) -> None:
    """CFG_PROJECTS.TIMEZONE loses NOT NULL and its default 'UTC' (the project row, then Orchestration: Timezone,
    then UTC: etlcraft.core.zones). Rows holding 'UTC', which nothing read before, become NULL, so a project keeps
    the zone its runs had; other values stay. A row written afterwards without TIMEZONE has none, also through a
    connection opened before the upgrade (SQLite edits the definition in place and must make others reload it)."""
    q = empty_db.qualify
    with acting_as(ACTOR):
        migrate(empty_db, up_to="0015")
        with empty_db.write() as conn:
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES ('defaulted')"))
            conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE, TIMEZONE) VALUES ('paris', "
                                 "'Europe/Paris')"))
        other = EngineDB(empty_db.url.render_as_string(hide_password=False))
        try:
            with other.read() as conn:  # a connection of another process, open across the upgrade
                conn.execute(sa.text(f"SELECT COUNT(*) FROM {q('CFG_PROJECTS')}")).scalar()
            report = migrate(empty_db, up_to="0016")
            with other.write() as conn:
                conn.execute(sa.text(f"INSERT INTO {q('CFG_PROJECTS')} (PROJECT_CODE) VALUES ('later')"))
        finally:
            other.dispose()
    assert [m.version for m in report.applied] == ["0016"]
    with empty_db.read() as conn:
        rows = conn.execute(sa.text(f"SELECT PROJECT_CODE, TIMEZONE FROM {q('CFG_PROJECTS')} ORDER BY PROJECT_ID"))
        assert [tuple(r) for r in rows] == [("defaulted", None), ("paris", "Europe/Paris"), ("later", None)]
        changes = conn.execute(sa.text(f"SELECT ROW_KEY FROM {q('AUD_METADATA_CHANGES')} WHERE OPERATION = 'UPDATE'"))
        assert [r[0] for r in changes] == ["PROJECT_ID=1"], "the change is recorded like any metadata change"
        if not empty_db.is_postgres:
            assert conn.execute(sa.text("PRAGMA integrity_check")).scalar() == "ok"
