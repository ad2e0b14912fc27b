"""The warehouse's statement timeout limits etl-craft's own reads (validate), not a task's SQL: on PostgreSQL a
statement of validate that outlives Warehouse.statement_timeout_seconds is cancelled and reported as a note naming the
key, and validate ends instead of waiting; a task's connection gets no limit from etl-craft."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from etlcraft.config.loader import load_config
from etlcraft.core.actor import acting_as
from etlcraft.warehouse.connection import open_warehouse
from tests.py.conftest import TEST_ACTOR
from tests.py.support.cli import etl_craft
from tests.py.support.scenario import Project
from tests.py.warehouse.conftest import Wh, make_wh

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_wh(tmp_path: Path, engine_template: Path, pg_warehouse: str) -> Iterator[Wh]:
    """A PostgreSQL warehouse project whose Warehouse section sets statement_timeout_seconds: 1."""
    made = make_wh("postgresql", tmp_path, engine_template, pg_warehouse)
    config = made.project / "craft-connector.yml"
    config.write_text(config.read_text(encoding="utf-8") + "  statement_timeout_seconds: 1\n", encoding="utf-8")
    made.config = load_config(made.project)
    yield made
    made.execute(f"DROP SCHEMA {made.schema} CASCADE")
    made.engine_db.dispose()


def _plain(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_checks_connection__statement_past_the_limit_is_cancelled__task_connection_is_not_limited(
        pg_wh: Wh) -> None:
    checks = open_warehouse(pg_wh.config, checks=True)
    try:
        with pytest.raises(psycopg.errors.QueryCanceled) as cancelled, checks.transaction() as session:
            session.run("SELECT pg_sleep(5)")
        assert checks.statement_failure(cancelled.value) == (
            f"the warehouse at {checks.display} cancelled a statement that ran longer than its limit of 1 s "
            "(Warehouse.statement_timeout_seconds); a lock held by another session (see pg_stat_activity) or an "
            "overloaded server makes a statement wait that long: find the cause, or raise the limit")
    finally:
        checks.dispose()
    with psycopg.connect(_plain(pg_wh.config.warehouse.url)) as plain:
        server_default = plain.execute("SHOW statement_timeout").fetchone()
    task = open_warehouse(pg_wh.config)
    try:
        with task.transaction() as session:
            session.run("SELECT pg_sleep(1.5)")
            assert (session.scalar("SHOW statement_timeout"),) == server_default
    finally:
        task.dispose()


def test_cli_validate__a_source_table_locked_past_the_limit__a_note_names_the_key_and_validate_ends(
        pg_wh: Wh) -> None:
    pg_wh.execute("CREATE TABLE {s}.orders (order_id INTEGER, amount DECIMAL(12,2))")
    (pg_wh.project / "sql_files" / "totals.sql").write_text(f"SELECT order_id, amount FROM {pg_wh.schema}.orders\n",
                                                            encoding="utf-8")
    project = Project(pg_wh.engine_db)
    with acting_as(TEST_ACTOR):
        project.pipeline("sales")
        project.task("sales", "totals", ACTION="OVERWRITE_TABLE", TARGET_OBJECT=pg_wh.t("totals"))
    with psycopg.connect(_plain(pg_wh.config.warehouse.url)) as dba:
        dba.execute(f"LOCK TABLE {pg_wh.schema}.orders IN ACCESS EXCLUSIVE MODE")  # a long rewrite, say
        done = etl_craft("validate", cwd=pg_wh.project, timeout=60)
        dba.rollback()
    assert done.code == 0, done.out + done.err
    shown = make_url(pg_wh.config.warehouse.url).render_as_string()
    assert (f"note: task sales.totals: the trial of the SELECT of 'totals.sql' was stopped: the warehouse at {shown} "
            "cancelled a statement that ran longer than its limit of 1 s (Warehouse.statement_timeout_seconds); a "
            "lock held by another session (see pg_stat_activity) or an overloaded server makes a statement wait that "
            "long: find the cause, or raise the limit; its target was not checked") in done.out
    assert etl_craft("validate", cwd=pg_wh.project).out.count("note:") == 0, "unlocked, the SELECT is tried"
