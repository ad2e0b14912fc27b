"""init, init-db, migrate and doctor through the real command line."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.core.errors import error_specs
from etlcraft.engine.db import EngineDB
from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process
MIGRATIONS = sorted(p.name.removesuffix(".sql.j2") for p in (Path(__file__).parents[3] / "sql" / "migrations")
                    .glob("[0-9]*.sql.j2"))
LATEST = MIGRATIONS[-1][:4]
FUNCTION_OBJECTS = sorted(p.name.removesuffix(".sql.j2") for p in (Path(__file__).parents[3] / "sql" / "functions")
                          .glob("[0-9]*.sql.j2"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    done = etl_craft("init", "demo", cwd=tmp_path)
    assert done.code == 0, done.err
    return tmp_path / "demo"


def test_init_then_migrate_creates_the_example_metadata(project: Path) -> None:
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    assert done.out.splitlines()[1:] == [
        *(f"  applied    ENGINE {m[:4]} {m[5:]}" for m in MIGRATIONS),
        f"  refreshed  functions and triggers: {', '.join(FUNCTION_OBJECTS)}",
        "  applied    PROJECT 0001_shop_ingest.sql: CFG_PIPELINES +1, CFG_PROJECTS +1, CFG_TASKS +2, "
        "CFG_TASK_DEPENDENCY +1, CFG_TASK_PARAMETERS +2",
        "  applied    PROJECT 0002_customer_orders.sql: CFG_PIPELINES +1, CFG_PIPELINE_DEPENDENCY +1, CFG_TASKS +3, "
        "CFG_TASK_DEPENDENCY +2, CFG_TASK_PARAMETERS +5",
        f"schema version {LATEST}",
    ]
    db = EngineDB(f"sqlite:///{project / '.etl-craft' / 'engine.db'}")
    with db.read() as conn:
        actions = conn.execute(sa.text("SELECT ACTOR, ACTOR_KIND, COMMAND FROM AUD_ACTIONS")).all()
        actors = conn.execute(sa.text("SELECT DISTINCT ACTOR, MIGRATION FROM AUD_METADATA_CHANGES ORDER BY 2")).all()
    db.dispose()
    assert [tuple(a) for a in actions] == [("tester@cli", "HUMAN", "migrate")]
    assert [tuple(a) for a in actors] == [("tester@cli", "0001_shop_ingest.sql"),
                                          ("tester@cli", "0002_customer_orders.sql")]


def test_a_blank_project_is_accepted_by_init_db_migrate_validate_and_list(tmp_path: Path) -> None:
    done = etl_craft("init", "empty", "--blank", cwd=tmp_path)
    assert (done.code, done.err) == (0, ""), done.out
    assert done.out.splitlines()[-1] == ("next: write migrations/0001_<name>.sql (the CFG_PROJECTS row of empty, "
                                         "then your pipelines), then cd empty && etl-craft migrate")
    project = tmp_path / "empty"
    assert not list((project / "migrations").glob("*.sql"))
    for args, shown in ((("init-db",), f"schema version {LATEST}"),
                        (("migrate",), "nothing to apply"),
                        (("validate",), "valid: 0 pipelines, 0 tasks, 0 files read"),
                        (("list",), "no active pipelines")):
        done = etl_craft(*args, cwd=project)
        assert (done.code, done.err) == (0, ""), (args, done.out)
        assert shown in done.out, (args, done.out)


@pytest.mark.parametrize("blank", [(), ("--blank",)], ids=["example", "blank"])
def test_init_in_an_existing_project_is_refused_and_writes_nothing(project: Path, blank: tuple[str, ...]) -> None:
    assert etl_craft("migrate", cwd=project).code == 0
    (project / "sql_files" / "load_orders.sql").unlink()  # a file init would write, missing: still refused
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    done = etl_craft("init", ".", *blank, cwd=project)
    assert done.code == 24  # REFUSED_BY_POLICY
    assert (done.out, done.err) == ("", (
        f"error: {project} is already an etl-craft project: it has craft-connector.yml; etl-craft init creates new "
        "projects and overwrites nothing: change this project with a new numbered file in migrations/ and "
        "etl-craft migrate, or give init a new or empty directory (nothing was written)\n"))
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


def test_init_db_twice_is_a_no_op_the_second_time(project: Path) -> None:
    first = etl_craft("init-db", "--format", "json", cwd=project)
    second = etl_craft("init-db", "--format", "json", cwd=project)
    assert first.code == second.code == 0, first.err + second.err
    assert [m["version"] for m in json.loads(first.out)["applied"]] == [m[:4] for m in MIGRATIONS]
    doc = json.loads(second.out)
    assert (doc["schema"], doc["applied"], doc["refreshed"], doc["project"]) == (
        "etl-craft/migration-report/1", [], [], [])
    assert f"is up to date (schema version {LATEST}); nothing to apply" in etl_craft("init-db", cwd=project).out


def test_editing_an_applied_migration_makes_migrate_refuse(project: Path) -> None:
    assert etl_craft("migrate", cwd=project).code == 0
    migration = project / "migrations" / "0001_shop_ingest.sql"
    migration.write_text(migration.read_text() + "\n-- an afterthought\n")
    done = etl_craft("migrate", cwd=project)
    assert done.code == 5
    assert done.err.startswith(f"error: PROJECT migration {migration} was applied with checksum ")
    assert "restore the file as it was" in done.err and "new numbered migration" in done.err


def test_doctor_on_a_fresh_project(project: Path) -> None:
    not_ready = etl_craft("doctor", cwd=project)
    assert not_ready.code == 6
    path = project / ".etl-craft" / "engine.db"
    assert f"fail  connection: the Engine DB file {path} does not exist yet" in not_ready.out
    assert "remedy: run etl-craft init-db" in not_ready.out
    assert not path.exists(), "doctor creates nothing"
    etl_craft("migrate", cwd=project)
    done = etl_craft("doctor", "--format", "json", cwd=project)
    assert done.code == 0, done.out
    doc = json.loads(done.out)
    assert doc["schema"] == "etl-craft/doctor/1" and doc["healthy"] is True
    assert [c["name"] for c in doc["checks"]] == ["connection", "schema", "file"]


def test_doctor_warns_about_a_group_writable_sqlite_file(project: Path) -> None:
    etl_craft("init-db", cwd=project)
    path = project / ".etl-craft" / "engine.db"
    os.chmod(path, 0o664)
    done = etl_craft("doctor", cwd=project)
    assert done.code == 0
    assert f"warn  file: writable by group or others: {path} (mode -rw-rw-r--)" in done.out
    assert f"remedy: chmod go-w {path}" in done.out


@pytest.mark.parametrize(("value", "message"), [
    ("", "the variable ETL_CRAFT_ACTOR is empty"),
    ("a" * 129, "the variable ETL_CRAFT_ACTOR is 129 characters long; at most 128 are allowed"),
    ("bob\nmallory", "the variable ETL_CRAFT_ACTOR holds the control character '\\n'"),
])
def test_an_invalid_actor_is_refused_naming_the_variable(project: Path, value: str, message: str) -> None:
    done = etl_craft("init-db", cwd=project, env={"ETL_CRAFT_ACTOR": value})
    assert done.code == 3
    assert message in done.err
    assert not (project / ".etl-craft" / "engine.db").exists(), "nothing is written for a refused actor"


@pytest.mark.parametrize("command", [("init-db",), ("migrate",), ("list",), ("doctor",),
                                     ("run", "--pipeline-code", "shop_ingest")])
def test_an_engine_db_folder_under_a_file__one_line_naming_the_path_why_and_the_remedy__exit_4(
        project: Path, command: tuple[str, ...]) -> None:
    """Engine: path names a file whose folder cannot be created: a regular file stands where a folder of its path
    should be (as root, a read-only folder would not stop the tests)."""
    blocker = project / "not-a-folder"
    blocker.write_text("a file where the Engine DB's folder should be\n")
    config = project / "craft-connector.yml"
    config.write_text(config.read_text().replace("path: .etl-craft/engine.db", "path: not-a-folder/db/engine.db"))
    done = etl_craft(*command, cwd=project)
    assert done.code == error_specs()["ENGINE_DB"].exit, done.out + done.err
    verb = "create" if command[0] in ("init-db", "migrate", "doctor", "run") else "open"
    assert done.err == (f"error: cannot {verb} the SQLite Engine DB {blocker / 'db' / 'engine.db'}: {blocker} is a "
                        f"file, not a folder, so the folder {blocker / 'db'} cannot be created under it; set Engine: "
                        "path in craft-connector.yml (or the --engine-url option) to a file in a folder, or move "
                        f"{blocker} out of the way\n")
    assert blocker.read_text() == "a file where the Engine DB's folder should be\n"


@pytest.mark.parametrize(("where", "why"), [
    ("not-a-folder/engine.db", "{blocker} is a file, not a folder; "),
    ("no-such-folder/engine.db", "its folder {folder} does not exist; create it, or "),
])
def test_an_engine_url_whose_sqlite_folder_cannot_hold_it__one_line_naming_it__exit_4(
        tmp_path: Path, where: str, why: str) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x\n")
    path = tmp_path / where
    for command in ("init-db", "migrate"):
        done = etl_craft("--engine-url", f"sqlite:///{path}", command, cwd=tmp_path)
        assert done.code == error_specs()["ENGINE_DB"].exit, done.err
        assert done.err.startswith(f"error: cannot open the SQLite Engine DB {path}: "
                                   + why.format(blocker=blocker, folder=path.parent)), done.err
        assert done.err.count("\n") == 1 and "server" not in done.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"], "nothing was created"


def test_without_a_project_or_url_the_error_says_what_to_do(tmp_path: Path) -> None:
    done = etl_craft("init-db", cwd=tmp_path)
    assert done.code == 3
    assert done.err == (f"error: {tmp_path / 'craft-connector.yml'} does not exist; create a project with "
                        "etl-craft init DIR, or pass --project DIR\n")


@pytest.mark.postgres
def test_engine_url_on_postgres_and_doctor_reports_an_extra_grant(empty_pg_url: str, tmp_path: Path) -> None:
    url = empty_pg_url
    done = etl_craft("--engine-url", url, "init-db", cwd=tmp_path)
    assert done.code == 0, done.err
    assert etl_craft("--engine-url", url, "doctor", cwd=tmp_path).code == 0
    role = f"etlcraft_reader_{uuid.uuid4().hex[:8]}"
    plain = url.replace("postgresql+psycopg", "postgresql")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA etl_craft TO {role}")
        conn.execute(f"GRANT INSERT, UPDATE ON etl_craft.cfg_tasks TO {role}")
    try:
        done = etl_craft("--engine-url", url, "doctor", cwd=tmp_path)
        assert done.code == 6
        assert f"fail  grants: {role} can INSERT, UPDATE etl_craft.CFG_TASKS" in done.out
        assert f"remedy: REVOKE INSERT, UPDATE ON etl_craft.cfg_tasks FROM {role};" in done.out
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
