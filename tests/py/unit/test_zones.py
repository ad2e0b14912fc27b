"""etlcraft.core.zones: the one place that decides a project's time zone (the CLI tests are in
tests/py/process/test_project_time_zone.py)."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest

from etlcraft.core.errors import RefusedByPolicyError
from etlcraft.core.zones import ProjectZone, project_zone, schedule_zone


@pytest.mark.parametrize(
    ("row", "configured", "expected"),
    [
        ("Asia/Tokyo", "Europe/Paris", ProjectZone("shop", "Asia/Tokyo", "CFG_PROJECTS.TIMEZONE")),
        ("UTC", "Europe/Paris", ProjectZone("shop", "UTC", "CFG_PROJECTS.TIMEZONE")),
        (None, "Europe/Paris", ProjectZone("shop", "Europe/Paris", "Orchestration.Timezone")),
        (None, None, ProjectZone("shop", "UTC", "default")),
    ],
    ids=["row-first", "a-row-set-to-utc-still-wins", "then-the-configuration", "then-utc"],
)
def test_project_zone__the_row__else_the_configuration__else_utc(
        row: str | None, configured: str | None, expected: ProjectZone) -> None:
    found = project_zone("shop", row, configured)
    assert found == expected
    assert found.zone == ZoneInfo(expected.name)
    assert isinstance(found.today(), date)


def test_a_schedule_is_read_in_its_own_zone__else_its_projects() -> None:
    project = project_zone("shop", None, "Europe/Paris")
    assert schedule_zone("America/New_York", project) == "America/New_York"
    assert schedule_zone(None, project) == "Europe/Paris"


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "", "../../etc/passwd", "Europe"])
def test_a_row_that_names_no_zone_is_refused_when_used__naming_the_project_the_value_and_the_fix(name: str) -> None:
    zone = project_zone("shop", name, "Europe/Paris")
    assert zone.name == name, "shown as it is, for list and show"
    with pytest.raises(RefusedByPolicyError) as info:
        zone.today()
    assert str(info.value) == (
        f"project shop: CFG_PROJECTS.TIMEZONE {name!r} is not an IANA time zone; expected an IANA time zone name such "
        "as UTC, Europe/London or America/New_York; set CFG_PROJECTS.TIMEZONE in a new project migration (NULL uses "
        "Orchestration: Timezone of craft-connector.yml, else UTC) and run etl-craft migrate")
    assert info.value.exit_code == 24
