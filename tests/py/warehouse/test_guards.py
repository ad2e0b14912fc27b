"""The guards a SQL task passes before its target is touched, on DuckDB and PostgreSQL: each refusal names the
object, the value, what was expected and the remedy, exits 21 (SQL_GUARD), and leaves the target as it was."""

from __future__ import annotations

from typing import Any

import pytest

from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.sql import staging
from tests.py.warehouse.conftest import Wh

ACTIONS = ["CREATE_TABLE", "SETUP_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE",
           "DELETE_ROWS"]
KEYED = ("SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS")


def _keyed(action: str, key: str = "id") -> dict[str, str]:
    return {"MERGE_KEY": key} if action in KEYED else {}


def _target(wh: Wh) -> list[Any]:
    """The target's columns and rows ([] when it does not exist)."""
    columns = wh.columns()
    return [columns, *sorted(map(repr, wh.query("SELECT * FROM {s}.target")))] if columns else []


def _refused(wh: Wh, action: str, sql: str, match: str, **parameters: str) -> SqlGuardError:
    before = _target(wh)
    with pytest.raises(SqlGuardError, match=match) as refused:
        wh.run(action, sql, **parameters)
    assert refused.value.exit_code == 21
    assert str(refused.value).endswith("(the target was not changed)")
    assert _target(wh) == before
    return refused.value


def _scd1_target(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), amount DECIMAL(12,2))",
               "INSERT INTO {s}.src VALUES (1, 'a', 1), (2, 'b', 2)")
    wh.run("SCD1_MERGE", "SELECT id, name, amount FROM {s}.src", MERGE_KEY="id")


@pytest.mark.parametrize("action", KEYED)
def test_b5_null_merge_keys__refused(wh: Wh, action: str) -> None:
    _scd1_target(wh)
    sql = "SELECT id, name, amount FROM {s}.src UNION ALL SELECT NULL, 'x', 3 UNION ALL SELECT NULL, 'y', 4"
    _refused(wh, action, sql, r"the SELECT returns 2 row\(s\) with a NULL in MERGE_KEY \(id\); a merge needs every "
                              "key column set: filter those rows out or COALESCE the key", MERGE_KEY="id")


@pytest.mark.parametrize("action", ACTIONS)
def test_b12_select_star_over_an_engine_written_table__refused_for_every_action(wh: Wh, action: str) -> None:
    _scd1_target(wh)
    wh.execute("CREATE TABLE {s}.copy AS SELECT * FROM {s}.target")
    error = _refused(wh, action, "SELECT * FROM {s}.copy", r"which etl-craft writes itself; list the columns you "
                                                           "need instead of \\*, or alias them", **_keyed(action))
    assert "PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID, ROW_ID" in str(error).upper()


@pytest.mark.parametrize("action", ACTIONS)
def test_select_returning_a_name_twice__refused_for_every_action(wh: Wh, action: str) -> None:
    """Without the check DuckDB renames the repeat (the target gains a column name_1) and PostgreSQL fails the
    staging with its own error, which is not a guard and is retried."""
    _scd1_target(wh)
    _refused(wh, action, "SELECT s.id, s.name, c.name FROM {s}.src s JOIN {s}.src c ON c.id = s.id",
             r"the SELECT returns name \(2 times\); give each column a name of its own \(for example AS name_2\), or "
             r"list only the columns you need instead of \*", **_keyed(action))
    _refused(wh, action, "SELECT * FROM {s}.src s JOIN {s}.src c ON c.id = s.id",
             r"the SELECT returns id \(2 times\), name \(2 times\), amount \(2 times\);", **_keyed(action))


def test_b12_scd2_validity_columns__refused_by_scd2_and_setup(wh: Wh) -> None:
    _scd1_target(wh)
    for action in ("SCD2_MERGE", "SETUP_TABLE"):
        _refused(wh, action, "SELECT 1 AS id, CURRENT_DATE AS valid_from", "returns valid_from, which etl-craft "
                             "writes itself", **_keyed(action))


@pytest.mark.parametrize("order", ["o DESC", "o ASC"])
def test_b41_ties_in_merge_dedupe_order__refused_with_examples_and_a_count(wh: Wh, order: str) -> None:
    _scd1_target(wh)
    sql = ("SELECT 7 AS id, 'x' AS name, 1 AS o UNION ALL SELECT 7, 'y', 1 UNION ALL SELECT 8, 'x', 1 "
           "UNION ALL SELECT 8, 'z', 1 UNION ALL SELECT 9, 'same', 1 UNION ALL SELECT 9, 'same', 1")
    _refused(wh, "SCD2_MERGE", sql, rf"MERGE_DEDUPE_ORDER \({order}\) leaves ties for 2 key\(s\), for example id=7; "
                                    r"id=8; add a column that breaks the tie", MERGE_KEY="id", MERGE_DEDUPE_ORDER=order)


def test_b41_ties_example_list_is_capped_at_five(wh: Wh) -> None:
    """Seven keys whose two rows tie on MERGE_DEDUPE_ORDER: the tie check counts all seven and shows five."""
    _scd1_target(wh)
    rows = " UNION ALL ".join(f"SELECT {i} AS id, '{c}' AS name, 1 AS o" for i in range(1, 8) for c in "ab")
    _refused(wh, "SCD1_MERGE", rows, r"MERGE_DEDUPE_ORDER \(o DESC\) leaves ties for 7 key\(s\), for example id=1; "
                                     r"id=2; id=3; id=4; id=5; add a column that breaks the tie", MERGE_KEY="id",
             MERGE_DEDUPE_ORDER="o DESC")


def test_repeated_keys_without_dedupe_order__refused_with_five_examples_and_a_count(wh: Wh) -> None:
    _scd1_target(wh)
    rows = " UNION ALL ".join(f"SELECT {i} AS id, '{c}' AS name" for i in range(1, 8) for c in "ab")
    error = _refused(wh, "SCD1_MERGE", rows, "more than once", MERGE_KEY="id")
    assert "the SELECT returns 7 key(s) more than once, for example id=1; id=2; id=3; id=4; id=5; set " \
           "MERGE_DEDUPE_ORDER" in str(error)


def test_merge_dedupe_order__keeps_the_first_row_of_each_key_and_counts_the_rest(wh: Wh) -> None:
    sql = ("SELECT 1 AS id, 'old' AS name, 1 AS version UNION ALL SELECT 1, 'new', 2 UNION ALL SELECT 1, NULL, NULL "
           "UNION ALL SELECT 2, 'same', 1 UNION ALL SELECT 2, 'same', 1")
    result = wh.run("SCD1_MERGE", sql, MERGE_KEY="id", MERGE_DEDUPE_ORDER="version DESC")
    assert [(r["id"], r["name"], r["version"]) for r in wh.contents(order="id")] == [(1, "new", 2), (2, "same", 1)]
    assert result.counts.duplicate == 3 and result.counts.source == 5 and result.counts.insert == 2


@pytest.mark.parametrize("action", ACTIONS)
def test_b44_select_ending_with_a_semicolon_or_a_comment__runs(wh: Wh, action: str) -> None:
    if action == "DELETE_ROWS":
        wh.run("SCD1_MERGE", "SELECT 1 AS id, 'a' AS name", MERGE_KEY="id")
    for ending in (";", "\n-- the last line is a comment", "; -- after the semicolon\n",
                   " -- a comment before the semicolon\n;\n"):
        result = wh.run(action, f"SELECT 1 AS id, 'a' AS name{ending}", **_keyed(action))
        assert result.counts.source in (1, None), ending


@pytest.mark.parametrize("action", ACTIONS)
def test_b45_output_names_that_need_quotes__refused(wh: Wh, action: str) -> None:
    _scd1_target(wh)
    _refused(wh, action, 'SELECT 1 AS id, 2 AS "CustomerId"', 'returns a column named "CustomerId", which needs '
                                                              "quoting; alias it, for example AS customer_id",
             **_keyed(action))
    _refused(wh, action, 'SELECT 1 AS id, 2 AS "order total"', 'a column named "order total"', **_keyed(action))


def test_b45_duckdb_mixed_case_unquoted__refused__upper_case_accepted(wh: Wh) -> None:
    if wh.dialect == "duckdb":
        _refused(wh, "CREATE_TABLE", "SELECT 1 AS CustomerId", '"CustomerId", which needs quoting')
        wh.run("CREATE_TABLE", "SELECT 1 AS CUSTOMER_ID, 2 AS amount")
    else:
        wh.run("CREATE_TABLE", "SELECT 1 AS CustomerId, 2 AS amount")
    assert [c for c, _ in wh.columns()][:2] == ["customer_id" if wh.dialect == "duckdb" else "customerid", "amount"]


def test_floats_among_compare_columns__refused(wh: Wh) -> None:
    _refused(wh, "SCD1_MERGE", "SELECT 1 AS id, CAST(1.5 AS DOUBLE PRECISION) AS amount",
             r"MERGE_COMPARE_COLUMNS \(by default every column but MERGE_KEY\) includes amount \(DOUBLE|double "
             r"precision\): floats have no stable text form; cast to DECIMAL in the SELECT", MERGE_KEY="id")
    result = wh.run("SCD1_MERGE", "SELECT 1 AS id, 'a' AS name, CAST(1.5 AS DOUBLE PRECISION) AS amount",
                    MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    assert result.counts.insert == 1, "a float outside MERGE_COMPARE_COLUMNS is written as it is"


def test_merge_parameters_naming_missing_columns__refused(wh: Wh) -> None:
    _refused(wh, "SCD1_MERGE", "SELECT 1 AS id, 'a' AS name", r"MERGE_KEY names customer_id, which the SELECT does "
                                                              r"not return \(it returns id, name\)",
             MERGE_KEY="customer_id")
    _refused(wh, "SCD1_MERGE", "SELECT 1 AS id, 'a' AS name", "MERGE_DEDUPE_ORDER names updated_at", MERGE_KEY="id",
             MERGE_DEDUPE_ORDER="updated_at DESC")


def test_new_columns_without_schema_evolution__refused(wh: Wh) -> None:
    _scd1_target(wh)
    _refused(wh, "SCD1_MERGE", "SELECT id, name, amount, 'x' AS region FROM {s}.src", "the SELECT returns region, "
             "which .*target does not have; set SCHEMA_EVOLUTION = 'Y'", MERGE_KEY="id")


def test_b34_scratch_tables_of_the_same_name_elsewhere__never_read_or_changed(
        wh: Wh, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "token", lambda: "abc123")
    wh.execute("CREATE TABLE {s}.target (id INTEGER, name VARCHAR(20), task_run_id BIGINT)",
               "INSERT INTO {s}.target VALUES (1, 'kept', 1)")
    for schema in ("{s}", "main" if wh.dialect == "duckdb" else "public"):
        wh.execute(f"CREATE TABLE {schema}.etl_stage_101_1010_abc123 (id INTEGER, name VARCHAR(20), extra INTEGER)",
                   f"INSERT INTO {schema}.etl_stage_101_1010_abc123 VALUES (9, 'decoy', 9)")
    wh.run("OVERWRITE_TABLE", "SELECT 2 AS id, 'new' AS name", SCHEMA_EVOLUTION="Y")
    assert [c for c, _ in wh.columns()] == ["id", "name", "task_run_id"]
    assert wh.query("SELECT id, name FROM {s}.target") == [(2, "new")]
    for schema in ("{s}", "main" if wh.dialect == "duckdb" else "public"):
        assert wh.query(f"SELECT * FROM {schema}.etl_stage_101_1010_abc123") == [(9, "decoy", 9)]
        wh.execute(f"DROP TABLE {schema}.etl_stage_101_1010_abc123")


def test_b43_table_format_different_from_the_target__refused_naming_both(wh: Wh) -> None:
    _scd1_target(wh)
    _refused(wh, "SCD1_MERGE", "SELECT id, name, amount FROM {s}.src", r"target is a native table and the task's "
             "TABLE_FORMAT is iceberg; a task never changes its target's format", MERGE_KEY="id",
             TABLE_FORMAT="iceberg")
    with pytest.raises(SqlGuardError, match=f"TABLE_FORMAT iceberg is not available on {wh.dialect} warehouses"):
        wh.run("CREATE_TABLE", "SELECT 1 AS id", "other", TABLE_FORMAT="iceberg")


def test_target_that_is_a_view__refused(wh: Wh) -> None:
    wh.execute("CREATE VIEW {s}.target AS SELECT 1 AS id")
    with pytest.raises(SqlGuardError, match=r"target is a view; etl-craft writes tables"):
        wh.run("OVERWRITE_TABLE", "SELECT 1 AS id")


@pytest.mark.postgres
def test_create_table__dependent_views__refused_before_the_drop(pg_wh: Wh) -> None:
    """PostgreSQL only: DuckDB binds views when they are read, so a view never blocks a DROP there."""
    wh = pg_wh
    wh.run("CREATE_TABLE", "SELECT 1 AS id")
    wh.execute("CREATE VIEW {s}.v AS SELECT id FROM {s}.target")
    _refused(wh, "CREATE_TABLE", "SELECT 2 AS id", r"views depend on .*target \(.*v\), and CREATE_TABLE replaces "
                                                   "the table, which would drop them: use OVERWRITE_TABLE")


def test_sql_file_that_is_not_one_select__refused(wh: Wh) -> None:
    with pytest.raises(SqlGuardError, match=r"task pipe.task: sql_files/task.sql holds 2 statements"):
        wh.run("CREATE_TABLE", "SELECT 1 AS id; SELECT 2 AS id")
    with pytest.raises(SqlGuardError, match="is a DELETE statement, not a SELECT"):
        wh.run("CREATE_TABLE", "DELETE FROM {s}.x")


def test_tokens__run_values_and_parameters_substituted__literals_and_comments_left_alone(wh: Wh) -> None:
    sql = ("SELECT $$task_run_id AS trid, $$run_date AS run_date, '$$pipeline_id' AS literal, $$MERGE_KEY AS k "
           "-- $$unknown in a comment\n")
    wh.run("SCD1_MERGE", sql, MERGE_KEY="trid")
    got = wh.contents()[0]
    assert (got["trid"], str(got["run_date"]), got["literal"], got["k"]) == (101, "2026-03-01", "$$pipeline_id",
                                                                               "trid")
    with pytest.raises(SqlGuardError, match=r"uses \$\$run_dat on line 1 \(did you mean \$\$run_date\?\)"):
        wh.run("CREATE_TABLE", "SELECT $$run_dat AS d")


def test_invalid_or_missing_parameter__refused(wh: Wh) -> None:
    with pytest.raises(SqlGuardError, match="has no parameter MERGE_KEY"):
        wh.run("SCD1_MERGE", "SELECT 1 AS id")
    with pytest.raises(SqlGuardError, match="parameter SCHEMA_EVOLUTION is 'yes'; expected Y or N"):
        wh.run("APPEND_TABLE", "SELECT 1 AS id", SCHEMA_EVOLUTION="yes")
