"""The project's time zone has one source, through the real command line: the project row's CFG_PROJECTS.TIMEZONE
when it sets one, else Orchestration: Timezone of craft-connector.yml, else UTC. A user meets it in the date of a
run started without --run-date, and in what `show` and `list` print.

The zones are chosen so that the row's and the configuration's dates always differ: Pacific/Kiritimati is UTC+14,
Pacific/Pago_Pago UTC-11."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

ROW_ZONE, CONFIG_ZONE = "Pacific/Kiritimati", "Pacific/Pago_Pago"
ORIGINS = {
    "CFG_PROJECTS.TIMEZONE": "CFG_PROJECTS.TIMEZONE of project proc",
    "Orchestration.Timezone": "Orchestration: Timezone in craft-connector.yml",
    "default": "the default; set CFG_PROJECTS.TIMEZONE or Orchestration: Timezone to change it",
}


def _project(tmp_path: Path, row_zone: str | None, config_zone: str | None) -> Path:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load")]}, [])
    if config_zone is not None:
        with (project / "craft-connector.yml").open("a", encoding="utf-8") as config:
            config.write(f"  Timezone: {config_zone}\n")
    if row_zone is not None:
        (project / "migrations" / "0002_project_zone.sql").write_text(
            f"UPDATE CFG_PROJECTS SET TIMEZONE = '{row_zone}' WHERE PROJECT_CODE = 'proc';\n", encoding="utf-8")
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


@pytest.mark.parametrize(
    ("row_zone", "config_zone", "zone", "source"),
    [
        (ROW_ZONE, CONFIG_ZONE, ROW_ZONE, "CFG_PROJECTS.TIMEZONE"),
        (None, CONFIG_ZONE, CONFIG_ZONE, "Orchestration.Timezone"),
        (None, None, "UTC", "default"),
    ],
    ids=["the-project-row-sets-it", "only-the-configuration-sets-it", "neither-sets-it"],
)
def test_the_project_time_zone__row__else_configuration__else_utc__in_run_dates_show_and_list(
        tmp_path: Path, row_zone: str | None, config_zone: str | None, zone: str, source: str) -> None:
    project = _project(tmp_path, row_zone, config_zone)

    shown = etl_craft("show", "--pipeline-code", "flow", cwd=project)
    assert shown.code == 0, shown.err
    assert f"  project time zone: {zone} ({ORIGINS[source]})" in shown.out.splitlines()
    pipeline = json.loads(etl_craft("show", "--pipeline-code", "flow", "--format", "json", cwd=project).out)["pipeline"]
    assert (pipeline["project_timezone"], pipeline["project_timezone_source"]) == (zone, source)
    (listed,) = json.loads(etl_craft("list", "--format", "json", cwd=project).out)["pipelines"]
    assert (listed["project_timezone"], listed["project_timezone_source"]) == (zone, source)
    assert f"{zone} (project)" in etl_craft("list", cwd=project).out

    before = datetime.now(ZoneInfo(zone)).date()
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 0, done.out + done.err
    today = {before, datetime.now(ZoneInfo(zone)).date()}  # the same date unless the zone's midnight passed meanwhile
    status = json.loads(etl_craft("status", "--pipeline-code", "flow", "--run-id", "1", "--format", "json",
                                  cwd=project).out)
    assert date.fromisoformat(str(status["run"]["run_date"])[:10]) in today, (status["run"]["run_date"], zone)


def test_a_project_row_that_names_no_time_zone__run_is_refused_before_any_write__show_and_validate_name_it(
        tmp_path: Path) -> None:
    project = _project(tmp_path, "Mars/Olympus_Mons", CONFIG_ZONE)

    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 24, done.out + done.err
    assert done.err == (
        "error: project proc: CFG_PROJECTS.TIMEZONE 'Mars/Olympus_Mons' is not an IANA time zone; expected an IANA "
        "time zone name such as UTC, Europe/London or America/New_York; set CFG_PROJECTS.TIMEZONE in a new project "
        "migration (NULL uses Orchestration: Timezone of craft-connector.yml, else UTC) and run etl-craft migrate\n")
    assert "Traceback" not in done.err
    history = json.loads(etl_craft("history", "--pipeline-code", "flow", "--format", "json", cwd=project).out)
    assert history["runs"] == [], "the refused run left no run behind"

    shown = etl_craft("show", "--pipeline-code", "flow", cwd=project)
    assert shown.code == 0, shown.err
    assert "  project time zone: Mars/Olympus_Mons (CFG_PROJECTS.TIMEZONE of project proc)" in shown.out.splitlines()
    checked = etl_craft("validate", "--offline", cwd=project)
    assert checked.code == 7
    assert "TIMEZONE 'Mars/Olympus_Mons' is not an IANA time zone" in checked.out
