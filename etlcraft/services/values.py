"""Engine DB values as Python values, and read views as JSON, the same way in every service.

SQLite hands times back as ISO text with their offset, PostgreSQL as datetimes in the session's zone; every view
holds aware UTC datetimes, and every JSON document writes them as ISO 8601 in UTC."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime
from typing import Any


def as_time(value: Any) -> datetime | None:
    """A timestamp column as an aware UTC datetime, None for NULL (a naive value is taken as UTC)."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    assert isinstance(moment, datetime)
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def required_time(value: Any) -> datetime:
    """A NOT NULL timestamp column as an aware UTC datetime."""
    moment = as_time(value)
    assert moment is not None
    return moment


def as_date(value: Any) -> date:
    """A DATE column (SQLite: ISO text) as a date."""
    if isinstance(value, datetime):
        return value.date()
    return date.fromisoformat(value) if isinstance(value, str) else value


def plain(value: Any) -> Any:
    """A view's value as JSON: mappings and sequences item by item, times ISO 8601 in UTC, dates ISO 8601."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def document(schema: str, view: Any) -> dict[str, Any]:
    """A frozen view as a JSON document: {"schema": schema, ...its fields}."""
    return {"schema": schema, **plain(dataclasses.asdict(view))}
