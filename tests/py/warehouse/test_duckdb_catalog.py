"""The DuckDB dialect's catalog lookups (columns, relation kind and format, schema existence) read DuckDB's catalog
functions, not its information_schema views (each view binds some forty columns per lookup, and a SQL step makes
five lookups): they must return exactly what the information_schema queries they replaced return, for tables,
views, temporary tables, another attached database, names in another case and names that do not exist."""

from __future__ import annotations

import duckdb
import pytest

from etlcraft.warehouse.dialects import dialect_for
from etlcraft.warehouse.names import TableName, parse_table_name

DUCKDB = dialect_for("duckdb")


def _literal(text: str) -> str:
    return DUCKDB.literal(text)


def _catalog(name: TableName) -> str:
    return _literal(name.catalog) if name.catalog else "current_database()"


def _information_schema_columns(catalog: str, schema: str, table: str) -> str:
    return ("SELECT column_name, data_type FROM information_schema.columns"
            f" WHERE table_catalog = {catalog} AND lower(table_schema) = lower({_literal(schema)})"
            f" AND lower(table_name) = lower({_literal(table)}) ORDER BY ordinal_position")


def _information_schema_relation(name: TableName) -> str:
    return ("SELECT CASE WHEN t.table_type = 'VIEW' THEN 'view' ELSE 'table' END,"
            " CASE WHEN d.type = 'duckdb' THEN 'native' ELSE lower(d.type) END"
            " FROM information_schema.tables t JOIN duckdb_databases() d ON d.database_name = t.table_catalog"
            f" WHERE t.table_catalog = {_catalog(name)} AND lower(t.table_schema) = lower({_literal(name.schema)})"
            f" AND lower(t.table_name) = lower({_literal(name.table)})")


def _information_schema_schema(name: TableName) -> str:
    return (f"SELECT 1 FROM information_schema.schemata WHERE catalog_name = {_catalog(name)}"
            f" AND lower(schema_name) = lower({_literal(name.schema)})")


@pytest.fixture(scope="module")
def conn() -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(":memory:")
    conn.execute("CREATE SCHEMA sales")
    conn.execute('CREATE TABLE sales."Orders" (id BIGINT, amount DECIMAL(10, 2), placed TIMESTAMP WITH TIME ZONE, '
                 "tags VARCHAR[], note VARCHAR)")
    conn.execute("CREATE TABLE main.plain (id INTEGER)")
    conn.execute('CREATE VIEW sales.big_orders AS SELECT id, amount FROM sales."Orders" WHERE amount > 100')
    conn.execute("CREATE TEMP TABLE etl_stage_1 AS SELECT 1 AS id, 'a' AS name, DATE '2026-01-01' AS day")
    conn.execute("ATTACH ':memory:' AS other")
    conn.execute("CREATE SCHEMA other.sales")
    conn.execute("CREATE TABLE other.sales.orders (other_id UUID)")
    return conn


NAMES = ["sales.Orders", "SALES.orders", "sales.big_orders", "main.plain", "plain", "other.sales.orders",
         "sales.missing", "nowhere.orders", "other.main.plain", "missing_db.sales.orders"]


@pytest.mark.parametrize("text", NAMES)
def test_duckdb_catalog__each_lookup__same_rows_as_information_schema(conn: duckdb.DuckDBPyConnection,
                                                                     text: str) -> None:
    name = parse_table_name(text, "duckdb")
    pairs = [
        (DUCKDB.columns_sql(name), _information_schema_columns(_catalog(name), name.schema, name.table)),
        (DUCKDB.relation_sql(name), _information_schema_relation(name)),
        (DUCKDB.schema_exists_sql(name), _information_schema_schema(name)),
    ]
    for ours, reference in pairs:
        assert "information_schema" not in ours, ours
        assert conn.execute(ours).fetchall() == conn.execute(reference).fetchall(), ours


@pytest.mark.parametrize("scratch", ["etl_stage_1", "ETL_STAGE_1", "etl_stage_2"])
def test_duckdb_catalog__scratch_columns__same_rows_as_information_schema(conn: duckdb.DuckDBPyConnection,
                                                                         scratch: str) -> None:
    ours = DUCKDB.scratch_columns_sql(scratch)
    assert "information_schema" not in ours, ours
    assert conn.execute(ours).fetchall() == conn.execute(
        _information_schema_columns("'temp'", "main", scratch)).fetchall()
