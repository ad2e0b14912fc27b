"""Column lineage of a SQL task against the warehouse schema: joins, CTEs, * over known tables, tables a task makes,
and columns that cannot be traced, which are shown unresolved with the reason, never guessed."""

from __future__ import annotations

from etlcraft.catalog_site.lineage import ColumnSource, TaskLineage, task_lineage
from etlcraft.warehouse.catalog import Catalog

SCHEMA = {"main.orders": ("id", "customer_id", "amount", "ordered_at"), "main.customers": ("id", "name", "country")}


def _catalog() -> Catalog:
    return Catalog("duckdb", None, dict(SCHEMA))


def _by_column(lineage: TaskLineage) -> dict[str, tuple[set[tuple[str, str]], tuple[str, ...]]]:
    assert lineage.error is None, lineage.error
    return {c.column: ({(s.table, s.column) for s in c.sources}, c.unresolved) for c in lineage.columns}


def test_lineage__join__each_column_traced_to_its_own_table() -> None:
    found = _by_column(task_lineage(
        "SELECT o.id AS order_id, c.name AS customer, o.amount * 1.2 AS gross FROM orders o "
        "JOIN customers c ON c.id = o.customer_id", _catalog()))
    assert found == {"order_id": ({("main.orders", "id")}, ()), "customer": ({("main.customers", "name")}, ()),
                     "gross": ({("main.orders", "amount")}, ())}


def test_lineage__cte_and_expression__traced_through_the_cte_to_both_tables() -> None:
    found = _by_column(task_lineage(
        "WITH per_customer AS (SELECT customer_id, SUM(amount) AS total FROM orders GROUP BY customer_id) "
        "SELECT c.country, p.total, c.name || ':' || CAST(p.customer_id AS VARCHAR) AS label "
        "FROM per_customer p JOIN customers c ON c.id = p.customer_id", _catalog()))
    assert found["total"] == ({("main.orders", "amount")}, ())
    assert found["country"] == ({("main.customers", "country")}, ())
    assert found["label"] == ({("main.customers", "name"), ("main.orders", "customer_id")}, ())


def test_lineage__select_star_over_a_known_table__every_column_traced() -> None:
    lineage = task_lineage("SELECT * FROM main.customers", _catalog())
    assert [(c.column, c.sources) for c in lineage.columns] == [
        (name, (ColumnSource("main.customers", name),)) for name in SCHEMA["main.customers"]]


def test_lineage__unknown_table_missing_column_and_ambiguous_name__unresolved_not_guessed() -> None:
    found = _by_column(task_lineage(
        "SELECT o.id AS order_id, o.discount, s.channel, id AS which_id FROM orders o "
        "JOIN customers c ON c.id = o.customer_id JOIN sessions s ON s.order_id = o.id", _catalog()))
    assert found["order_id"] == ({("main.orders", "id")}, ())
    assert found["discount"] == (set(), ("table main.orders has no column discount",))
    assert found["channel"] == (set(), ("table main.sessions is not in the warehouse schema",))
    sources, reasons = found["which_id"]
    assert sources == set() and reasons, "id is in orders and customers alike: no source may be picked"


def test_lineage__star_over_an_unknown_table__one_unresolved_entry() -> None:
    lineage = task_lineage("SELECT * FROM staging.raw_orders", _catalog())
    assert [(c.column, c.sources, bool(c.unresolved)) for c in lineage.columns] == [("*", (), True)]


def test_lineage__constant_column__no_source_and_nothing_unresolved() -> None:
    found = _by_column(task_lineage("SELECT 1 AS one, id FROM customers", _catalog()))
    assert found["one"] == (set(), ())


def test_lineage__not_a_select__error_and_no_columns() -> None:
    lineage = task_lineage("DELETE FROM orders", _catalog())
    assert lineage.error is not None and lineage.columns == ()
