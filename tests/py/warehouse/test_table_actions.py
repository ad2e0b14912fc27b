"""CREATE_TABLE, SETUP_TABLE, OVERWRITE_TABLE and APPEND_TABLE on DuckDB and PostgreSQL: full target contents
and column definitions after each run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.context import Counts
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import PIPELINE_ID, PIPELINE_RUN_ID, Wh

SELECT = "SELECT id, name FROM {s}.src"


def row(id_: int, name: str | None, *, row_id: int, trid: int, at: datetime) -> dict[str, Any]:
    """A row written by CREATE_TABLE, OVERWRITE_TABLE or APPEND_TABLE from (id, name)."""
    return {"id": id_, "name": name, "pipeline_id": PIPELINE_ID, "pipeline_run_id": PIPELINE_RUN_ID,
            "task_run_id": trid, "row_id": row_id, "create_date": at, "created_by": TEST_ACTOR.name,
            "update_date": at, "updated_by": TEST_ACTOR.name}


def counts(source: int | None, insert: int = 0, delete: int = 0, target: int = 0) -> Counts:
    return Counts(source=source, insert=insert, update=0, delete=delete, duplicate=0, rows_written=insert + delete,
                  target=target)


def _src(wh: Wh, *rows: str) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               *(f"INSERT INTO {{s}}.src VALUES {r}" for r in rows))


def test_create_table__first_load_then_replacement__target_is_the_select(wh: Wh) -> None:
    _src(wh, "(1, 'ann'), (2, NULL)")
    first = wh.run("CREATE_TABLE", "SELECT id, name FROM {s}.src ORDER BY id")
    assert wh.contents(order="id") == [row(1, "ann", row_id=1, trid=101, at=wh.at(1)),
                                       row(2, None, row_id=2, trid=101, at=wh.at(1))]
    assert first.counts == counts(2, insert=2, target=2)

    wh.execute("DELETE FROM {s}.src WHERE id = 1", "INSERT INTO {s}.src VALUES (3, '')")
    second = wh.run("CREATE_TABLE", "SELECT id, name FROM {s}.src WHERE id = 3")
    assert wh.contents() == [row(3, "", row_id=1, trid=102, at=wh.at(2))]
    assert second.counts == counts(1, insert=1, delete=2, target=1)


@pytest.mark.parametrize("action", ["CREATE_TABLE", "OVERWRITE_TABLE"])
def test_replacing_actions__first_load_then_unchanged_resend__same_rows_stamped_by_the_new_attempt(
        wh: Wh, action: str) -> None:
    _src(wh, "(1, 'ann'), (2, NULL), (3, '')")
    select = "SELECT id, name FROM {s}.src ORDER BY id"
    first = wh.run(action, select)
    assert wh.contents(order="id") == [row(i, n, row_id=i, trid=101, at=wh.at(1))
                                       for i, n in ((1, "ann"), (2, None), (3, ""))]
    assert first.counts == counts(3, insert=3, target=3)

    resent = wh.run(action, select)
    got = wh.contents(order="id")
    assert [{**r, "row_id": 0} for r in got] == [row(i, n, row_id=0, trid=102, at=wh.at(2))
                                                  for i, n in ((1, "ann"), (2, None), (3, ""))], \
        "the same rows once each, every one stamped by the second attempt: nothing kept, nothing appended"
    assert sorted(r["row_id"] for r in got) == [1, 2, 3], "ROW_IDs start again at 1"
    assert resent.counts == counts(3, insert=3, delete=3, target=3)


def test_create_table__new_shape__replaces_the_definition(wh: Wh) -> None:
    _src(wh, "(1, 'ann')")
    wh.run("CREATE_TABLE", SELECT)
    wh.run("CREATE_TABLE", "SELECT name AS label FROM {s}.src")
    assert [c for c, _ in wh.columns()] == ["label", "pipeline_id", "pipeline_run_id", "task_run_id", "row_id",
                                          "create_date", "created_by", "update_date", "updated_by"]


def test_setup_table__creates_every_engine_column_and_no_rows__idempotent(wh: Wh) -> None:
    _src(wh, "(1, 'ann')")
    first = wh.run("SETUP_TABLE", "SELECT id, name, CAST(1.5 AS DECIMAL(12,2)) AS amount FROM {s}.src;")
    columns = wh.columns()
    assert [c for c, _ in columns] == ["id", "name", "amount", "pipeline_id", "pipeline_run_id", "task_run_id",
                                       "row_id", "hash_key", "create_date", "created_by", "update_date",
                                       "updated_by", "delete_flag", "active_flag", "valid_from", "valid_to"]
    assert wh.contents() == []
    assert first.counts == counts(None, target=0)
    again = wh.run("SETUP_TABLE", "SELECT id, name, CAST(1.5 AS DECIMAL(12,2)) AS amount FROM {s}.src")
    assert wh.columns() == columns and wh.contents() == [] and again.counts.rows_written == 0


def test_setup_table__existing_table__gains_the_missing_engine_columns_and_keeps_its_rows(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.target (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.target VALUES (1, 'x')")
    _src(wh)
    result = wh.run("SETUP_TABLE", SELECT)
    assert len(wh.columns()) == 15
    assert [(r["id"], r["name"], r["task_run_id"], r["hash_key"]) for r in wh.contents()] == [(1, "x", None, None)]
    assert result.counts.rows_written == 0 and result.counts.target == 1
    append = wh.run("APPEND_TABLE", "SELECT 2 AS id, 'y' AS name")
    assert append.counts.insert == 1, "APPEND_TABLE accepts the target now that it has TASK_RUN_ID"


def test_overwrite_table__rows_replaced__table_kept(wh: Wh) -> None:
    _src(wh, "(1, 'ann'), (2, 'bob')")
    wh.run("OVERWRITE_TABLE", SELECT)
    wh.execute("COMMENT ON TABLE {s}.target IS 'kept'")
    wh.execute("UPDATE {s}.src SET name = NULL WHERE id = 2", "INSERT INTO {s}.src VALUES (3, '')")
    second = wh.run("OVERWRITE_TABLE", SELECT)
    got = wh.contents(order="id")
    assert [{**r, "row_id": 0} for r in got] == [row(i, n, row_id=0, trid=102, at=wh.at(2))
                                                  for i, n in ((1, "ann"), (2, None), (3, ""))]
    assert sorted(r["row_id"] for r in got) == [1, 2, 3]
    assert second.counts == counts(3, insert=3, delete=2, target=3)
    assert _comment(wh) == "kept", "OVERWRITE_TABLE keeps the table and its properties"


def _comment(wh: Wh) -> str | None:
    if wh.dialect == "postgresql":
        sql = "SELECT obj_description('{s}.target'::regclass, 'pg_class')"
    else:
        sql = "SELECT comment FROM duckdb_tables() WHERE schema_name = '{s}' AND table_name = 'target'"
    return wh.query(sql)[0][0]


def test_append_table__rows_added_with_continuing_row_ids(wh: Wh) -> None:
    _src(wh, "(1, 'ann')")
    wh.run("APPEND_TABLE", SELECT)
    wh.execute("INSERT INTO {s}.src VALUES (2, NULL)")
    second = wh.run("APPEND_TABLE", "SELECT id, name FROM {s}.src ORDER BY id")
    got = sorted(wh.contents(order="row_id"), key=lambda r: (r["task_run_id"], r["id"]))
    assert got[0] == row(1, "ann", row_id=1, trid=101, at=wh.at(1))
    assert [{**r, "row_id": 0} for r in got[1:]] == [row(1, "ann", row_id=0, trid=102, at=wh.at(2)),
                                                     row(2, None, row_id=0, trid=102, at=wh.at(2))]
    assert sorted(r["row_id"] for r in got[1:]) == [2, 3]
    assert second.counts == counts(2, insert=2, target=3)


def test_w4_append_table__a_retry_of_a_committed_attempt__rows_appear_once(wh: Wh) -> None:
    _src(wh, "(1, 'ann'), (2, 'bob')")
    wh.run("APPEND_TABLE", SELECT, task_run_id=500, attempt_id=1)
    retry = wh.run("APPEND_TABLE", SELECT, task_run_id=500, attempt_id=2)
    assert sorted((r["id"], r["task_run_id"]) for r in wh.contents()) == [(1, 500), (2, 500)]
    assert retry.counts == counts(2, insert=2, delete=2, target=2)
    wh.run("APPEND_TABLE", SELECT, task_run_id=501)
    assert sorted((r["id"], r["task_run_id"]) for r in wh.contents()) == [(1, 500), (1, 501), (2, 500), (2, 501)]


def test_append_table__target_without_task_run_id__refused_naming_the_column_to_add(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.target (id INTEGER)", "INSERT INTO {s}.target VALUES (1)")
    with pytest.raises(SqlGuardError) as refused:
        wh.run("APPEND_TABLE", "SELECT 2 AS id")
    message = str(refused.value)
    assert f"{wh.schema}.target has no TASK_RUN_ID column" in message
    assert f"ALTER TABLE {wh.schema}.target ADD COLUMN TASK_RUN_ID BIGINT" in message and "SETUP_TABLE" in message
    assert refused.value.exit_code == 21
    assert wh.query("SELECT * FROM {s}.target") == [(1,)]
