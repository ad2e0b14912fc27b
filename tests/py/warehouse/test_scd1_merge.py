"""SCD1_MERGE on DuckDB and PostgreSQL: the full target contents after each run (first load, unchanged resend,
changed rows, NULLs in non-key columns, deleted and revived keys, composite keys), not only counts."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from etlcraft.handlers.context import Counts
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import PIPELINE_ID, PIPELINE_RUN_ID, Wh
from tests.py.warehouse.reference import digest

D = Decimal
SELECT = "SELECT id, name, amount FROM {s}.src"


def row(id_: int, name: str | None, amount: Decimal | None, *, row_id: int, trid: int, created: datetime,
        updated: datetime | None = None, deleted: str = "N") -> dict[str, Any]:
    """A row of an SCD1 target created by SCD1_MERGE from (id, name, amount), keyed on id."""
    return {"id": id_, "name": name, "amount": amount, "pipeline_id": PIPELINE_ID,
            "pipeline_run_id": PIPELINE_RUN_ID, "task_run_id": trid, "row_id": row_id,
            "hash_key": digest((amount, "decimal:2"), (name, "text")), "create_date": created,
            "created_by": TEST_ACTOR.name, "update_date": updated or created, "updated_by": TEST_ACTOR.name,
            "delete_flag": deleted}


def counts(source: int, insert: int = 0, update: int = 0, delete: int = 0, target: int = 0,
           duplicate: int = 0) -> Counts:
    return Counts(source=source, insert=insert, update=update, delete=delete, duplicate=duplicate,
                  rows_written=insert + update + delete, target=target)


def test_scd1_merge__each_kind_of_change__target_holds_exactly_the_expected_rows(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), amount DECIMAL(12,2))",
               "INSERT INTO {s}.src VALUES (1, 'ann', 10.5), (2, 'bob', NULL), (3, '', 3)")
    t1, _t2, t3 = wh.at(1), wh.at(2), wh.at(3)

    first = wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    loaded = [row(1, "ann", D("10.50"), row_id=1, trid=101, created=t1),
              row(2, "bob", None, row_id=2, trid=101, created=t1),
              row(3, "", D("3.00"), row_id=3, trid=101, created=t1)]
    assert wh.contents(order="id") == loaded
    assert first.counts == counts(3, insert=3, target=3)

    resent = wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="id") == loaded, "an unchanged resend changes nothing, not even the stamps"
    assert resent.counts == counts(3, target=3)

    wh.execute("UPDATE {s}.src SET amount = 7 WHERE id = 2", "UPDATE {s}.src SET name = NULL WHERE id = 3",
               "INSERT INTO {s}.src VALUES (5, 'eve', 1), (4, 'dan', 0)", "DELETE FROM {s}.src WHERE id = 1")
    changed = wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="id") == [
        loaded[0],
        row(2, "bob", D("7.00"), row_id=2, trid=103, created=t1, updated=t3),
        row(3, None, D("3.00"), row_id=3, trid=103, created=t1, updated=t3),
        row(4, "dan", D("0.00"), row_id=4, trid=103, created=t3),
        row(5, "eve", D("1.00"), row_id=5, trid=103, created=t3),
    ], ("NULL and '' are different values; new keys get the next ROW_IDs in key order; a key the SELECT no longer "
        "returns keeps its row as it was (a merge never deletes: DELETE_ROWS does)")
    assert changed.counts == counts(4, insert=2, update=2, target=5)


def test_b17_scd1_merge__soft_deleted_keys_come_back(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), amount DECIMAL(12,2))",
               "INSERT INTO {s}.src VALUES (1, 'ann', 1), (2, 'bob', 2)")
    wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    wh.run("DELETE_ROWS", "SELECT id FROM {s}.src", MERGE_KEY="id")
    t1, _t2, t3, t4 = (wh.at(n) for n in range(1, 5))
    assert [r["delete_flag"] for r in wh.contents(order="id")] == ["Y", "Y"]

    wh.execute("UPDATE {s}.src SET name = 'bobby' WHERE id = 2")
    revived = wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="id") == [
        row(1, "ann", D("1.00"), row_id=1, trid=103, created=t1, updated=t3),
        row(2, "bobby", D("2.00"), row_id=2, trid=103, created=t1, updated=t3),
    ], "an unchanged and a changed key both come back, DELETE_FLAG cleared"
    assert revived.counts == counts(2, update=2, target=2)
    again = wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id", at=t4)
    assert again.counts.rows_written == 0


def keyed(region: str, id_: int, qty: int | None, *, row_id: int, trid: int, created: datetime,
          updated: datetime | None = None) -> dict[str, Any]:
    """A row of an SCD1 target created by SCD1_MERGE from (region, id, qty), keyed on region and id."""
    return {"region": region, "id": id_, "qty": qty, "pipeline_id": PIPELINE_ID, "pipeline_run_id": PIPELINE_RUN_ID,
            "task_run_id": trid, "row_id": row_id, "hash_key": digest((qty, "int")), "create_date": created,
            "created_by": TEST_ACTOR.name, "update_date": updated or created, "updated_by": TEST_ACTOR.name,
            "delete_flag": "N"}


def test_scd1_merge__composite_key__rows_match_on_every_key_column(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (region VARCHAR(8), id INTEGER, qty INTEGER)",
               "INSERT INTO {s}.src VALUES ('eu', 1, 10), ('us', 1, 20), ('eu', 2, NULL)")
    select = "SELECT region, id, qty FROM {s}.src"
    t1, t2 = wh.at(1), wh.at(2)
    wh.run("SCD1_MERGE", select, MERGE_KEY="region, id")
    loaded = [keyed("eu", 1, 10, row_id=1, trid=101, created=t1), keyed("eu", 2, None, row_id=2, trid=101, created=t1),
              keyed("us", 1, 20, row_id=3, trid=101, created=t1)]
    assert wh.contents(order="region, id") == loaded, "ROW_IDs follow the key order, every key column"
    wh.execute("UPDATE {s}.src SET qty = 21 WHERE region = 'us' AND id = 1", "INSERT INTO {s}.src VALUES ('us', 2, 5)")
    result = wh.run("SCD1_MERGE", select, MERGE_KEY="region, id")
    assert wh.contents(order="region, id") == [
        loaded[0], loaded[1], keyed("us", 1, 21, row_id=3, trid=102, created=t1, updated=t2),
        keyed("us", 2, 5, row_id=4, trid=102, created=t2),
    ], "('us', 1) changed and ('eu', 1), which shares its id, did not; ('us', 2) is new although ('eu', 2) exists"
    assert result.counts == counts(4, insert=1, update=1, target=4)


def test_scd1_merge__compare_columns__a_change_elsewhere_is_ignored(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), note VARCHAR(20))",
               "INSERT INTO {s}.src VALUES (1, 'ann', 'x')")
    select = "SELECT id, name, note FROM {s}.src"
    wh.run("SCD1_MERGE", select, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    wh.execute("UPDATE {s}.src SET note = 'y'")
    ignored = wh.run("SCD1_MERGE", select, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    assert ignored.counts.rows_written == 0
    assert [(r["name"], r["note"], r["hash_key"]) for r in wh.contents()] == [("ann", "x", digest(("ann", "text")))]
    wh.execute("UPDATE {s}.src SET name = 'anne'")
    wh.run("SCD1_MERGE", select, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    assert [(r["name"], r["note"]) for r in wh.contents()] == [("anne", "y")], "a changed row is written whole"
