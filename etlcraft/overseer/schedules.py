"""The server's schedules: a run for every due tick of each pipeline's RUN_SCHEDULE (S4.C).

A tick is an instant in UTC; its run has RUN_KEY schedule:<tick, ISO 8601 in UTC>, TRIGGER_KIND SCHEDULE and as
RUN_DATE the tick's date in the schedule's time zone (SCHEDULE_TIMEZONE, else the project's). The unique run key
makes creating a tick's run idempotent: a server that restarts, or two that raced, create it once.

Ticks the server was not running for (at or before its start) are caught up: with CATCHUP = 'Y' the newest
MAX_CATCHUP_RUNS of them get runs, with 'N' only the newest; older missed ticks are recorded as SKIPPED runs "missed
while no server was running" (the newest MISSED_RECORDED of them; older ones are counted in the log). A pipeline
without a scheduled run yet starts at SCHEDULE_START_DATE when it has one, else at the server's start. Ticks that
fall due while the server runs follow OVERLAP_POLICY when the pipeline still has an active run: SKIP records the
tick as a SKIPPED run naming that run, QUEUE creates it QUEUED to run after it. A paused pipeline's ticks create
no run; after its resume, its schedule goes on from the resume.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from etlcraft.core import zones
from etlcraft.core.actor import Actor, acting_as
from etlcraft.core.cron import CronError, CronSchedule, next_after, parse, tick_of, ticks_between
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import EtlCraftError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from etlcraft.engine.queries import fetch_all

MISSED = "missed while no server was running"
#: Older missed ticks than these are not recorded one by one (a minute schedule down for a week would be 10,000
#: SKIPPED runs); the log says how many there were.
MISSED_RECORDED = 100
#: Missed ticks are counted up to this many for the log (counting a minute schedule's year would take long).
COUNT_LIMIT = 10_000
SCHEDULE_ACTOR = Actor("etl-craft schedule", ActorKind.SCHEDULE)
KEY_PREFIX = "schedule:"
#: Ticks given runs per create_scheduled_runs call.
BATCH = 500


@dataclass(frozen=True)
class Schedule:
    """A pipeline's schedule as the server keeps it."""

    pipeline_id: int
    pipeline_code: str
    cron: CronSchedule
    zone: ZoneInfo
    start_date: date | None
    catchup: bool
    max_catchup_runs: int
    overlap_policy: str
    last_tick: datetime | None
    paused: bool
    max_parallel_tasks: int | None = None

    def signature(self) -> tuple[object, ...]:
        """What decides its ticks, as read."""
        return (self.cron.expression, self.zone.key, self.start_date, self.catchup, self.max_catchup_runs,
                self.overlap_policy, self.last_tick, self.paused)

    def starts_at(self) -> datetime | None:
        """The first instant SCHEDULE_START_DATE allows: its midnight in the schedule's zone."""
        if self.start_date is None:
            return None
        return datetime.combine(self.start_date, time(0), tzinfo=self.zone).astimezone(UTC)

    def next_ticks(self, after: datetime, count: int) -> list[datetime]:
        found: list[datetime] = []
        floor = self.starts_at()
        moment = after if floor is None or after >= floor else floor - timedelta(microseconds=1)
        for _ in range(count):
            moment = next_after(self.cron, moment, self.zone)
            found.append(moment)
        return found


def run_date_of(tick: datetime, zone: ZoneInfo) -> date:
    return tick.astimezone(zone).date()


def tick_key(tick: datetime) -> str:
    return KEY_PREFIX + tick_of(tick)


def parse_tick_key(key: str | None) -> datetime | None:
    if not key or not key.startswith(KEY_PREFIX):
        return None
    try:
        return datetime.strptime(key[len(KEY_PREFIX):], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def zone_name(schedule_zone: str | None, project_code: str, project_zone: str | None, configured: str | None) -> str:
    """The zone a pipeline's schedule and run dates are read in: its own, else its project's, which
    etlcraft.core.zones decides (the project row's TIMEZONE, else Orchestration: Timezone, else UTC)."""
    return zones.schedule_zone(schedule_zone, zones.project_zone(project_code, project_zone, configured))


def read_schedules(db: EngineDB, configured_zone: str | None,
                   on_problem: Callable[[str], None] = lambda _: None) -> list[Schedule]:
    """Every active pipeline with a schedule. A schedule or zone that does not parse (validate refuses both) is
    reported through on_problem and left out, so one bad row stops no other pipeline."""
    with db.read() as conn:
        rows = fetch_all(db, conn, "scheduled_pipelines")
    found = []
    for row in rows:
        try:
            found.append(_schedule(row, configured_zone))
        except (CronError, KeyError, ValueError) as exc:
            on_problem(f"pipeline {row['pipeline_code']}: its schedule {row['run_schedule']!r} is not used: {exc}; "
                       "etl-craft validate names the fix")
    return found


def _schedule(row: dict[str, Any], configured_zone: str | None) -> Schedule:
    start = row["schedule_start_date"]
    return Schedule(
        pipeline_id=int(row["pipeline_id"]), pipeline_code=str(row["pipeline_code"]),
        cron=_parsed(str(row["run_schedule"])),
        zone=ZoneInfo(zone_name(row["schedule_timezone"], str(row["project_code"]), row["project_timezone"],
                                configured_zone)),
        start_date=date.fromisoformat(start) if isinstance(start, str) else start,
        catchup=row["catchup"] == "Y", max_catchup_runs=int(row["max_catchup_runs"] or 1),
        overlap_policy=str(row["overlap_policy"] or "SKIP"), last_tick=parse_tick_key(row["last_tick_key"]),
        paused=bool(row["paused"]),
        max_parallel_tasks=int(row["max_parallel_tasks"]) if row["max_parallel_tasks"] is not None else None)


@dataclass(frozen=True)
class Tick:
    """A due tick of a schedule, to be given a run."""

    schedule: Schedule
    tick: datetime
    skip: str | None = None  # the reason its run ends SKIPPED at once (a missed tick CATCHUP does not keep)
    catching_up: bool = False  # a missed tick CATCHUP keeps: queued even behind an active run


@dataclass(frozen=True)
class Created:
    """A run a tick created: IN-PROGRESS ones were admitted to the scheduler's owner, who drives them."""

    run_id: int
    pipeline_code: str
    status: str
    slots: int | None  # the pipeline's MAX_PARALLEL_TASKS


class Scheduler:
    """Creates the runs of due ticks. `started_at` is when the server started: ticks at or before it were missed."""

    def __init__(self, db: EngineDB, started_at: datetime, configured_zone: str | None, run_settings: dict[str, Any],
                 on_event: Callable[[str], None], owner_id: str | None = None, lease_seconds: int = 60) -> None:
        self.db, self.started_at, self.configured_zone = db, started_at, configured_zone
        self.owner_id, self.lease_seconds = owner_id, lease_seconds  # who the runs it creates are admitted to
        self.run_settings, self.on_event = run_settings, on_event
        self.cursor: dict[int, datetime] = {}  # per pipeline: every tick at or before it has been handled
        self.next_at: dict[int, datetime] = {}
        self.seen: dict[int, tuple[object, ...]] = {}  # per pipeline: its schedule row as last handled

    def due(self, now: datetime) -> bool:
        return not self.next_at or min(self.next_at.values()) <= now

    def next_tick(self) -> datetime | None:
        return min(self.next_at.values()) if self.next_at else None

    def tick(self, now: datetime) -> list[Created]:
        """Create the runs of every tick due by `now`, in one create_scheduled_runs call per BATCH ticks; the runs
        created (SKIPPED ones included). A pipeline whose schedule row is as it was and whose next tick is not due
        yet costs nothing more here."""
        schedules = read_schedules(self.db, self.configured_zone, self.on_event)
        next_at: dict[int, datetime] = {}
        seen: dict[int, tuple[object, ...]] = {}
        due: list[Tick] = []
        for schedule in schedules:
            key, pipeline_id = schedule.signature(), schedule.pipeline_id
            seen[pipeline_id] = key
            known = self.next_at.get(pipeline_id)
            if self.seen.get(pipeline_id) == key and known is not None and known > now:
                next_at[pipeline_id] = known
                continue
            due += self._pipeline(schedule, now)
        created: list[Created] = []
        failed: set[int] = set()
        for start in range(0, len(due), BATCH):
            batch = due[start:start + BATCH]
            try:
                created += self._create(batch)
            except EtlCraftError as exc:  # the Engine DB refused the batch: its ticks are tried again next turn
                failed |= {t.schedule.pipeline_id for t in batch}
                self.on_event(f"no run created for {len(batch)} due tick(s): {exc}; trying again")
        for schedule in schedules:
            if schedule.pipeline_id in failed:
                next_at[schedule.pipeline_id] = now
            elif schedule.pipeline_id not in next_at:
                self.cursor[schedule.pipeline_id] = now
                next_at[schedule.pipeline_id] = schedule.next_ticks(now, 1)[0]
        self.next_at, self.seen = next_at, seen
        return created

    def _pipeline(self, schedule: Schedule, now: datetime) -> list[Tick]:
        """The ticks of `schedule` due by `now` that need a run: missed ones (the newest kept, older ones to be
        recorded SKIPPED) and live ones (create_scheduled_runs applies the overlap policy)."""
        after = self._after(schedule)
        if schedule.paused:
            skipped = sum(1 for _ in _bounded(ticks_between(schedule.cron, after, now, schedule.zone), 1000))
            if skipped:
                self.on_event(f"pipeline {schedule.pipeline_code} is paused: {skipped} due tick(s) create no run")
            return []
        missed, older = ([], 0) if after >= self.started_at else _newest(
            schedule, after, min(now, self.started_at), MISSED_RECORDED + self._keep(schedule))
        live = list(ticks_between(schedule.cron, max(after, self.started_at), now, schedule.zone))
        ticks: list[Tick] = []
        if missed:
            keep = self._keep(schedule)
            if older:
                many = f"{COUNT_LIMIT:,} or more" if older >= COUNT_LIMIT else str(older)
                self.on_event(f"pipeline {schedule.pipeline_code}: {many} older tick(s) {MISSED} are not recorded")
            ticks += [Tick(schedule, tick, skip=MISSED) for tick in missed[:-keep]]
            ticks += [Tick(schedule, tick, catching_up=True) for tick in missed[-keep:]]
        return ticks + [Tick(schedule, tick) for tick in live]

    def _keep(self, schedule: Schedule) -> int:
        return schedule.max_catchup_runs if schedule.catchup else 1

    def _after(self, schedule: Schedule) -> datetime:
        """The instant after which this pipeline's ticks are still to be handled."""
        candidates = [t for t in (self.cursor.get(schedule.pipeline_id), schedule.last_tick) if t is not None]
        after = max(candidates) if candidates else None
        floor = schedule.starts_at()
        if after is None:
            after = floor - timedelta(microseconds=1) if floor is not None else self.started_at
        elif floor is not None and after < floor:
            after = floor - timedelta(microseconds=1)
        return after

    def _create(self, ticks: list[Tick]) -> list[Created]:
        """The runs of `ticks`, in one call: QUEUED, admitted to the server at once where no gate is to be judged
        (with an owner), or SKIPPED (a missed tick, or one the pipeline's overlap policy skips):
        create_scheduled_runs decides, with the reason as the run's message. Not durable: a run a database crash
        loses is created again from its tick (the same key)."""
        payload = json.dumps([{"ord": n, "pipeline_id": t.schedule.pipeline_id, "run_key": tick_key(t.tick),
                               "run_date": run_date_of(t.tick, t.schedule.zone).isoformat(), "skip_reason": t.skip,
                               "catching_up": t.catching_up} for n, t in enumerate(ticks)])
        with acting_as(SCHEDULE_ACTOR):
            rows = call(self.db, "create_scheduled_runs", ticks=payload, owner_id=self.owner_id,
                        lease_seconds=self.lease_seconds, durable=False, **self.run_settings)
        created = []
        for row, tick in zip(rows, ticks, strict=True):
            schedule = tick.schedule
            if row.pipeline_run_id is None:
                self.on_event(f"pipeline {schedule.pipeline_code}: no run created for tick {tick_of(tick.tick)}: "
                              f"{row.message}")
                continue
            if not row.created:
                continue
            what = f"{row.status} ({row.message})" if row.message else row.status
            self.on_event(f"pipeline {schedule.pipeline_code}: tick {tick_of(tick.tick)} created run "
                          f"{row.pipeline_run_id} ({row.run_key}, run date {run_date_of(tick.tick, schedule.zone)}) "
                          f"{what}")
            created.append(Created(int(row.pipeline_run_id), schedule.pipeline_code, str(row.status),
                                   schedule.max_parallel_tasks))
        return created


@functools.lru_cache(maxsize=4096)
def _parsed(expression: str) -> CronSchedule:
    """parse, once per expression: the schedules are read again every few seconds."""
    return parse(expression)


def _bounded(ticks: Any, limit: int) -> Any:
    for number, tick in enumerate(ticks):
        if number >= limit:
            return
        yield tick


def _newest(schedule: Schedule, after: datetime, until: datetime, count: int) -> tuple[list[datetime], int]:
    """The newest `count` ticks in (after, until], oldest first, and how many older ones there were (0 when none,
    or when it would take too long to count them). The walk starts a day before `until` and doubles its window
    until it holds enough ticks, so a long outage of a frequent schedule costs no more than a short one."""
    window = timedelta(days=1)
    while True:
        start = max(after, until - window)
        found = list(ticks_between(schedule.cron, start, until, schedule.zone))
        if len(found) >= count or start == after:
            older = 0
            if start > after:
                older = sum(1 for _ in _bounded(ticks_between(schedule.cron, after, start, schedule.zone), COUNT_LIMIT))
            return found[-count:], older + max(0, len(found) - count)
        window *= 2
