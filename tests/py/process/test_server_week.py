"""A simulated week under the whole server, on SQLite and PostgreSQL: the demo project's schedules (shop_ingest
hourly, customer_orders daily at 06:00) with no-op tasks, a pinned clock that the test moves from tick to tick
(the Engine DB's test mode; task processes read the same pinned clock), and the server's own loop turned until it
is idle after each tick. Every expected tick has exactly one run, none extra, each ended SUCCESS with every task
run once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest
import sqlalchemy as sa

from etlcraft.cli.context import CliContext
from etlcraft.core.actor import acting_as
from etlcraft.core.cron import parse, tick_of, ticks_between
from etlcraft.overseer.server import ServerLog
from etlcraft.services.server import build_server
from tests.py.conftest import TEST_ACTOR, PgServer
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

START = datetime(2027, 1, 4, 0, 0, 30, tzinfo=UTC)
SCHEDULES = {"shop_ingest": "0 * * * *", "customer_orders": "0 6 * * *"}
PIPELINES = {"shop_ingest": [Task("ingest_customers"), Task("ingest_orders")],
             "customer_orders": [Task("load_customers"), Task("load_orders"), Task("customer_totals")]}
EDGES = [("ingest_orders", "ingest_customers", "SUCCESS"), ("customer_totals", "load_customers", "SUCCESS"),
         ("customer_totals", "load_orders", "SUCCESS")]


@pytest.mark.parametrize("dialect", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_simulated_week_under_the_server__one_run_per_tick__each_finished(
        dialect: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = None
    if dialect == "postgresql":
        pg: PgServer = request.getfixturevalue("pg_server")
        name = pg.create(template=request.getfixturevalue("pg_template"))  # a test-mode database: the clock pins
        request.addfinalizer(lambda: pg.drop(name))
        # A week of ticks commits a few thousand transactions; this test checks the server's decisions, not the
        # database's durability (nothing here crashes PostgreSQL), so its commits do not wait for the WAL flush.
        with psycopg.connect(pg.admin_url, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        url = pg.url_for(name)
    root = write_project(tmp_path / "p", url, PIPELINES, EDGES)
    (root / "ingestion_scripts" / "work.py").write_text(
        "from etlcraft.scripting import ScriptResult, ScriptTask\n\n\n"
        "def run(task: ScriptTask) -> ScriptResult:\n    return ScriptResult(row_count=0)\n")
    with (root / "migrations" / "0001_pipelines.sql").open("a") as metadata:
        for code, schedule in SCHEDULES.items():
            metadata.write(f"UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '{schedule}', OVERLAP_POLICY = 'QUEUE' "
                           f"WHERE PIPELINE_CODE = '{code}';\n")
    assert etl_craft("migrate", cwd=root).code == 0
    context = CliContext.create(str(root), None, None)
    db = context.engine_db()
    db.clock.pin(START)
    end = START + timedelta(days=7)
    server = build_server(db, context.config(), 4, ServerLog(lambda _: None, False))
    with acting_as(TEST_ACTOR), server.leading():
        ticks = list(ticks_between(parse("0 * * * *"), START, end, ZoneInfo("UTC")))
        for tick in ticks:
            db.clock.pin(tick + timedelta(seconds=1))
            server.turn(most_seconds=0.05)  # the tick's runs are created
            for _ in range(2000):
                if server.idle():
                    break
                server.turn(most_seconds=0.05)
            assert server.idle(), f"runs still active after the tick {tick_of(tick)}"
    db.clock.pin(None)
    with db.read() as conn:
        rows = conn.execute(sa.text(
            f"SELECT p.PIPELINE_CODE, r.RUN_KEY, r.STATUS, r.TRIGGER_KIND, "
            f"(SELECT COUNT(*) FROM {db.qualify('AUD_TASK_ATTEMPTS')} a JOIN {db.qualify('AUD_TASK_RUN_LOG')} t "
            f"ON t.TASK_RUN_ID = a.TASK_RUN_ID WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID) "
            f"FROM {db.qualify('AUD_PIPELINES_RUN_LOG')} r JOIN {db.qualify('CFG_PIPELINES')} p "
            "ON p.PIPELINE_ID = r.PIPELINE_ID ORDER BY r.RUN_KEY")).all()
    db.dispose()
    for code, schedule in SCHEDULES.items():
        expected = [f"schedule:{tick_of(t)}" for t in ticks_between(parse(schedule), START, end, ZoneInfo("UTC"))]
        found = [r for r in rows if r[0] == code]
        assert [r[1] for r in found] == expected, code
        assert {(r[2], r[3], r[4]) for r in found} == {("SUCCESS", "SCHEDULE", len(PIPELINES[code]))}, code
