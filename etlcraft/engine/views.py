"""The AUD_V_ views for people and BI tools, as sql/views.yaml describes them: each view's description and its
columns (name, PostgreSQL type, meaning), in order.

The same file renders the views' comments on PostgreSQL (sql/functions/080_views.sql.j2), the reference page
docs/reference/views.md (scripts/gen_reference_docs.py) and what the view tests expect of the catalog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from etlcraft.paths import read_sql_yaml

_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
#: The spec's types, as PostgreSQL's format_type() spells them (a length in parentheses is kept).
_PG_TYPES = {"BIGINT": "bigint", "INT": "integer", "TEXT": "text", "DATE": "date", "NUMERIC": "numeric",
             "TIMESTAMPTZ": "timestamp with time zone", "VARCHAR": "character varying"}
_TYPE = re.compile(r"^([A-Z]+)(\(\d+\))?$")


class _Table(Protocol):
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ViewColumn:
    name: str
    type: str  # as the docs write it: BIGINT, VARCHAR(128), TIMESTAMPTZ, ...
    description: str

    @property
    def pg_type(self) -> str:
        """The type as PostgreSQL's format_type() reports it, for example character varying(128)."""
        match = _TYPE.match(self.type)
        assert match, self.type
        return _PG_TYPES[match.group(1)] + (match.group(2) or "")


@dataclass(frozen=True)
class View:
    name: str
    description: str
    columns: tuple[ViewColumn, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class Views:
    views: tuple[View, ...]
    requires: Mapping[str, tuple[str, ...]]

    def view(self, name: str) -> View:
        for view in self.views:
            if view.name == name:
                return view
        raise KeyError(name)

    def ready(self, tables: Iterable[_Table]) -> bool:
        """Whether the Engine DB's tables (the live catalog) have every column the views read."""
        columns = {t.name: set(t.columns) for t in tables}
        return all(set(needed) <= columns.get(table, set()) for table, needed in self.requires.items())


def _column(view: str, name: str, spec: Mapping[str, Any]) -> ViewColumn:
    where = f"sql/views.yaml: {view}.{name}"
    if not _NAME.match(name):
        raise ValueError(f"{where}: a column name is upper case letters, digits and _")
    if not isinstance(spec, Mapping) or set(spec) != {"type", "description"}:
        raise ValueError(f"{where}: give exactly a type and a description")
    match = _TYPE.match(str(spec["type"]))
    if not match or match.group(1) not in _PG_TYPES:
        raise ValueError(f"{where}: type {spec['type']!r} is not one of {', '.join(_PG_TYPES)} (VARCHAR(n) too)")
    description = " ".join(str(spec["description"]).split())
    if not description:
        raise ValueError(f"{where}: the description is empty")
    return ViewColumn(name, str(spec["type"]), description)


def _view(name: str, spec: Mapping[str, Any]) -> View:
    if not _NAME.match(name) or not name.startswith("AUD_V_"):
        raise ValueError(f"sql/views.yaml: view {name!r} is not named AUD_V_<NAME> in upper case")
    description = " ".join(str(spec.get("description") or "").split())
    if not description or not spec.get("columns"):
        raise ValueError(f"sql/views.yaml: {name} needs a description and columns")
    columns = tuple(_column(name, column, value) for column, value in spec["columns"].items())
    return View(name, description, columns)


def parse_views(data: Mapping[str, Any]) -> Views:
    """The views of a parsed sql/views.yaml; a ValueError names what is wrong and where."""
    views = tuple(_view(name, spec) for name, spec in (data.get("views") or {}).items())
    if not views:
        raise ValueError("sql/views.yaml lists no view under views:")
    requires = {table: tuple(columns) for table, columns in (data.get("requires") or {}).items()}
    return Views(views, requires)


@cache
def views_spec() -> Views:
    """sql/views.yaml, checked and read once per process."""
    return parse_views(read_sql_yaml("views.yaml"))
