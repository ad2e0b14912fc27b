"""Warehouse fault injection for every action on DuckDB and PostgreSQL: a SELECT that fails at run time on a
chosen row, a write that the warehouse refuses on a chosen row after an earlier statement of the attempt already
changed the target, and a failure after the action's last statement (after the DROP or TRUNCATE, the INSERT and the
UPDATE) and before the commit. Every time the target keeps its previous rows, definition and properties (a comment
and an index on both warehouses; on PostgreSQL also its identity, grants and a dependent view)."""

from __future__ import annotations

from typing import Any

import pytest

from etlcraft.core.errors import EtlCraftError, InjectedFaultError
from etlcraft.core.faults import VARIABLE
from etlcraft.handlers.sql.task import FAULT_BEFORE_COMMIT
from tests.py.warehouse.conftest import Wh

GOOD = "SELECT id, name FROM {s}.src"
#: Fails at run time on the row with id 3 only: the cast is not constant, so no planner folds it away.
FAILS_ON_ROW_3 = ("SELECT CAST(CASE WHEN id = 3 THEN 'x' ELSE CAST(id AS VARCHAR) END AS INTEGER) AS id, name "
                  "FROM {s}.src")
CHANGED = "SELECT id + 10 AS id, name FROM {s}.src UNION ALL SELECT id, 'changed' FROM {s}.src"
ACTIONS = ["CREATE_TABLE", "SETUP_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE",
           "DELETE_ROWS"]


def _params(action: str) -> dict[str, str]:
    return {"MERGE_KEY": "id"} if action in ("SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS") else {}


def _prepare(wh: Wh, action: str) -> None:
    """The target as the action (or, for DELETE_ROWS, an SCD1 merge) wrote it, with properties added by hand."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    first = "SCD1_MERGE" if action == "DELETE_ROWS" else action
    wh.run(first, GOOD, **_params(action))
    if action == "SETUP_TABLE":
        wh.run("APPEND_TABLE", GOOD)
    _add_properties(wh, action)


def _add_properties(wh: Wh, action: str) -> None:
    wh.execute("COMMENT ON TABLE {s}.target IS 'precious'", "CREATE INDEX ix_target_id ON {s}.target (id)")
    if wh.dialect == "postgresql":
        wh.execute("GRANT SELECT ON {s}.target TO PUBLIC")
    if wh.dialect == "postgresql" and action != "CREATE_TABLE":  # CREATE_TABLE refuses to drop dependent views
        wh.execute("CREATE VIEW {s}.target_view AS SELECT id FROM {s}.target")


def _snapshot(wh: Wh) -> dict[str, Any]:
    rows = sorted(wh.contents(), key=repr)
    if wh.dialect == "postgresql":
        props = wh.query("SELECT c.oid, obj_description(c.oid, 'pg_class'), c.relacl::text, "
                         "(SELECT array_agg(indexrelid::regclass::text) FROM pg_index WHERE indrelid = c.oid), "
                         "(SELECT count(*) FROM pg_views WHERE viewname = 'target_view') "
                         "FROM pg_class c WHERE c.oid = '{s}.target'::regclass")
    else:
        props = wh.query("SELECT t.comment, (SELECT list(index_name) FROM duckdb_indexes() i "
                         "WHERE i.schema_name = '{s}' AND i.table_name = 'target') "
                         "FROM duckdb_tables() t WHERE t.schema_name = '{s}' AND t.table_name = 'target'")
    return {"rows": rows, "columns": wh.columns(), "properties": props}


@pytest.mark.parametrize("action", [a for a in ACTIONS if a != "SETUP_TABLE"])
def test_b37_select_failing_on_a_row__target_keeps_rows_definition_and_properties(wh: Wh, action: str) -> None:
    _prepare(wh, action)
    before = _snapshot(wh)
    with pytest.raises(EtlCraftError) as failed:
        wh.run(action, FAILS_ON_ROW_3, SCHEMA_EVOLUTION="Y", **_params(action))
    assert "the warehouse rolled back every change of this attempt" in str(failed.value)
    assert "the SELECT of sql_files/task.sql failed" in str(failed.value)
    assert _snapshot(wh) == before


#: Rows 1 to 3 fit the target's amount DECIMAL(4,2); the new key 9 does not, so the warehouse refuses that row
#: when it is written into the target (numeric overflow), after the statements before it changed the target.
OVERFLOWS_ON_KEY_9 = ("SELECT id, name || '!' AS name, CAST(amount AS DECIMAL(10,2)) AS amount FROM {s}.src "
                      "UNION ALL SELECT 9, 'new', CAST(123.45 AS DECIMAL(10,2))")


@pytest.mark.parametrize("action", ["OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE"])
def test_b37_write_refused_on_a_row_after_the_target_changed__target_keeps_rows_definition_and_properties(
        wh: Wh, action: str) -> None:
    """The failing INSERT comes after the TRUNCATE (OVERWRITE_TABLE), the DELETE of the task run's earlier rows
    (APPEND_TABLE, a retry of the same task run) or the UPDATE (the merges, whose hash leaves amount out). CREATE_TABLE
    writes the staged rows into a table of their own types, and DELETE_ROWS and SETUP_TABLE write in one statement:
    the failure after the last statement covers them."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), amount DECIMAL(4,2))",
               "INSERT INTO {s}.src VALUES (1, 'a', 1.5), (2, 'b', NULL), (3, 'c', 99.99)")
    merge = {"MERGE_KEY": "id", "MERGE_COMPARE_COLUMNS": "name"} if "MERGE" in action else {}
    wh.run(action, "SELECT id, name, amount FROM {s}.src", task_run_id=500, **merge)
    _add_properties(wh, action)
    before = _snapshot(wh)
    with pytest.raises(EtlCraftError) as failed:
        wh.run(action, OVERFLOWS_ON_KEY_9, task_run_id=500, **merge)
    assert f"{action} of task pipe.task into {wh.schema}.target: writing {wh.schema}.target failed in the " \
           f"{wh.dialect} warehouse: " in str(failed.value)
    assert f"so {wh.schema}.target is as it was" in str(failed.value)
    assert _snapshot(wh) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_b37_failure_after_the_last_statement__target_keeps_rows_definition_and_properties(
        wh: Wh, action: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(wh, action)
    before = _snapshot(wh)
    monkeypatch.setenv(VARIABLE, FAULT_BEFORE_COMMIT)
    changed = CHANGED if action != "SETUP_TABLE" else "SELECT id, name, 1 AS extra FROM {s}.src"
    with pytest.raises(InjectedFaultError):
        wh.run(action, changed, SCHEMA_EVOLUTION="Y", **_params(action))
    assert _snapshot(wh) == before
    monkeypatch.delenv(VARIABLE)
    written = wh.run(action, changed, SCHEMA_EVOLUTION="Y", **_params(action))
    assert written.counts.rows_written or action == "SETUP_TABLE", "the same attempt without the fault writes"
