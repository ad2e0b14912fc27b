"""A task's SELECT: exactly one read-only query, and the output names sqlglot can resolve."""

from __future__ import annotations

import pytest

from etlcraft.core.selects import SelectError, engine_managed_columns, read_select, same_table


@pytest.mark.parametrize(("sql", "found"), [
    ("", "holds no SQL statement"),
    ("-- nothing but a comment\n", "holds no SQL statement"),
    ("SELECT 1 AS a;\n\nSELECT 2 AS a", "holds 2 statements (the second starts on line 3)"),
    ("DELETE FROM t", "is a DELETE statement, not a SELECT"),
    ("INSERT INTO t SELECT 1", "is an INSERT statement, not a SELECT"),
    ("UPDATE t SET a = 1", "is an UPDATE statement, not a SELECT"),
    ("CREATE TABLE t AS SELECT 1 AS a", "is a CREATE statement, not a SELECT"),
    ("DROP TABLE t", "is a DROP statement, not a SELECT"),
    ("VALUES (1)", "is a VALUES statement, not a SELECT"),
    ("EXPLAIN SELECT 1", "is an EXPLAIN statement, not a SELECT"),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT a FROM d", "changes data: it holds a DELETE inside the SELECT"),
    ("SELECT a INTO t2 FROM t", "creates a table (SELECT ... INTO)"),
    ("SELECT a FROM t FOR UPDATE", "locks rows (FOR UPDATE or FOR SHARE)"),
    ("SELECT 'unclosed", "cannot be read: a quote or comment is not closed"),
    ("SELECT a FROM WHERE", "is not valid postgresql SQL at line 1, column 19: Expected table name but got 'WHERE'"),
])
def test_what_is_not_one_read_only_select(sql: str, found: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SelectError) as caught:
        read_select(sql, "postgresql")
    assert caught.value.found == found
    assert capsys.readouterr().err == ""  # sqlglot's fallback warnings are not printed


@pytest.mark.parametrize("sql", [
    "SELECT 1 AS a;", "SELECT 1 AS a; -- done", "SELECT 1 AS a -- done", "(SELECT 1 AS a)",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x", "SELECT 1 AS a UNION ALL SELECT 2 ORDER BY 1",
    "/* header */ SELECT 1 AS a /* trailer */;\n",
])
def test_one_select_with_trailing_semicolon_and_comments_is_accepted(sql: str) -> None:
    shape = read_select(sql, "duckdb")
    assert [c.name for c in shape.columns] == ["a"] and shape.resolved
    assert not shape.text.rstrip().endswith(";")


def test_output_columns_names_quoting_and_positions() -> None:
    shape = read_select('SELECT id, t.amount, x + 1 AS "Total", COUNT(*), "odd name" FROM t', "duckdb")
    assert [(c.position, c.name, c.quoted) for c in shape.columns] == [
        (1, "id", False), (2, "amount", False), (3, "Total", True), (4, None, False), (5, "odd name", True)]
    assert shape.columns[3].expression == "COUNT(*)"


def test_stars_are_resolved_through_subqueries_and_ctes_but_not_tables() -> None:
    resolved = read_select("WITH c AS (SELECT 1 AS a, 2 AS b) SELECT * FROM (SELECT c.* FROM c) s", "duckdb")
    assert ([c.name for c in resolved.columns], resolved.star_tables, resolved.resolved) == (["a", "b"], (), True)
    tables = read_select("SELECT o.*, c.name FROM main.orders o JOIN crm.Customers c ON c.id = o.cid", "duckdb")
    assert ([c.name for c in tables.columns], tables.star_tables, tables.resolved) == (
        ["name"], ("main.orders",), False)
    both = read_select("SELECT * FROM a JOIN b.c ON true", "duckdb")
    assert both.star_tables == ("a", "b.c")
    function = read_select("SELECT * FROM read_csv('x.csv')", "duckdb")
    assert (function.star_tables, function.resolved) == ((), False)


def test_same_table_uses_the_default_schema_and_ignores_case() -> None:
    assert same_table("orders", "main.orders", "duckdb")
    assert same_table("MAIN.Orders", "main.orders", "duckdb")
    assert same_table("orders", "public.orders", "postgresql")
    assert not same_table("orders", "staging.orders", "duckdb")
    assert same_table("db.main.orders", "main.orders", "duckdb")


def test_engine_managed_columns_depend_on_the_action() -> None:
    assert "ROW_ID" in engine_managed_columns("OVERWRITE_TABLE")
    assert "VALID_FROM" not in engine_managed_columns("OVERWRITE_TABLE")
    assert {"VALID_FROM", "VALID_TO"} <= set(engine_managed_columns("SCD2_MERGE"))
