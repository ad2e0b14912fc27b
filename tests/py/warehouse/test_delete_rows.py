"""DELETE_ROWS on DuckDB and PostgreSQL, soft and hard: the full target contents after each run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.context import Counts
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import PIPELINE_ID, PIPELINE_RUN_ID, Wh
from tests.py.warehouse.reference import digest


def _load(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (region VARCHAR(8), id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES ('eu', 1, 'a'), ('eu', 2, 'b'), ('us', 1, 'c'), ('us', 2, NULL)")
    wh.run("SCD1_MERGE", "SELECT region, id, name FROM {s}.src", MERGE_KEY="region,id")


def row(region: str, id_: int, name: str | None, *, row_id: int, trid: int = 101, updated: datetime | None = None,
        deleted: str = "N") -> dict[str, Any]:
    """A row of the target _load wrote (run 1, task run 101), as a later DELETE_ROWS left it."""
    created = Wh.at(1)
    return {"region": region, "id": id_, "name": name, "pipeline_id": PIPELINE_ID, "pipeline_run_id": PIPELINE_RUN_ID,
            "task_run_id": trid, "row_id": row_id, "hash_key": digest((name, "text")), "create_date": created,
            "created_by": TEST_ACTOR.name, "update_date": updated or created, "updated_by": TEST_ACTOR.name,
            "delete_flag": deleted}


LOADED = [row("eu", 1, "a", row_id=1), row("eu", 2, "b", row_id=2), row("us", 1, "c", row_id=3),
          row("us", 2, None, row_id=4)]


def test_b46_soft_delete_rows__flags_once__a_repeated_delete_changes_nothing(wh: Wh) -> None:
    _load(wh)
    first = wh.run("DELETE_ROWS", "SELECT 'eu' AS region, 1 AS id UNION ALL SELECT 'eu', 1 UNION ALL SELECT 'xx', 9",
                   MERGE_KEY="region, id")
    flagged = [row("eu", 1, "a", row_id=1, trid=102, updated=wh.at(2), deleted="Y"), *LOADED[1:]]
    assert wh.contents(order="region, id") == flagged, \
        "only the key the SELECT returns, in every key column, is flagged, with the deleting attempt's stamps"
    assert first.counts == Counts(source=3, insert=0, update=0, delete=1, duplicate=0, rows_written=1, target=4)

    again = wh.run("DELETE_ROWS", "SELECT 'eu' AS region, 1 AS id", MERGE_KEY="region, id")
    assert wh.contents(order="region, id") == flagged, "an already deleted row keeps its stamps"
    assert again.counts.delete == 0 and again.counts.rows_written == 0


def test_hard_delete_rows__removes_the_rows(wh: Wh) -> None:
    _load(wh)
    result = wh.run("DELETE_ROWS", "SELECT region, id FROM {s}.src WHERE name <> 'b'", MERGE_KEY="region,id",
                    DELETE_MODE="hard")
    assert wh.contents(order="region, id") == [LOADED[1], LOADED[3]], \
        "('eu', 1) and ('us', 1) are gone; the rows of the other keys are untouched"
    assert result.counts == Counts(source=2, insert=0, update=0, delete=2, duplicate=0, rows_written=2, target=2)


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
