"""The AUD_V_ views (sql/functions/080_views.sql.j2, described by sql/views.yaml), the same on SQLite and PostgreSQL:
each lists the rows and values of a history written through the write API (tests/py/support/views.py), the two
dialects give identical rows, the health view counts the last 30 days of the Engine DB's clock, the catalog's
views and columns are the spec's, and migrate keeps the views (and what was granted on them) while their columns
stay, and re-creates one that is missing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.engine.catalog import view_names
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import migrate
from etlcraft.engine.render import MIGRATE_LOCK_KEY
from etlcraft.engine.views import views_spec
from tests.py.conftest import TEST_ACTOR
from tests.py.support.views import T0, History, at, read_all, read_view, write_history

ROOT = Path(__file__).resolve().parents[3]
#: The pages whose SQL examples read the views.
DOCUMENTED = ("docs/guides/sql-api.md", "docs/reference/views.md")


@pytest.fixture
def history(engine_db: EngineDB) -> History:
    return write_history(engine_db)


def pick(rows: list[dict[str, Any]], *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(row[c] for c in columns) for row in rows]


def test_runs__one_row_per_run_with_its_pipeline_times_duration_task_run_counts_sla_and_actors(
        history: History) -> None:
    rows = read_view(history.db, "AUD_V_RUNS")
    assert pick(rows, "PROJECT_CODE", "PIPELINE_CODE", "RUN_KEY", "TRIGGER_KIND", "RUN_DATE", "STATUS") == [
        ("proj", "orders", "manual:old", "MANUAL", "2026-01-01", "FAILED"),
        ("proj", "orders", "manual:ok", "MANUAL", "2026-01-01", "SUCCESS"),
        ("proj", "orders", "manual:retry", "MANUAL", "2026-01-01", "FAILED"),
        ("proj", "orders", "manual:cancel", "MANUAL", "2026-01-01", "CANCELLED"),
        ("proj", "reports", "manual:rep", "MANUAL", "2026-01-01", "IN-PROGRESS"),
    ]
    assert pick(rows[1:], "QUEUED_AT", "STARTED_AT", "ENDED_AT", "DURATION_SECONDS") == [
        (at(0), at(0), at(15), 15.0),
        (at(60), at(60), at(200), 140.0),
        (at(300), at(300), at(310), 10.0),
        (at(400), at(400), None, None),
    ]
    counts = ("TASK_RUNS", "TASK_RUNS_SUCCEEDED", "TASK_RUNS_FAILED", "TASK_RUNS_SKIPPED", "TASK_RUNS_CANCELLED",
              "TASK_RUNS_IN_PROGRESS")
    assert pick(rows, *counts) == [(1, 0, 1, 0, 0, 0), (1, 1, 0, 0, 0, 0), (1, 0, 1, 0, 0, 0), (1, 0, 0, 0, 1, 0),
                                   (1, 0, 0, 0, 0, 1)]
    assert pick(rows, "SLA_STATUS") == [("MET",), ("MET",), ("BREACHED",), (None,), (None,)]
    assert pick(rows[3:], "STARTED_BY", "STARTED_BY_KIND", "ENDED_BY", "ENDED_BY_KIND", "MESSAGE") == [
        ("tester@pytest", "HUMAN", "tester@pytest", "HUMAN", "cancelled: not needed"),
        ("tester@pytest", "HUMAN", None, None, None),
    ]


def test_task_runs__the_first_start_is_the_first_attempts_not_the_retrys__with_counts_and_error(
        history: History) -> None:
    rows = {row["RUN_KEY"]: row for row in read_view(history.db, "AUD_V_TASK_RUNS")}
    retry = rows["manual:retry"]
    assert (retry["TASK_CODE"], retry["STATUS"], retry["ATTEMPT_COUNT"], retry["FIRST_STARTED_AT"],
            retry["ENDED_AT"], retry["DURATION_SECONDS"], retry["ERROR_MESSAGE"]) == (
        "load", "FAILED", 2, at(62), at(80), 18.0, "boom again")
    ok = rows["manual:ok"]
    assert pick([ok], "FIRST_STARTED_AT", "ENDED_AT", "DURATION_SECONDS", "SOURCE_COUNT", "INSERT_COUNT",
                "UPDATE_COUNT", "DELETE_COUNT", "DUPLICATE_COUNT", "ROWS_WRITTEN", "TARGET_COUNT") == [
        (at(2), at(12.3456), 10.346, 7, 5, 0, 0, 2, 5, 5)]
    assert pick([rows["manual:cancel"]], "STATUS", "FIRST_STARTED_AT", "DURATION_SECONDS", "MESSAGE") == [
        ("CANCELLED", None, None, "not needed")]
    assert pick([rows["manual:rep"]], "PIPELINE_CODE", "TASK_CODE", "HANDLER", "STATUS", "ENDED_AT") == [
        ("reports", "build", "SQL", "IN-PROGRESS", None)]


def test_attempts__one_row_per_attempt_with_retry_number_owner_process_times_and_outcome(history: History) -> None:
    rows = read_view(history.db, "AUD_V_ATTEMPTS")
    columns = ("RUN_KEY", "TASK_CODE", "ATTEMPT_NUMBER", "RETRY_NUMBER", "STATUS", "EXIT_CODE", "ERROR_MESSAGE")
    assert pick(rows, *columns) == [
        ("manual:old", "load", 1, 0, "FAILED", 1, "old failure"),
        ("manual:ok", "load", 1, 0, "SUCCESS", 0, None),
        ("manual:retry", "load", 1, 0, "FAILED", 1, "boom"),
        ("manual:retry", "load", 2, 1, "FAILED", 1, "boom again"),
        ("manual:cancel", "load", 1, 0, "CANCELLED", None, "cancelled before it started: not needed"),
        ("manual:rep", "build", 1, 0, "QUEUED", None, None),
    ]
    retried = rows[3]
    assert pick([retried], "POOL", "SLOT_KIND", "OWNER_ID", "HOST", "PID", "QUEUED_AT", "CLAIMED_AT", "STARTED_AT",
                "ENDED_AT", "DURATION_SECONDS", "LOG_PATH") == [
        ("default", "warehouse", "host-a:100:1700000000:0a0a0a0a", "host-a", 4242, at(70), at(71), at(72), at(80),
         8.0, f"logs/{retried['ATTEMPT_ID']}.log")]
    assert rows[1]["DURATION_SECONDS"] == 10.346
    assert pick(rows[4:], "OWNER_ID", "STARTED_AT", "DURATION_SECONDS") == [(None, None, None), (None, None, None)]


def test_gate_decisions__pipeline_and_task_dependencies_with_upstream_codes_and_the_selected_run(
        history: History) -> None:
    rows = read_view(history.db, "AUD_V_GATE_DECISIONS")
    assert pick(rows, "PIPELINE_CODE", "RUN_KEY", "TASK_CODE", "DEPENDENCY_KIND", "DEPENDENCY_TYPE",
                "UPSTREAM_PIPELINE_CODE", "UPSTREAM_TASK_CODE", "RESULT", "SELECTED_RUN_KEY", "SELECTED_REVISION",
                "DECIDED_AT", "DECIDED_BY") == [
        ("reports", "manual:rep", None, "PIPELINE", "SUCCESS", "orders", None, "SATISFIED", "manual:ok", 1, at(400),
         "tester@pytest"),
        ("reports", "manual:rep", "build", "TASK", "SUCCESS", "orders", "load", "SATISFIED", "manual:ok", 1, at(410),
         "tester@pytest"),
    ]
    pipeline_edge, task_edge = rows
    assert (pipeline_edge["PIPELINE_DEPENDENCY_ID"], pipeline_edge["TASK_DEPENDENCY_ID"],
            pipeline_edge["TASK_RUN_ID"], pipeline_edge["ATTEMPT_ID"]) == (1, None, None, None)
    assert task_edge["PIPELINE_DEPENDENCY_ID"] is None and task_edge["ATTEMPT_ID"] is not None
    assert task_edge["SELECTED_TASK_RUN_ID"] == read_view(
        history.db, "AUD_V_TASK_RUNS", "WHERE RUN_KEY = 'manual:ok'")[0]["TASK_RUN_ID"]
    assert all(row["REASON"] for row in rows)


def test_operator_actions__a_cancel_a_pause_and_its_resume_and_an_open_pause__one_row_each(history: History) -> None:
    rows = read_view(history.db, "AUD_V_OPERATOR_ACTIONS")
    assert pick(rows, "SOURCE_TABLE", "ACTION", "ACTED_AT", "ACTOR", "ACTOR_KIND", "PIPELINE_CODE", "RUN_KEY",
                "FROM_STATUS", "TO_STATUS", "REASON") == [
        ("AUD_RUN_INTERVENTIONS", "CANCEL", at(310), "tester@pytest", "HUMAN", "orders", "manual:cancel",
         "IN-PROGRESS", "CANCELLED", "not needed"),
        ("AUD_PIPELINE_PAUSES", "PAUSE", at(500), "tester@pytest", "HUMAN", "orders", None, None, None, "maintenance"),
        ("AUD_PIPELINE_PAUSES", "RESUME", at(560), "tester@pytest", "HUMAN", "orders", None, None, None, "done"),
        ("AUD_PIPELINE_PAUSES", "PAUSE", at(600), "tester@pytest", "HUMAN", "reports", None, None, None, "holiday"),
    ]
    assert rows[1]["SOURCE_ID"] == rows[2]["SOURCE_ID"] != rows[3]["SOURCE_ID"]
    assert rows[0]["PIPELINE_RUN_ID"] == history.runs["manual:cancel"]


HEALTH = ("PIPELINE_CODE", "LAST_RUN_KEY", "LAST_RUN_STATUS", "LAST_RUN_ENDED_AT", "RUNS_ENDED_30D",
          "RUNS_SUCCEEDED_30D", "SUCCESS_RATE_30D", "AVG_DURATION_SECONDS_30D", "SLA_BREACHES_30D", "RUNS_IN_PROGRESS",
          "IS_PAUSED", "PAUSED_SINCE")


def test_pipeline_health__rate_and_average_of_the_runs_ended_in_30_days__the_older_run_left_out(
        history: History) -> None:
    """orders: manual:ok (15 s, SUCCESS), manual:retry (140 s, FAILED, SLA breached) and manual:cancel (10 s) ended
    in the window; manual:old (FAILED) ended 40 days earlier and counts in neither the rate nor the average."""
    assert pick(read_view(history.db, "AUD_V_PIPELINE_HEALTH"), *HEALTH) == [
        ("orders", "manual:cancel", "CANCELLED", at(310), 3, 1, 0.3333, 55.0, 1, 0, "N", None),
        ("reports", "manual:rep", "IN-PROGRESS", None, 0, 0, None, None, 0, 1, "Y", at(600)),
    ]


@pytest.mark.parametrize(("days", "ended", "rate", "average"), [
    (29, 3, 0.3333, 55.0),  # every run of T0 still in the window
    (31, 0, None, None),  # 30 days later, none
])
def test_pipeline_health__follows_the_engine_clock(history: History, days: int, ended: int, rate: float | None,
                                                   average: float | None) -> None:
    history.db.clock.pin(T0 + timedelta(days=days))
    [orders, _] = read_view(history.db, "AUD_V_PIPELINE_HEALTH")
    assert (orders["RUNS_ENDED_30D"], orders["SUCCESS_RATE_30D"], orders["AVG_DURATION_SECONDS_30D"],
            orders["LAST_RUN_KEY"]) == (ended, rate, average, "manual:cancel")


def test_the_documented_queries_of_the_views_run_and_answer(history: History) -> None:
    """Each ```sql example of the guides and the reference that reads an AUD_V_ view runs as written (on SQLite
    without the schema), and the health dashboard answers one row per active pipeline."""
    queries = [block for page in DOCUMENTED
               for block in re.findall(r"^```sql\n(.*?)^```", (ROOT / page).read_text(encoding="utf-8"), re.S | re.M)
               if "aud_v_" in block and "\\gset" not in block]  # a psql script is run by its pgTAP suite
    assert len(queries) >= 3
    answers = {}
    with history.db.read() as conn:
        for query in queries:
            sql = query if history.db.is_postgres else query.replace("etl_craft.", "")
            answers[query] = conn.execute(sa.text(sql.strip().rstrip(";"))).all()
    [dashboard] = [q for q in queries if "aud_v_pipeline_health\n WHERE active_flag = 'Y'\n ORDER BY" in q]
    assert [row[0] for row in answers[dashboard]] == ["orders", "reports"]


@pytest.fixture
def both(request: pytest.FixtureRequest) -> Iterator[tuple[EngineDB, EngineDB]]:
    dbs = (EngineDB(request.getfixturevalue("sqlite_url")), EngineDB(request.getfixturevalue("pg_url")))
    with acting_as(TEST_ACTOR):
        yield dbs
    for db in dbs:
        db.dispose()


@pytest.mark.postgres
def test_every_view_lists_the_same_rows_and_values_on_sqlite_and_postgresql(both: tuple[EngineDB, EngineDB]) -> None:
    sqlite, postgres = both
    write_history(sqlite)
    write_history(postgres)
    on_sqlite, on_postgres = read_all(sqlite), read_all(postgres)
    assert [len(rows) for rows in on_sqlite.values()] == [5, 5, 6, 2, 4, 2, 6, 0, 1]
    for view in on_sqlite:
        assert on_sqlite[view] == on_postgres[view], view


def test_the_catalog_has_the_specs_views_with_its_columns_in_order_and_no_other(engine_db: EngineDB) -> None:
    spec = views_spec()
    with engine_db.read() as conn:
        assert view_names(engine_db, conn) == {view.name for view in spec.views}
        for view in spec.views:
            found = conn.execute(sa.text(f"SELECT * FROM {engine_db.qualify(view.name)} WHERE 1 = 0")).keys()
            assert [column.upper() for column in found] == list(view.column_names), view.name


def _view_oids(db: EngineDB) -> dict[str, int]:
    with db.read() as conn:
        rows = conn.execute(sa.text("SELECT upper(c.relname), c.oid FROM pg_class c JOIN pg_namespace n"
                                    " ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind = 'v'"),
                            {"s": db.schema})
        return {name: int(oid) for name, oid in rows}


def _forget_views(db: EngineDB) -> None:
    """Make the next migrate apply 080_views again, as a release whose views changed would."""
    with db.write() as conn:
        if db.is_postgres:  # only a transaction holding migrate's lock writes the ledger
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
        conn.execute(sa.text(f"DELETE FROM {db.qualify('SCHEMA_MIGRATIONS')} WHERE VERSION = 'R:080_views'"))


def test_migrate_creates_a_missing_view_again__and_then_changes_nothing(engine_db: EngineDB) -> None:
    """A versioned migration that must change a column a view reads drops the view first; migrate puts it back."""
    with engine_db.write() as conn:
        conn.execute(sa.text(f"DROP VIEW {engine_db.qualify('AUD_V_TASK_RUNS')}"))
    report = migrate(engine_db)
    again = migrate(engine_db)
    assert [m.name for m in report.refreshed] == ["080_views"]
    assert not again.changed_anything
    with engine_db.read() as conn:
        assert "AUD_V_TASK_RUNS" in view_names(engine_db, conn)


@pytest.mark.postgres
@pytest.mark.parametrize(("old_columns", "kept"), [
    ("1::bigint AS PIPELINE_RUN_ID, 'p'::varchar(128) AS PROJECT_CODE", True),  # the spec adds columns at the end
    ("1::int AS PIPELINE_RUN_ID", False),  # a column's type changes
    ("'p'::varchar(128) AS PROJECT_CODE, 1::bigint AS PIPELINE_RUN_ID", False),  # columns move
])
def test_reapplied_views_keep_their_identity_and_grants_unless_a_column_changes__then_the_view_is_recreated(
        pg_url: str, old_columns: str, kept: bool) -> None:
    """CREATE OR REPLACE keeps each view (the same pg_class row, so what was granted on it stays) while its columns
    are the first of the spec's; a view whose columns differ otherwise is dropped and created with the spec's."""
    db = EngineDB(pg_url)
    try:
        with acting_as(TEST_ACTOR):
            before = _view_oids(db)
            with db.write() as conn:
                conn.execute(sa.text("DROP VIEW etl_craft.AUD_V_RUNS"))
                conn.execute(sa.text(f"CREATE VIEW etl_craft.AUD_V_RUNS AS SELECT {old_columns}"))
            old = _view_oids(db)["AUD_V_RUNS"]
            _forget_views(db)
            migrate(db)
        after = _view_oids(db)
        assert {name: oid for name, oid in after.items() if name != "AUD_V_RUNS"} == {
            name: oid for name, oid in before.items() if name != "AUD_V_RUNS"}
        assert (after["AUD_V_RUNS"] == old) is kept
        with db.read() as conn:
            columns = conn.execute(sa.text("SELECT * FROM etl_craft.AUD_V_RUNS WHERE 1 = 0")).keys()
            comment = conn.execute(sa.text("SELECT obj_description('etl_craft.aud_v_runs'::regclass)")).scalar()
        assert [c.upper() for c in columns] == list(views_spec().view("AUD_V_RUNS").column_names)
        assert comment == views_spec().view("AUD_V_RUNS").description
    finally:
        db.dispose()
