"""The scripting API's offsets: every type stored as text and read back exactly, at microsecond precision;
values the offset store can't keep are refused with what to do (B60)."""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from etlcraft.core.errors import ScriptError, error_specs
from etlcraft.scripting import ScriptResult, ScriptTask, stored_offset, typed_offset

PARIS = ZoneInfo("Europe/Paris")


class NanoStamp(datetime):
    """Stands in for a pandas Timestamp: a datetime with a nanosecond attribute (pandas is not imported)."""

    nanosecond = 0

    def __str__(self) -> str:
        return f"{self.strftime('%Y-%m-%d %H:%M:%S')}.{self.microsecond:06d}{self.nanosecond:03d}"


class NanoStamp789(NanoStamp):
    nanosecond = 789


@pytest.mark.parametrize(("value", "text", "kind"), [
    (0, "0", "INTEGER"),
    (-42, "-42", "INTEGER"),
    (2**70, str(2**70), "INTEGER"),
    (Decimal("12345.678901"), "12345.678901", "DECIMAL"),
    (Decimal("1.10"), "1.10", "DECIMAL"),
    (Decimal("-0.000001"), "-0.000001", "DECIMAL"),
    (Decimal("1E-7"), "0.0000001", "DECIMAL"),
    ("", "", "TEXT"),
    ("0000000042_orders.json", "0000000042_orders.json", "TEXT"),
    ("clé ✓", "clé ✓", "TEXT"),
    (date(2026, 1, 31), "2026-01-31", "DATE"),
    (datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC), "2026-01-01T00:00:00.123456+00:00", "TIMESTAMP"),
    (datetime(2026, 1, 1, tzinfo=UTC), "2026-01-01T00:00:00.000000+00:00", "TIMESTAMP"),
    (datetime(2026, 7, 1, 2, 0, 0, 1, tzinfo=PARIS), "2026-07-01T00:00:00.000001+00:00", "TIMESTAMP"),
    (datetime(2026, 1, 1, 1, 0, 0, 999999, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
     "2026-01-01T06:30:00.999999+00:00", "TIMESTAMP"),
    (NanoStamp(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC), "2026-01-01T00:00:00.123456+00:00", "TIMESTAMP"),
])
def test_offset__every_type__round_trips_exactly(value: object, text: str, kind: str) -> None:
    assert stored_offset(value) == (text, kind)
    back = typed_offset(text, kind)
    assert back == value
    assert type(back) is (datetime if isinstance(value, datetime) else type(value))
    assert stored_offset(back) == (text, kind)
    if isinstance(back, datetime):
        assert back.tzinfo is UTC and back.microsecond == value.microsecond  # type: ignore[attr-defined]


def test_offset__timestamp_in_a_fold__keeps_its_instant() -> None:
    """The second 02:30 of the autumn change in Paris is one hour after the first."""
    first = datetime(2026, 10, 25, 2, 30, tzinfo=PARIS, fold=0)
    second = datetime(2026, 10, 25, 2, 30, tzinfo=PARIS, fold=1)
    assert stored_offset(first)[0] == "2026-10-25T00:30:00.000000+00:00"
    assert stored_offset(second)[0] == "2026-10-25T01:30:00.000000+00:00"


def test_b60_timestamp_with_nanoseconds_is_refused() -> None:
    stamp = NanoStamp789(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    with pytest.raises(ValueError) as refused:
        stored_offset(stamp)
    assert str(refused.value) == (
        "offset 2026-01-01 00:00:00.123456789 has nanoseconds, which the offset store can't keep; "
        "round it to microseconds")


def test_b60_any_object_with_nanoseconds_is_refused_before_its_type_is_judged() -> None:
    class Sixty:
        nanosecond = 60

        def __str__(self) -> str:
            return "2026-01-01 00:00:00.000000060"

    with pytest.raises(ValueError, match=r"^offset 2026-01-01 00:00:00.000000060 has nanoseconds, which"):
        stored_offset(Sixty())


@pytest.mark.parametrize(("value", "message"), [
    (True, "offset True is a bool; expected an int, a Decimal, a str, a date, a timezone-aware datetime or None; "
           "return a number or a text instead"),
    (1.5, "offset 1.5 is a float, which can't be stored exactly; expected an int, a Decimal, a str, a date, a "
          "timezone-aware datetime or None; return a Decimal (Decimal(str(value))) or an int"),
    (Decimal("NaN"), "offset Decimal('NaN') is not a finite number; expected an int, a Decimal, a str, a date, a "
                     "timezone-aware datetime or None"),
    (Decimal("-Infinity"), "offset Decimal('-Infinity') is not a finite number; expected an int, a Decimal, a "
                           "str, a date, a timezone-aware datetime or None"),
    ("a\x00b", "offset 'a\\x00b' contains a NUL character, which the offset store can't keep; remove it"),
    (datetime(2026, 1, 1, 8, 30), "offset 2026-01-01 08:30:00 is a datetime without a time zone, so the instant "
                                  "it names is unknown; expected a timezone-aware datetime; attach the source's zone "
                                  "(for UTC: value.replace(tzinfo=timezone.utc))"),
    ([1, 2], "offset [1, 2] is a list; expected an int, a Decimal, a str, a date, a timezone-aware datetime or "
             "None; convert it to one of those"),
    (Path("x"), "offset PosixPath('x') is a pathlib.PosixPath; expected an int, a Decimal, a str, a date, a "
                "timezone-aware datetime or None; convert it to one of those"),
])
def test_offset__a_value_the_store_cant_keep__is_refused_with_the_remedy(value: object, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        stored_offset(value)
    assert str(refused.value) == message


@pytest.mark.parametrize(("text", "kind", "value"), [
    ("2026-01-01 00:00:00", "TIMESTAMP", datetime(2026, 1, 1, tzinfo=UTC)),  # no zone: stored text is UTC
    ("2026-01-01T01:00:00+01:00", "TIMESTAMP", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2026-01-01T00:00:00Z", "TIMESTAMP", datetime(2026, 1, 1, tzinfo=UTC)),
    ("007", "INTEGER", 7),
])
def test_typed_offset__text_written_by_hand__reads_as_its_type(text: str, kind: str, value: object) -> None:
    assert typed_offset(text, kind) == value


@pytest.mark.parametrize(("text", "kind"), [("abc", "INTEGER"), ("1.2.3", "DECIMAL"), ("2026-13-01", "DATE"),
                                            ("yesterday", "TIMESTAMP"), ("1", "FLOAT")])
def test_typed_offset__unreadable_text__raises_value_error(text: str, kind: str) -> None:
    with pytest.raises(ValueError):
        typed_offset(text, kind)


def test_script_task__is_frozen_and_its_mappings_are_read_only(tmp_path: Path) -> None:
    parameters = {"INPUT_PARAMS": "{}"}
    task = ScriptTask(pipeline_id=1, pipeline_code="P", pipeline_run_id=2, task_run_id=3, attempt_id=4,
                      task_code="T", run_date=date(2026, 1, 1), parameters=parameters, input_params={"a": 1},
                      last_offset=None, warehouse=None,  # type: ignore[arg-type]
                      logger=logging.getLogger("x"), project_dir=tmp_path)
    parameters["INPUT_PARAMS"] = "changed"
    assert task.parameters == {"INPUT_PARAMS": "{}"}
    with pytest.raises(TypeError):
        task.parameters["X"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        task.input_params["a"] = 2  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.task_code = "U"  # type: ignore[misc]


def test_script_result__offset_and_variables_are_optional() -> None:
    assert ScriptResult(3) == ScriptResult(row_count=3, offset=None, variables=None)


def test_script_error__has_its_own_exit_code_and_is_not_retried() -> None:
    assert error_specs()["SCRIPT"].exit == 8
    assert ScriptError("x").exit_code == 8 and ScriptError("x").code is None
    assert ScriptError.retryable is False
