"""RUN_SCHEDULE cron expressions: five fields with lists, ranges, steps and names, and the macros."""

from __future__ import annotations

import pytest

from etlcraft.core.cron import CronError, parse


def test_fields_expand_to_their_values() -> None:
    schedule = parse("*/15 9-17/4 1,15 JAN-mar,dec MON-FRI")
    assert sorted(schedule.minutes) == [0, 15, 30, 45]
    assert sorted(schedule.hours) == [9, 13, 17]
    assert sorted(schedule.days) == [1, 15]
    assert sorted(schedule.months) == [1, 2, 3, 12]
    assert sorted(schedule.weekdays) == [1, 2, 3, 4, 5]
    assert (schedule.days_restricted, schedule.weekdays_restricted) == (True, True)


def test_sunday_is_0_or_7_and_a_start_with_a_step_runs_to_the_end() -> None:
    assert parse("0 0 * * 7").weekdays == parse("0 0 * * sun").weekdays == frozenset({0})
    assert sorted(parse("50/5 * * * *").minutes) == [50, 55]


@pytest.mark.parametrize(("macro", "same_as"), [
    ("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@weekly", "0 0 * * 0"), ("@monthly", "0 0 1 * *"),
    ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@DAILY", "0 0 * * *"),
])
def test_macros(macro: str, same_as: str) -> None:
    a, b = parse(macro), parse(same_as)
    assert (a.minutes, a.hours, a.days, a.months, a.weekdays) == (b.minutes, b.hours, b.days, b.months, b.weekdays)


def test_leap_day_is_possible_and_extra_spaces_are_fine() -> None:
    assert parse("  0  0 29  2 * ").days == frozenset({29})
    assert parse("0 0 30 2 MON").weekdays == frozenset({1})  # either day field matches: Mondays in February


@pytest.mark.parametrize(("expression", "message"), [
    ("0 6 * *", "a cron schedule has five fields (minute hour day-of-month month day-of-week), found 4"),
    ("0 6 * * * *", "a cron schedule has five fields (minute hour day-of-month month day-of-week), found 6"),
    ("@every_minute", "@every_minute is not a cron macro; the macros are @hourly, @daily, @weekly, @monthly, "
                      "@yearly, @annually"),
    ("60 * * * *", "the minute value 60 is outside 0-59"),
    ("0 24 * * *", "the hour value 24 is outside 0-23"),
    ("0 0 0 * *", "the day of month value 0 is outside 1-31"),
    ("0 0 1 13 *", "the month value 13 is outside 1-12"),
    ("0 0 * * 8", "the day of week value 8 is outside 0-7"),
    ("0 0 * FOO *", "the month field has 'FOO'; expected a number 1-12 or a name JAN..DEC"),
    ("0 0 * * MONDAY", "the day of week field has 'MONDAY'; expected a number 0-7 or a name SUN..SAT"),
    ("5-1 * * * *", "the minute range '5-1' runs backwards; write the smaller value first"),
    ("*/0 * * * *", "the minute step in '*/0' must be a whole number of at least 1"),
    ("1,,2 * * * *", "the minute field '1,,2' has an empty list item"),
    ("0 0 10-40 * *", "the day of month value 40 in '10-40' is outside 1-31"),
    ("0 0 30 2 *", "day of month 30 never occurs in month 2, so the schedule never fires"),
    ("0 0 31 4,6,9,11 *", "day of month 31 never occurs in month 4,6,9,11, so the schedule never fires"),
])
def test_invalid_expressions_say_what_is_wrong(expression: str, message: str) -> None:
    with pytest.raises(CronError) as caught:
        parse(expression)
    assert str(caught.value) == message
