"""Column-level lineage of a SQL task: for each column its SELECT returns, the warehouse columns it comes from.

sqlglot's lineage walks the SELECT (CTEs, subqueries, joins, * expanded over tables whose columns are known) against
the warehouse schema (etlcraft.warehouse.catalog.Catalog). A source is shown only when sqlglot traced it to a column
of a known table that has that column; anything else (a table the schema does not know, a column its table lacks,
an unqualified column no table can be shown to hold, a * over unknown columns) is reported as unresolved with the
reason, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.lineage import Node, lineage
from sqlglot.schema import MappingSchema

from etlcraft.core.sqltext import SQLGLOT_DIALECTS
from etlcraft.warehouse.catalog import Catalog


@dataclass(frozen=True)
class ColumnSource:
    table: str  # the catalog's key of the table: main.orders, public.orders, db.main.orders
    column: str


@dataclass(frozen=True)
class ColumnLineage:
    column: str  # the output column's name
    sources: tuple[ColumnSource, ...]  # resolved sources; empty for a value computed from constants alone
    unresolved: tuple[str, ...] = ()  # why a part of the column could not be traced, one reason each

    @property
    def resolved(self) -> bool:
        return not self.unresolved


@dataclass(frozen=True)
class TaskLineage:
    columns: tuple[ColumnLineage, ...] = ()
    error: str | None = None  # the SELECT could not be read; no column is shown

    @property
    def reads(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.table for c in self.columns for s in c.sources))


def task_lineage(select: str, catalog: Catalog, schema: MappingSchema | None = None) -> TaskLineage:
    """The lineage of every output column of `select` against `catalog` (see the module's docstring). `schema`:
    catalog.schema() made once for many calls (it costs more than the lineage on a large warehouse)."""
    dialect = SQLGLOT_DIALECTS[catalog.dialect]
    try:
        tree = sqlglot.parse_one(select, read=dialect)
        nodes = lineage(None, tree, schema=schema if schema is not None else catalog.schema(), dialect=dialect,
                        allow_partial_qualification=True, trim_selects=False)
    except (SqlglotError, KeyError, ValueError) as exc:
        return TaskLineage(error=f"sqlglot could not trace the SELECT: {str(exc).splitlines()[0]}")
    assert isinstance(nodes, dict)
    return TaskLineage(tuple(_column(name, node, catalog) for name, node in nodes.items()))


def _column(name: str, node: Node, catalog: Catalog) -> ColumnLineage:
    sources: list[ColumnSource] = []
    reasons: list[str] = []
    for leaf in node.walk():
        if leaf.downstream:
            continue
        found = _leaf(leaf, catalog)
        if isinstance(found, ColumnSource):
            sources.append(found)
        elif found:
            reasons.append(found)
    return ColumnLineage(name, tuple(dict.fromkeys(sources)), tuple(dict.fromkeys(reasons)))


def _leaf(leaf: Node, catalog: Catalog) -> ColumnSource | str | None:
    """A traced source, the reason it is not one, or None for a constant (no source at all)."""
    column = leaf.name.rsplit(".", 1)[-1]
    if isinstance(leaf.expression, exp.Placeholder):
        return f"no table of its query can be shown to hold column {column}"
    if not isinstance(leaf.expression, exp.Table):
        return None
    source = leaf.expression
    if not isinstance(source.this, exp.Identifier):
        return f"it comes from the table function {source.this.sql()}, whose columns etl-craft cannot know"
    key = catalog.key((source.catalog, source.db, source.name))
    columns = catalog.columns(key)
    if columns is None:
        return f"table {catalog.show(key)} is not in the warehouse schema"
    if column == "*":
        return f"a * over a table whose columns are unknown, next to {catalog.show(key)}"
    match = next((c for c in columns if c.lower() == column.lower()), None)
    if match is None:
        return f"table {catalog.show(key)} has no column {column}"
    return ColumnSource(key, match)
