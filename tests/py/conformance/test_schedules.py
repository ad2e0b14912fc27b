"""The server's schedules on both dialects, with a pinned clock that the test moves (no waiting): a run per due
tick and none extra, keys schedule:<tick in UTC>, run dates in the schedule's zone, catch-up after a stop,
SCHEDULE_START_DATE, the overlap policies and paused pipelines."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from etlcraft.core.cron import parse, tick_of, ticks_between
from etlcraft.core.errors import EtlCraftError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.overseer.schedules import MISSED, Scheduler
from tests.py.support.scenario import Project

START = datetime(2027, 1, 4, 0, 0, 30, tzinfo=UTC)  # a Monday; the demo's schedules: hourly and 06:00 daily


def scheduler(db: EngineDB, started_at: datetime) -> Scheduler:
    return Scheduler(db, started_at, "UTC", {}, lambda _: None)


def runs(project: Project, pipeline: str) -> list[tuple[str, str, str, str | None]]:
    """(run key, status, run date, message) of the pipeline's runs, by key."""
    rows = project.rows("SELECT RUN_KEY, STATUS, RUN_DATE, MESSAGE, TRIGGER_KIND FROM {AUD_PIPELINES_RUN_LOG} "
                        "WHERE PIPELINE_ID = :p ORDER BY RUN_KEY", p=project.pipelines[pipeline])
    assert {r[4] for r in rows} <= {"SCHEDULE"}
    return [(str(r[0]), str(r[1]), str(r[2])[:10], r[3]) for r in rows]


def keys(expression: str, after: datetime, until: datetime, zone: str = "UTC") -> list[str]:
    return [f"schedule:{tick_of(t)}" for t in ticks_between(parse(expression), after, until, ZoneInfo(zone))]


def demo_project(db: EngineDB, **columns: Any) -> Project:
    project = Project(db)
    project.pipeline("shop_ingest", RUN_SCHEDULE="0 * * * *", **columns)
    project.pipeline("customer_orders", RUN_SCHEDULE="0 6 * * *", **columns)
    return project


def test_a_simulated_week_creates_one_run_per_tick_and_none_extra(engine_db: EngineDB) -> None:
    project = demo_project(engine_db, OVERLAP_POLICY="QUEUE")
    engine_db.clock.pin(START)
    first = scheduler(engine_db, START)
    now = START
    end = START + timedelta(days=7)
    step = timedelta(minutes=17)  # ticks fall between looks, some looks see none
    while now < end:
        now = min(now + step, end)
        engine_db.clock.pin(now)
        if now >= START + timedelta(days=3, hours=5) and first is not None:
            first = None  # the server restarts mid-week: its successor neither repeats nor loses a tick
            current = scheduler(engine_db, now)
        (current if first is None else first).tick(now)
    expected_hourly = keys("0 * * * *", START, end)
    assert len(expected_hourly) == 7 * 24
    assert [r[0] for r in runs(project, "shop_ingest")] == expected_hourly
    assert [r[0] for r in runs(project, "customer_orders")] == keys("0 6 * * *", START, end)
    assert {r[1] for r in runs(project, "customer_orders")} == {"QUEUED"}


def test_three_missed_daily_ticks_with_catchup_2_make_two_runs_and_one_skipped(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("daily", RUN_SCHEDULE="0 6 * * *", CATCHUP="Y", MAX_CATCHUP_RUNS=2)
    engine_db.clock.pin(START)
    scheduler(engine_db, START - timedelta(days=1)).tick(START)  # the last tick run: 3 January 06:00
    assert [r[0] for r in runs(project, "daily")] == ["schedule:2027-01-03T06:00:00Z"]
    call(engine_db, "finish_run", run_id=project.scalar("SELECT MAX(PIPELINE_RUN_ID) FROM {AUD_PIPELINES_RUN_LOG}"),
         from_status="QUEUED", status="CANCELLED", message="test")
    restart = START + timedelta(days=3)  # no server on 4, 5 and 6 January at 06:00
    engine_db.clock.pin(restart)
    scheduler(engine_db, restart).tick(restart)
    assert runs(project, "daily")[1:] == [
        ("schedule:2027-01-04T06:00:00Z", "SKIPPED", "2027-01-04", MISSED),
        ("schedule:2027-01-05T06:00:00Z", "QUEUED", "2027-01-05", None),
        ("schedule:2027-01-06T06:00:00Z", "QUEUED", "2027-01-06", None)]


def test_without_catchup_only_the_newest_missed_tick_runs(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("daily", RUN_SCHEDULE="@daily", CATCHUP="N", MAX_CATCHUP_RUNS=5,
                     SCHEDULE_START_DATE=date(2027, 1, 1))
    engine_db.clock.pin(START)
    scheduler(engine_db, START).tick(START)
    assert [(r[0], r[1]) for r in runs(project, "daily")] == [
        ("schedule:2027-01-01T00:00:00Z", "SKIPPED"), ("schedule:2027-01-02T00:00:00Z", "SKIPPED"),
        ("schedule:2027-01-03T00:00:00Z", "SKIPPED"), ("schedule:2027-01-04T00:00:00Z", "QUEUED")]


def test_a_schedule_start_date_in_the_future_creates_nothing_before_it(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("later", RUN_SCHEDULE="0 * * * *", SCHEDULE_START_DATE=date(2027, 1, 5))
    engine_db.clock.pin(START + timedelta(hours=5))
    scheduler(engine_db, START).tick(START + timedelta(hours=5))
    assert runs(project, "later") == []


def test_overlap_skip_records_the_tick_skipped_and_queue_keeps_it(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("skip", RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY="SKIP")
    project.pipeline("queue", RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY="QUEUE")
    engine_db.clock.pin(START)
    live = scheduler(engine_db, START)
    for hour in (1, 2):
        engine_db.clock.pin(START + timedelta(hours=hour))
        live.tick(START + timedelta(hours=hour))
    first, second = runs(project, "skip")
    assert (first[:2], first[3]) == (("schedule:2027-01-04T01:00:00Z", "QUEUED"), None)
    assert second[:2] == ("schedule:2027-01-04T02:00:00Z", "SKIPPED")
    assert re.fullmatch(r"previous run still active: run \d+ \(schedule:2027-01-04T01:00:00Z\) is QUEUED and the "
                        r"pipeline's OVERLAP_POLICY is SKIP", str(second[3]))
    assert [r[1] for r in runs(project, "queue")] == ["QUEUED", "QUEUED"]


def test_create_run_decides_the_overlap_skip_for_scheduled_runs_only(engine_db: EngineDB) -> None:
    """The overlap policy is the Engine DB's rule: a SCHEDULE run of a SKIP pipeline with a run still active ends
    SKIPPED in create_run; a manual run of it is queued behind, as before."""
    project = Project(engine_db)
    pipeline_id = project.pipeline("skip", RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY="SKIP")
    first = call(engine_db, "create_run", pipeline_id=pipeline_id, run_key="a", run_date=START.date(),
                 trigger_kind="SCHEDULE", status="QUEUED")[0]
    scheduled = call(engine_db, "create_run", pipeline_id=pipeline_id, run_key="b", run_date=START.date(),
                     trigger_kind="SCHEDULE", status="QUEUED")[0]
    manual = call(engine_db, "create_run", pipeline_id=pipeline_id, run_key="c", run_date=START.date(),
                  status="QUEUED")[0]
    missed = call(engine_db, "create_run", pipeline_id=pipeline_id, run_key="d", run_date=START.date(),
                  trigger_kind="SCHEDULE", status="QUEUED", skip_reason="missed while no server was running")[0]
    assert (first.status, scheduled.status, manual.status, missed.status) == ("QUEUED", "SKIPPED", "QUEUED", "SKIPPED")
    assert project.rows("SELECT MESSAGE FROM {AUD_PIPELINES_RUN_LOG} WHERE RUN_KEY = 'd'") == [
        ("missed while no server was running",)]


def test_a_paused_pipeline_gets_no_run_and_goes_on_from_its_resume(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    pipeline_id = project.pipeline("paused", RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY="QUEUE")
    engine_db.clock.pin(START)
    live = scheduler(engine_db, START)
    call(engine_db, "pause_pipeline", pipeline_id=pipeline_id, reason="maintenance")
    for hour in (1, 2, 3):
        engine_db.clock.pin(START + timedelta(hours=hour))
        live.tick(START + timedelta(hours=hour))
    assert runs(project, "paused") == []
    call(engine_db, "resume_pipeline", pipeline_id=pipeline_id, reason="done")
    engine_db.clock.pin(START + timedelta(hours=4))
    live.tick(START + timedelta(hours=4))
    assert [r[0] for r in runs(project, "paused")] == ["schedule:2027-01-04T04:00:00Z"]


def test_the_run_date_is_the_ticks_date_in_the_schedules_zone(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("ny", RUN_SCHEDULE="30 22 * * *", SCHEDULE_TIMEZONE="America/New_York")
    engine_db.clock.pin(START)
    live = scheduler(engine_db, START)
    engine_db.clock.pin(START + timedelta(days=1))
    live.tick(START + timedelta(days=1))
    # 22:30 in New York on 3 January is 03:30 UTC on 4 January: the run date is New York's.
    assert [(r[0], r[2]) for r in runs(project, "ny")] == [("schedule:2027-01-04T03:30:00Z", "2027-01-03")]


def test_a_tick_created_twice_is_one_run(engine_db: EngineDB) -> None:
    project = Project(engine_db)
    project.pipeline("hourly", RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY="QUEUE")
    later = START + timedelta(hours=1)
    engine_db.clock.pin(later)
    scheduler(engine_db, START).tick(later)
    scheduler(engine_db, START).tick(later)  # a second server that raced the first: the run key decides
    assert [r[0] for r in runs(project, "hourly")] == ["schedule:2027-01-04T01:00:00Z"]


def test_create_scheduled_runs__a_tick_of_many_pipelines_in_one_call(engine_db: EngineDB) -> None:
    """One call creates a tick's runs for every due pipeline: gate-free pipelines' runs admitted to the owner, a
    second tick of a SKIP pipeline skipped naming the first, QUEUE keeps it, a gated pipeline's run left QUEUED for
    admit_run, a paused pipeline without a run; calling again creates nothing."""
    project = Project(engine_db)
    ids = {code: project.pipeline(code, RUN_SCHEDULE="0 * * * *", OVERLAP_POLICY=policy)
           for code, policy in (("skip", "SKIP"), ("queue", "QUEUE"), ("gated", "QUEUE"), ("paused", "QUEUE"))}
    project.pipeline_depends("gated", "skip")
    call(engine_db, "pause_pipeline", pipeline_id=ids["paused"], reason="maintenance")
    day = START.date().isoformat()
    ticks = [("skip", "schedule:1", None, False), ("skip", "schedule:2", None, False),
             ("queue", "schedule:0", MISSED, False), ("queue", "schedule:1", None, True),
             ("queue", "schedule:2", None, False), ("gated", "schedule:1", None, False),
             ("paused", "schedule:1", None, False)]
    payload = json.dumps([{"ord": n, "pipeline_id": ids[code], "run_key": key, "run_date": day,
                           "skip_reason": skip, "catching_up": catching_up}
                          for n, (code, key, skip, catching_up) in enumerate(ticks)])

    def created() -> list[tuple[Any, ...]]:
        rows = call(engine_db, "create_scheduled_runs", ticks=payload, owner_id="srv", lease_seconds=60,
                    durable=False)
        return [(r.run_key, r.status, r.created, r.message) for r in rows]

    first = created()
    skip_run = project.scalar("SELECT PIPELINE_RUN_ID FROM {AUD_PIPELINES_RUN_LOG} WHERE PIPELINE_ID = :p AND "
                              "RUN_KEY = 'schedule:1'", p=ids["skip"])
    assert first == [
        ("schedule:1", "IN-PROGRESS", True, None),
        ("schedule:2", "SKIPPED", True, f"previous run still active: run {skip_run} (schedule:1) is QUEUED "
                                        "and the pipeline's OVERLAP_POLICY is SKIP"),
        ("schedule:0", "SKIPPED", True, MISSED),
        ("schedule:1", "IN-PROGRESS", True, None),
        ("schedule:2", "QUEUED", True, None),
        ("schedule:1", "QUEUED", True, None),
        ("schedule:1", None, None, "pipeline paused is paused: a paused pipeline starts no run")]
    assert project.scalar("SELECT OWNER_ID FROM {AUD_PIPELINES_RUN_LOG} WHERE PIPELINE_RUN_ID = :r",
                          r=skip_run) == "srv"
    again = created()
    assert [(key, status) for key, status, _, _ in again] == [(key, status) for key, status, _, _ in first]
    assert {made for _, _, made, _ in again} == {False, None}
    assert project.scalar("SELECT COUNT(*) FROM {AUD_PIPELINES_RUN_LOG}") == 6


def test_create_scheduled_runs__refuses_ticks_that_are_not_tick_objects(engine_db: EngineDB) -> None:
    for bad in ("not json", "{}", '[{"ord": 1}]'):
        with pytest.raises(EtlCraftError, match="ticks is a JSON array of objects"):
            call(engine_db, "create_scheduled_runs", ticks=bad)
