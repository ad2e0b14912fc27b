"""A reference implementation of the change hash, version 2, in Python: the digests the warehouses must give.

Each value comes with its type: "tstz" (aware datetime), "ts" (naive datetime), "date", "time", "decimal:<scale>",
"bool", "int" or "text". Values are listed in hashing order (the compare columns' order).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, time
from decimal import Decimal


def canonical(value: object, kind: str) -> str:
    if kind == "tstz":
        assert isinstance(value, datetime) and value.tzinfo is not None
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if kind == "ts":
        assert isinstance(value, datetime) and value.tzinfo is None
        return value.strftime("%Y-%m-%dT%H:%M:%S.%f")
    if kind == "date":
        assert isinstance(value, date)
        return value.isoformat()
    if kind == "time":
        assert isinstance(value, time)
        return value.strftime("%H:%M:%S.%f")
    if kind.startswith("decimal:"):
        scale = int(kind.split(":")[1])
        return format(Decimal(str(value)).quantize(Decimal(1).scaleb(-scale)), "f")
    if kind == "bool":
        return "true" if value else "false"
    return str(value)


def segment(value: object, kind: str) -> str:
    if value is None:
        return "N"
    text = canonical(value, kind)
    return f"V{len(text)}:{text}"


def digest(*values: tuple[object, str]) -> str:
    return hashlib.md5("".join(segment(v, k) for v, k in values).encode("utf-8")).hexdigest()
