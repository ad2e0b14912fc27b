"""What an ingestion script is given and what it gives back: the public API a team's script imports.

    from etlcraft.scripting import ScriptResult, ScriptTask

    def run(task: ScriptTask) -> ScriptResult:
        ...

A script is a module under the project's ingestion_scripts/ folder that defines `run(task)`. etl-craft loads it
as a real module, calls `run` once per attempt and records the returned ScriptResult on the attempt; its offset
is stored if and only if the attempt is recorded SUCCESS, in the same Engine DB transaction. The contract is
described in docs/guides/ingestion-scripts.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from etlcraft.core.errors import ScriptError

if TYPE_CHECKING:
    from etlcraft.config.loader import ProjectConfig

__all__ = ["OffsetValue", "ScriptResult", "ScriptTask", "Warehouse"]

#: The values an offset can take: INTEGER, DECIMAL, TEXT, DATE or TIMESTAMP (a timezone-aware datetime).
OffsetValue = int | Decimal | str | date | datetime

log = logging.getLogger(__name__)


class Warehouse:
    """The project's warehouse (the Warehouse section of craft-connector.yml), opened on first use.

    `connection()` returns a DB-API connection, the same one on every call of one attempt:
    a `duckdb.DuckDBPyConnection` for a DuckDB warehouse, a `psycopg.Connection` (psycopg 3) for PostgreSQL.
    Its session time zone is UTC. Everything done through it is one transaction, which etl-craft commits when
    `run` returns a valid result and rolls back when `run` raises or returns an invalid one; the connection is
    closed then. Do not commit, roll back or close it yourself.
    """

    def __init__(self, config: ProjectConfig) -> None:
        self._config = config
        self._connection: Any = None

    @property
    def dialect(self) -> str:
        """duckdb or postgresql."""
        return self._config.warehouse.dialect

    def connection(self) -> Any:
        """The open connection, opened now if this is the first call."""
        if self._connection is None:
            self._connection = self._open_duckdb() if self.dialect == "duckdb" else self._open_postgresql()
        return self._connection

    def _open_duckdb(self) -> Any:
        import duckdb

        from etlcraft.warehouse.connection import timeout

        path = self._config.warehouse.path
        wait = timeout(self._config.warehouse, "busy")
        deadline, pause = time.monotonic() + wait, 0.05
        while True:
            try:
                conn = duckdb.connect(str(path))
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    busy = ScriptError(
                        f"the DuckDB warehouse {path} is locked by another process after waiting {wait} s "
                        f"(Warehouse.busy_timeout_seconds) ({exc}); a DuckDB file has one writer at a time: make "
                        "the tasks that write it depend on each other, raise Warehouse.busy_timeout_seconds, or use "
                        "a PostgreSQL warehouse"
                    )
                    busy.retryable = True  # unlike a refused script, a busy file may be free on the next attempt
                    raise busy from exc
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
        conn.execute("SET TimeZone = 'UTC'")
        conn.begin()
        return conn

    def _open_postgresql(self) -> Any:
        import psycopg

        from etlcraft.core.errors import WarehouseError
        from etlcraft.warehouse.connection import connect_failure, timeout

        warehouse = self._config.warehouse
        password = self._config.secret_value(warehouse)
        extra: dict[str, Any] = {} if password is None else {"password": password}
        try:
            # No statement timeout from etl-craft: the script's statements are the task's (TASK_TIMEOUT_SECONDS).
            conn = psycopg.connect(warehouse.url, connect_timeout=timeout(warehouse, "connect"), **extra)
        except psycopg.OperationalError as exc:
            raise WarehouseError(connect_failure(warehouse, exc)) from exc
        conn.execute("SET TIME ZONE 'UTC'")
        conn.commit()  # the setting holds for the session, whatever the script's transaction does
        return conn

    def _end(self, commit: bool) -> None:
        """Commit (or roll back) and close the connection, if one was opened. For etl-craft, not scripts."""
        conn, self._connection = self._connection, None
        if conn is None:
            return
        try:
            if commit:
                conn.commit()
            else:
                self._rollback(conn)
        finally:
            try:
                conn.close()
            except Exception:  # closing must not hide the outcome
                log.warning("closing the %s warehouse connection failed", self.dialect, exc_info=True)

    def _rollback(self, conn: Any) -> None:
        try:
            conn.rollback()
        except Exception:  # DuckDB refuses a rollback with no open transaction: nothing to undo
            log.debug("rollback of the %s warehouse connection failed", self.dialect, exc_info=True)


@dataclass(frozen=True)
class ScriptTask:
    """One attempt of an ingestion task, as its script sees it.

    - pipeline_id, pipeline_run_id, task_run_id, attempt_id: the identities of the pipeline, its run, the task's
      run and this attempt (a retry keeps task_run_id and gets a new attempt_id).
    - task_code, pipeline_code: the codes in CFG_TASKS and CFG_PIPELINES.
    - run_date: the run's date.
    - parameters: the task's active CFG_TASK_PARAMETERS, name to text value.
    - input_params: the task's INPUT_PARAMS parameter, parsed ({} without one).
    - last_offset: the offset the task's last SUCCESS attempt stored, typed (int, Decimal, str, date, or a
      datetime in UTC), or None before the first one.
    - warehouse: the project's warehouse; `task.warehouse.connection()` opens it.
    - logger: a logger whose records go to the attempt's log.
    - project_dir: the project's folder (absolute), for files the script reads.
    """

    pipeline_id: int
    pipeline_code: str
    pipeline_run_id: int
    task_run_id: int
    attempt_id: int
    task_code: str
    run_date: date
    parameters: Mapping[str, str]
    input_params: Mapping[str, Any]
    last_offset: OffsetValue | None
    warehouse: Warehouse = field(repr=False)
    logger: logging.Logger = field(repr=False)
    project_dir: Path = field(repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))
        object.__setattr__(self, "input_params", MappingProxyType(dict(self.input_params)))


@dataclass(frozen=True)
class ScriptResult:
    """What `run` returns.

    - row_count: the rows the script wrote (a whole number, 0 or more); recorded as the attempt's source count
      and rows written, so a HAS_DATA dependency is met when it is above 0.
    - offset: where the next attempt should start (int, Decimal, str, date or timezone-aware datetime), or None
      to keep the stored one. Stored if and only if the attempt is recorded SUCCESS.
    - variables: names (text) to values the script wants on record; written to the attempt's log.
    """

    row_count: int
    offset: OffsetValue | None = None
    variables: Mapping[str, Any] | None = None


# ------------------------------------------------------------------------------------- offsets as stored


def stored_offset(value: object) -> tuple[str, str]:
    """The text and type (INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP) the Engine DB stores for an offset value.
    ValueError says what is wrong with the value and what to do; the caller names the script."""
    nanosecond = getattr(value, "nanosecond", 0)
    if isinstance(nanosecond, int) and nanosecond:
        raise ValueError(
            f"offset {value} has nanoseconds, which the offset store can't keep; round it to microseconds"
        )
    if isinstance(value, bool):
        raise ValueError(f"offset {value!r} is a bool; expected {_EXPECTED}; return a number or a text instead")
    if isinstance(value, int):
        return str(int(value)), "INTEGER"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"offset Decimal({str(value)!r}) is not a finite number; expected {_EXPECTED}")
        return format(value, "f"), "DECIMAL"
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"offset {value[:80]!r} contains a NUL character, which the offset store can't keep; "
                             "remove it")
        return value, "TEXT"
    if isinstance(value, datetime):
        return _timestamp_text(value), "TIMESTAMP"
    if isinstance(value, date):
        return value.isoformat(), "DATE"
    if isinstance(value, float):
        raise ValueError(f"offset {value!r} is a float, which can't be stored exactly; expected {_EXPECTED}; "
                         "return a Decimal (Decimal(str(value))) or an int")
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise ValueError(f"offset {shown} is a {_type_name(value)}; expected {_EXPECTED}; convert it to one of those")


_EXPECTED = "an int, a Decimal, a str, a date, a timezone-aware datetime or None"


def _type_name(value: object) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _timestamp_text(value: datetime) -> str:
    """ISO 8601 in UTC with six fractional digits: 2026-01-01T00:00:00.123456+00:00."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"offset {value} is a datetime without a time zone, so the instant it names is unknown; expected a "
            "timezone-aware datetime; attach the source's zone (for UTC: value.replace(tzinfo=timezone.utc))"
        )
    plain = datetime(value.year, value.month, value.day, value.hour, value.minute, value.second,
                     value.microsecond, tzinfo=value.tzinfo, fold=value.fold)  # a subclass (pandas) made plain
    return plain.astimezone(UTC).isoformat(timespec="microseconds")


def typed_offset(text: str, kind: str) -> OffsetValue:
    """The value of a stored offset (its text and type), as `last_offset` gives it to the script.
    ValueError when the stored text does not read as its type."""
    if kind == "INTEGER":
        return int(text)
    if kind == "DECIMAL":
        try:
            return Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{text!r} is not a decimal number") from None
    if kind == "TEXT":
        return text
    if kind == "DATE":
        return date.fromisoformat(text)
    if kind == "TIMESTAMP":
        value = datetime.fromisoformat(text)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    raise ValueError(f"the offset type {kind!r} is not one of INTEGER, DECIMAL, TEXT, DATE, TIMESTAMP")
