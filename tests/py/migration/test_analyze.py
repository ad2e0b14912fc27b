"""etl-craft migrate and init-db analyze the tables they changed that hold rows, and the hot tables carry their own
autovacuum settings (migration 0023; issue 27): good plans do not wait for the server's autovacuum."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import migrate
from tests.py.conftest import TEST_ACTOR, PgServer


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EngineDB]:
    """A new, empty Engine DB (never migrated)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'engine.db'}"
    else:
        server: PgServer = request.getfixturevalue("pg_server")
        url = server.url_for(server.create())
    db = EngineDB(url)
    with acting_as(TEST_ACTOR):
        yield db
    db.dispose()


def _analyzed(db: EngineDB) -> set[str]:
    """The etl-craft tables that have planner statistics, upper case."""
    with db.read() as conn:
        if db.is_postgres:
            found = list(conn.execute(sa.text("SELECT relname FROM pg_stat_user_tables WHERE schemaname = :s"
                                              " AND analyze_count > 0"), {"s": db.schema}).scalars())
        elif conn.execute(sa.text("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")).first() is None:
            found = []
        else:
            found = list(conn.execute(sa.text("SELECT DISTINCT tbl FROM sqlite_stat1")).scalars())
        return {str(name).upper() for name in found}


def test_migrate__a_project_migration__analyzes_the_cfg_tables_it_wrote_and_no_empty_table(
        fresh: EngineDB, tmp_path: Path) -> None:
    migrate(fresh, command="init-db")
    after_init = _analyzed(fresh)
    assert "ENG_TRANSITIONS" in after_init, "init-db analyzes the reference tables it filled"
    assert not {"CFG_TASKS", "AUD_TASK_ATTEMPTS", "AUD_TASK_RUN_LOG"} & after_init, "empty tables are left alone"
    (tmp_path / "project" / "migrations").mkdir(parents=True)
    (tmp_path / "project" / "migrations" / "0001_tasks.sql").write_text(
        "INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('p');\n"
        "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'pl' FROM CFG_PROJECTS;\n"
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE) SELECT PIPELINE_ID, 'a', 'SQL',"
        " 'APPEND_TABLE', 'a.sql' FROM CFG_PIPELINES;\n"
        "INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE) SELECT PIPELINE_ID, 'b', 'SQL',"
        " 'APPEND_TABLE', 'b.sql' FROM CFG_PIPELINES;\n"
        "INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID) SELECT b.TASK_ID, a.TASK_ID"
        " FROM CFG_TASKS a, CFG_TASKS b WHERE a.TASK_CODE = 'a' AND b.TASK_CODE = 'b';\n")
    migrate(fresh, project_dir=tmp_path / "project")
    analyzed = _analyzed(fresh)
    assert {"CFG_PROJECTS", "CFG_PIPELINES", "CFG_TASKS", "CFG_TASK_DEPENDENCY"} <= analyzed
    assert not {"AUD_TASK_ATTEMPTS", "AUD_TASK_RUN_LOG", "CFG_POOLS"} & analyzed


@pytest.mark.postgres
def test_migration_0023__hot_tables__carry_their_own_autovacuum_settings(pg_url: str) -> None:
    db = EngineDB(pg_url)
    with db.read() as conn:
        options: dict[str, str] = dict(conn.execute(sa.text(
            "SELECT c.relname, array_to_string(c.reloptions, ',') FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.reloptions IS NOT NULL"),
            {"s": db.schema}).all())
    db.dispose()
    for table in ("aud_task_attempts", "aud_task_run_log", "aud_pipelines_run_log", "aud_workers"):
        assert "autovacuum_vacuum_scale_factor=0.0" in options.get(table, ""), (table, options.get(table))
    assert "autovacuum_vacuum_threshold=1000" in options["aud_task_attempts"]
