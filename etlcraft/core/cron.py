"""Five-field cron expressions (CFG_PIPELINES.RUN_SCHEDULE): parsed, checked and stepped through time, with no
dependency.

Fields: minute, hour, day of month, month (1-12 or JAN..DEC), day of week (0-7 or SUN..SAT, 0 and 7 both
Sunday). Each field is `*` or a comma list of values, ranges `a-b` and steps `*/n`, `a-b/n`, `a/n`. The macros
@hourly, @daily, @weekly, @monthly, @yearly and @annually stand for their usual expressions. As in classic cron,
when both day fields are restricted a day matches either of them.

Ticks are local times of the schedule's IANA time zone (next_after). Where daylight saving time moves the clock:
a local time that does not exist (the hour skipped in spring) fires at the first valid minute after the gap, once;
a local time that happens twice (the hour repeated in autumn) fires once, at its first occurrence.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}

_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
#: Days in each month in a leap year: a schedule is possible when some chosen month has the chosen day.
_MONTH_DAYS = {month: calendar.monthrange(2024, month)[1] for month in range(1, 13)}


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day of month", 1, 31, {}),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 7, _DAYS),
)


class CronError(ValueError):
    """An expression that is not a valid five-field cron schedule; the message says which part and why."""


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday (a 7 in the expression is stored as 0)
    days_restricted: bool
    weekdays_restricted: bool


def parse(expression: str) -> CronSchedule:
    """Parse a cron expression or macro; raise CronError naming the field and the part that is wrong."""
    text = " ".join(expression.split())
    expanded = MACROS.get(text.lower(), text) if text.startswith("@") else text
    if expanded.startswith("@"):
        raise CronError(f"{text} is not a cron macro; the macros are {', '.join(MACROS)}")
    parts = expanded.split(" ")
    if len(parts) != 5:
        raise CronError(
            f"a cron schedule has five fields (minute hour day-of-month month day-of-week), found {len(parts)}"
        )
    values = [_parse_field(part, spec) for part, spec in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(0 if d == 7 else d for d in values[4])
    schedule = CronSchedule(text, values[0], values[1], values[2], values[3], weekdays,
                            days_restricted=parts[2] != "*", weekdays_restricted=parts[4] != "*")
    if not schedule.weekdays_restricted and not any(
        day <= _MONTH_DAYS[month] for day in schedule.days for month in schedule.months
    ):
        raise CronError(f"day of month {parts[2]} never occurs in month {parts[3]}, so the schedule never fires")
    return schedule


def _parse_field(text: str, spec: _Field) -> frozenset[int]:
    found: set[int] = set()
    for item in text.split(","):
        if not item:
            raise CronError(f"the {spec.name} field {text!r} has an empty list item")
        found.update(_parse_item(item, spec))
    return frozenset(found)


def _parse_item(item: str, spec: _Field) -> range:
    base, slash, step_text = item.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) < 1:
            raise CronError(f"the {spec.name} step in {item!r} must be a whole number of at least 1")
        step = int(step_text)
    if base == "*":
        low, high = spec.low, spec.high
    elif "-" in base:
        first, _, last = base.partition("-")
        low, high = _value(first, spec, item), _value(last, spec, item)
        if low > high:
            raise CronError(f"the {spec.name} range {item!r} runs backwards; write the smaller value first")
    else:
        low = _value(base, spec, item)
        high = spec.high if slash else low
    return range(low, high + 1, step)


def _value(text: str, spec: _Field, item: str) -> int:
    if text.upper() in spec.names:
        return spec.names[text.upper()]
    if not text.isdigit():
        names = f" or a name {next(iter(spec.names))}..{list(spec.names)[-1]}" if spec.names else ""
        raise CronError(f"the {spec.name} field has {item!r}; expected a number {spec.low}-{spec.high}{names}")
    value = int(text)
    if not spec.low <= value <= spec.high:
        where = "" if item == text else f" in {item!r}"
        raise CronError(f"the {spec.name} value {value}{where} is outside {spec.low}-{spec.high}")
    return value


#: How far next_after looks before it gives up: a valid schedule fires at least once in eight years (29 February
#: of a leap year on a given weekday repeats within 28 years, but parse refuses only impossible days of month, so
#: the bound covers the rarest real schedule, 29 February on a weekday, with margin).
_HORIZON_DAYS = 366 * 29
#: More than any change of a zone's offset from UTC in one step (daylight saving moves it by 30 minutes to 2 hours).
_MAX_SHIFT_HOURS = 3


def next_after(schedule: CronSchedule, instant: datetime, zone: ZoneInfo) -> datetime:
    """The first tick of `schedule` strictly after `instant` (an aware datetime), as an aware UTC datetime; local
    times are read in `zone`."""
    if instant.tzinfo is None:
        raise ValueError("next_after needs an aware datetime")
    start = instant.astimezone(zone)
    # Local times more than a few hours before `instant` cannot fire after it, whatever the offset change.
    earliest = start.replace(tzinfo=None) - timedelta(hours=_MAX_SHIFT_HOURS)
    for day in _days_from(schedule, earliest.date()):
        for local in _local_times(schedule, day):
            if local < earliest:
                continue
            fired = _fire_time(local, zone)
            if fired > instant:
                return fired.astimezone(UTC)
    raise CronError(f"the schedule {schedule.expression} does not fire within {_HORIZON_DAYS // 366} years")


def ticks_between(schedule: CronSchedule, after: datetime, until: datetime, zone: ZoneInfo) -> Iterator[datetime]:
    """Every tick strictly after `after` and at or before `until`, oldest first, in UTC."""
    tick = next_after(schedule, after, zone)
    while tick <= until:
        yield tick
        tick = next_after(schedule, tick, zone)


def _days_from(schedule: CronSchedule, first: date) -> Iterator[date]:
    for offset in range(_HORIZON_DAYS):
        day = first + timedelta(days=offset)
        if day.month in schedule.months and _day_matches(schedule, day):
            yield day


def _day_matches(schedule: CronSchedule, day: date) -> bool:
    in_month = day.day in schedule.days
    in_week = (day.isoweekday() % 7) in schedule.weekdays
    if schedule.days_restricted and schedule.weekdays_restricted:
        return in_month or in_week
    if schedule.weekdays_restricted:
        return in_week
    return in_month


def _local_times(schedule: CronSchedule, day: date) -> Iterator[datetime]:
    for hour in sorted(schedule.hours):
        for minute in sorted(schedule.minutes):
            yield datetime.combine(day, time(hour, minute))


def _fire_time(local: datetime, zone: ZoneInfo) -> datetime:
    """When a naive local time fires: its first occurrence (fold 0) when it exists, else the first minute after the
    gap it falls in."""
    first = local.replace(tzinfo=zone, fold=0)
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local:
        return first
    # Inside a gap, fold 0 reads the time with the offset from before the change, which lands after the gap: the
    # first valid minute is the instant the clock jumped, found by stepping back while the offset stays the same.
    moment = first.astimezone(UTC)
    offset = moment.astimezone(zone).utcoffset()
    while (moment - timedelta(minutes=1)).astimezone(zone).utcoffset() == offset:
        moment -= timedelta(minutes=1)
    return moment.astimezone(zone)


def tick_of(moment: datetime) -> str:
    """A tick's identity in run keys: the instant in UTC, ISO 8601 with a Z (schedule:2026-03-08T07:00:00Z)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
