"""Backfills through the real `etl-craft run --backfill FROM:TO`: one BACKFILL run per date, in date order, each
to its end before the next; a plain run never resumes a backfill's run, and an active run found before any date
stops the backfill with the command that resumes it (B7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, release, wait_for, write_project

pytestmark = pytest.mark.process


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else request.getfixturevalue("empty_pg_url")


def _history(project: Path) -> list[dict[str, object]]:
    done = etl_craft("history", "--pipeline-code", "flow", "--format", "json", cwd=project)
    assert done.code == 0, done.err
    return sorted(json.loads(done.out)["runs"], key=lambda r: r["pipeline_run_id"])


def test_backfill__one_backfill_run_per_date_in_date_order(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]},
                            [("report", "load", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    unexplained = etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-03", cwd=project)
    assert unexplained.code == 2 and "a backfill needs --reason" in unexplained.err
    done = etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-03", "--reason",
                     "source fixed", cwd=project)
    assert done.code == 0, done.err
    assert "backfill flow: date 2 of 3 (2026-11-02)" in done.out
    assert "backfill of flow: 3 date(s) from 2026-11-01 to 2026-11-03 done" in done.out
    runs = _history(project)
    assert [(r["run_key"], r["trigger_kind"], str(r["run_date"])[:10], r["status"]) for r in runs] == [
        (f"backfill:2026-11-0{d}", "BACKFILL", f"2026-11-0{d}", "SUCCESS") for d in (1, 2, 3)]

    again = etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-02:2026-11-02", "--reason", "again",
                      cwd=project)
    assert again.code == 0, again.err
    assert _history(project)[-1]["run_key"] == "backfill:2026-11-02#2", "a date backfilled again gets a new run"


def test_b7_a_plain_run_never_resumes_a_backfill__an_active_run_stops_the_backfill_before_its_next_date(
        tmp_path: Path, engine_url: str | None) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("load", {"hold": "load"})]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    backfill = start_etl_craft("run", "--pipeline-code", "flow", "--backfill", "2026-11-01:2026-11-02", "--reason",
                               "reload", cwd=project, log=tmp_path / "backfill.log")
    wait_for(lambda: any((project / "marks").glob("load.*.start")) if (project / "marks").is_dir() else False,
             what="the first date's task to start")
    plain = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert plain.code == 24
    assert "pipeline flow is running backfill run 1 (backfill:2026-11-01) as of 2026-11-01" in plain.err
    queued = etl_craft("run", "--pipeline-code", "flow", "--run-key", "daily:1", "--init-only", cwd=project)
    assert queued.code == 24, "admission waits while the backfill's run is IN-PROGRESS; the run stays QUEUED"
    release(project, "load")
    assert backfill.wait(timeout=60) == 25
    said = (tmp_path / "backfill.log").read_text()
    assert ("backfill of flow stopped before 2026-11-02 (1 of 2 dates done): run 2 (daily:1, MANUAL, QUEUED) is "
            "active; once it has ended, resume with: etl-craft run --pipeline-code flow --backfill "
            "2026-11-02:2026-11-02 --reason reload") in said
    assert [(r["run_key"], r["status"]) for r in _history(project)] == [
        ("backfill:2026-11-01", "SUCCESS"), ("daily:1", "QUEUED")]
