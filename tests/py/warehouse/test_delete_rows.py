"""DELETE_ROWS on DuckDB and PostgreSQL, soft and hard: the full target contents after each run."""

from __future__ import annotations

import pytest

from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.context import Counts
from tests.py.warehouse.conftest import Wh


def _load(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (region VARCHAR(8), id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES ('eu', 1, 'a'), ('eu', 2, 'b'), ('us', 1, 'c')")
    wh.run("SCD1_MERGE", "SELECT region, id, name FROM {s}.src", MERGE_KEY="region,id")


def _state(wh: Wh) -> list[tuple[object, ...]]:
    return [(r["region"], r["id"], r["name"], r["delete_flag"], r["task_run_id"], r["update_date"])
            for r in wh.contents(order="region, id")]


def test_b46_soft_delete_rows__flags_once__a_repeated_delete_changes_nothing(wh: Wh) -> None:
    _load(wh)
    t1, t2 = wh.at(1), wh.at(2)
    first = wh.run("DELETE_ROWS", "SELECT 'eu' AS region, 1 AS id UNION ALL SELECT 'eu', 1 UNION ALL SELECT 'xx', 9",
                   MERGE_KEY="region, id")
    flagged = [("eu", 1, "a", "Y", 102, t2), ("eu", 2, "b", "N", 101, t1), ("us", 1, "c", "N", 101, t1)]
    assert _state(wh) == flagged, "only the key the SELECT returns, in every key column, is flagged"
    assert first.counts == Counts(source=3, insert=0, update=0, delete=1, duplicate=0, rows_written=1, target=3)

    again = wh.run("DELETE_ROWS", "SELECT 'eu' AS region, 1 AS id", MERGE_KEY="region, id")
    assert _state(wh) == flagged, "an already deleted row keeps its stamps"
    assert again.counts.delete == 0 and again.counts.rows_written == 0


def test_hard_delete_rows__removes_the_rows(wh: Wh) -> None:
    _load(wh)
    result = wh.run("DELETE_ROWS", "SELECT region, id FROM {s}.src WHERE name <> 'b'", MERGE_KEY="region,id",
                    DELETE_MODE="hard")
    assert _state(wh) == [("eu", 2, "b", "N", 101, wh.at(1))]
    assert result.counts == Counts(source=2, insert=0, update=0, delete=2, duplicate=0, rows_written=2, target=1)


def test_soft_delete_rows__scd2_target__flags_the_active_version_only(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a')")
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    wh.execute("UPDATE {s}.src SET name = 'b'")
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    wh.run("DELETE_ROWS", "SELECT 1 AS id", MERGE_KEY="id")
    got = [(r["name"], r["active_flag"], r["delete_flag"]) for r in wh.contents(order="row_id")]
    assert got == [("a", "N", "N"), ("b", "Y", "Y")]


def test_delete_rows__missing_target__refused(wh: Wh) -> None:
    with pytest.raises(SqlGuardError, match=r"does not exist; DELETE_ROWS removes rows from an existing table"):
        wh.run("DELETE_ROWS", "SELECT 1 AS id", MERGE_KEY="id")


def test_soft_delete_rows__target_without_delete_flag__refused(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.target (id INTEGER)", "INSERT INTO {s}.target VALUES (1)")
    with pytest.raises(SqlGuardError, match="has no DELETE_FLAG column"):
        wh.run("DELETE_ROWS", "SELECT 1 AS id", MERGE_KEY="id")
    hard = wh.run("DELETE_ROWS", "SELECT 1 AS id", MERGE_KEY="id", DELETE_MODE="hard")
    assert hard.counts.delete == 1 and wh.query("SELECT COUNT(*) FROM {s}.target") == [(0,)]
