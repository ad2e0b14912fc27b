"""When a schedule fires: next_after and ticks_between, in the schedule's IANA time zone, across daylight saving
changes (a skipped local time fires at the first minute after the gap, a repeated one once, at its first
occurrence), leap days and every macro."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from etlcraft.core.cron import CronError, next_after, parse, tick_of, ticks_between

NEW_YORK = ZoneInfo("America/New_York")
LONDON = ZoneInfo("Europe/London")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def ticks(expression: str, zone: ZoneInfo, after: datetime, until: datetime) -> list[str]:
    return [tick_of(t) for t in ticks_between(parse(expression), after, until, zone)]


@pytest.mark.parametrize(("zone", "expression", "after", "expected"), [
    # New York springs forward at 02:00 EST on 8 March 2026: 02:30 does not exist, it fires at 03:00 EDT.
    (NEW_YORK, "30 2 * * *", utc(2026, 3, 7, 12), ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
    # London springs forward at 01:00 GMT on 29 March 2026: 01:30 fires at 02:00 BST.
    (LONDON, "30 1 * * *", utc(2026, 3, 28, 12), ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
    # Lord Howe moves half an hour at 02:00 on 4 October 2026: 02:15 fires at 02:30 (+11:00).
    (LORD_HOWE, "15 2 * * *", utc(2026, 10, 3, 0), ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
])
def test_a_local_time_that_does_not_exist_fires_at_the_first_minute_after_the_gap(
        zone: ZoneInfo, expression: str, after: datetime, expected: list[str]) -> None:
    assert ticks(expression, zone, after, utc(2099, 1, 1))[:2] == expected


@pytest.mark.parametrize(("zone", "expression", "after", "expected"), [
    # New York falls back at 02:00 EDT on 1 November 2026: 01:30 happens twice and fires once, in EDT.
    (NEW_YORK, "30 1 * * *", utc(2026, 10, 31, 12), ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
    # London falls back at 02:00 BST on 25 October 2026.
    (LONDON, "30 1 * * *", utc(2026, 10, 24, 12), ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
    # Lord Howe falls back half an hour at 02:00 on 5 April 2026: 01:45 fires at its first occurrence (+11:00).
    (LORD_HOWE, "45 1 * * *", utc(2026, 4, 4, 0), ["2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
])
def test_a_local_time_that_happens_twice_fires_once_at_its_first_occurrence(
        zone: ZoneInfo, expression: str, after: datetime, expected: list[str]) -> None:
    assert ticks(expression, zone, after, utc(2099, 1, 1))[:2] == expected


def test_every_quarter_hour_through_the_spring_gap_fires_once_for_the_whole_gap() -> None:
    assert ticks("*/15 * * * *", NEW_YORK, utc(2026, 3, 8, 6, 30), utc(2026, 3, 8, 7, 30)) == [
        "2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z", "2026-03-08T07:30:00Z"]


def test_every_half_hour_through_the_autumn_overlap_skips_the_repeated_hour() -> None:
    assert ticks("*/30 * * * *", NEW_YORK, utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 8)) == [
        "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z",  # 01:00 and 01:30 EDT; their EST repeats do not fire
        "2026-11-01T07:00:00Z", "2026-11-01T07:30:00Z", "2026-11-01T08:00:00Z"]


def test_29_february_fires_only_in_leap_years() -> None:
    assert ticks("0 6 29 2 *", ZoneInfo("UTC"), utc(2026, 1, 1), utc(2033, 1, 1)) == [
        "2028-02-29T06:00:00Z", "2032-02-29T06:00:00Z"]


@pytest.mark.parametrize("expression", ["0 0 30 2 *", "0 0 31 4,6,9,11 *"])
def test_a_day_that_never_occurs_is_refused_naming_the_field(expression: str) -> None:
    with pytest.raises(CronError, match="day of month"):
        parse(expression)


@pytest.mark.parametrize(("macro", "after", "first_two"), [
    ("@hourly", utc(2026, 12, 6, 10, 5), ["2026-12-06T11:00:00Z", "2026-12-06T12:00:00Z"]),
    ("@daily", utc(2026, 12, 6, 10), ["2026-12-07T00:00:00Z", "2026-12-08T00:00:00Z"]),
    ("@weekly", utc(2026, 12, 6, 10), ["2026-12-13T00:00:00Z", "2026-12-20T00:00:00Z"]),  # Sundays
    ("@monthly", utc(2026, 12, 6, 10), ["2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z"]),
    ("@yearly", utc(2026, 12, 6, 10), ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
    ("@annually", utc(2026, 12, 6, 10), ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
])
def test_every_macro_fires_when_its_expression_does(macro: str, after: datetime, first_two: list[str]) -> None:
    assert ticks(macro, ZoneInfo("UTC"), after, utc(2099, 1, 1))[:2] == first_two


def test_the_days_of_month_and_of_week_both_restricted_fire_on_either() -> None:
    # The 13th, or any Friday, at noon (classic cron).
    got = ticks("0 12 13 * FRI", ZoneInfo("UTC"), utc(2026, 11, 1), utc(2026, 11, 30))
    assert got == ["2026-11-06T12:00:00Z", "2026-11-13T12:00:00Z", "2026-11-20T12:00:00Z", "2026-11-27T12:00:00Z"]


def test_a_tick_is_strictly_after_the_instant_given() -> None:
    assert tick_of(next_after(parse("0 * * * *"), utc(2026, 12, 6, 10), ZoneInfo("UTC"))) == "2026-12-06T11:00:00Z"


def test_next_after_needs_an_aware_instant() -> None:
    with pytest.raises(ValueError, match="aware"):
        next_after(parse("@daily"), datetime(2026, 1, 1), ZoneInfo("UTC"))
