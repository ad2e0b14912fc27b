"""The project's time zone, decided in one place.

A project's time zone has one source, in this order: the project's CFG_PROJECTS.TIMEZONE when its row sets one,
else `Orchestration: Timezone` of craft-connector.yml, else UTC. Everything that needs it asks `project_zone`: the
date of a run started without --run-date, the schedules of pipelines without their own SCHEDULE_TIMEZONE, what
`list` and `show` print and what `validate` checks. The loader has already checked a configured name; a project row
is checked when its zone is used (`ProjectZone.zone`), so `list` and `show` can still print a row's bad name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from etlcraft.core.errors import RefusedByPolicyError

#: Where a project's time zone came from (`ProjectZone.source`; the JSON of `list` and `show` prints it).
FROM_PROJECT_ROW = "CFG_PROJECTS.TIMEZONE"
FROM_CONFIGURATION = "Orchestration.Timezone"
FROM_DEFAULT = "default"
DEFAULT_ZONE = "UTC"
EXPECTED = "an IANA time zone name such as UTC, Europe/London or America/New_York"


@dataclass(frozen=True)
class ProjectZone:
    """The time zone of project `project_code`: its IANA `name` and the `source` that set it."""

    project_code: str
    name: str
    source: str

    @property
    def zone(self) -> ZoneInfo:
        """The zone itself; a project row that names no IANA time zone is refused, naming the row and the fix."""
        problem = zone_problem(self.name)
        if problem:
            raise RefusedByPolicyError(
                f"project {self.project_code}: CFG_PROJECTS.TIMEZONE {self.name!r} {problem}; expected {EXPECTED}; "
                "set CFG_PROJECTS.TIMEZONE in a new project migration (NULL uses Orchestration: Timezone of "
                "craft-connector.yml, else UTC) and run etl-craft migrate"
            )
        return ZoneInfo(self.name)

    def today(self) -> date:
        """Today's date in the project's time zone: the date of a run started without --run-date."""
        return datetime.now(self.zone).date()

    def origin(self) -> str:
        """Where the zone came from, in words, for `show`."""
        if self.source == FROM_PROJECT_ROW:
            return f"CFG_PROJECTS.TIMEZONE of project {self.project_code}"
        if self.source == FROM_CONFIGURATION:
            return "Orchestration: Timezone in craft-connector.yml"
        return "the default; set CFG_PROJECTS.TIMEZONE or Orchestration: Timezone to change it"


def project_zone(project_code: str, row_timezone: str | None, configured: str | None) -> ProjectZone:
    """Project `project_code`'s time zone: its row's TIMEZONE (`row_timezone`, None when the row sets none), else
    the configured `Orchestration: Timezone` (`configured`, None when not set or when no craft-connector.yml is at
    hand), else UTC."""
    if row_timezone is not None:
        return ProjectZone(project_code, row_timezone, FROM_PROJECT_ROW)
    if configured is not None:
        return ProjectZone(project_code, configured, FROM_CONFIGURATION)
    return ProjectZone(project_code, DEFAULT_ZONE, FROM_DEFAULT)


def schedule_zone(schedule_timezone: str | None, project: ProjectZone) -> str:
    """The zone a pipeline's RUN_SCHEDULE is read in: its own SCHEDULE_TIMEZONE, else its project's."""
    return schedule_timezone if schedule_timezone is not None else project.name


def zone_problem(name: str) -> str | None:
    """What is wrong with `name` as an IANA time zone name, or None."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a folder of the database, such as "Europe"
        return "is not an IANA time zone"
    return None
