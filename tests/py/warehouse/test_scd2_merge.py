"""SCD2_MERGE on DuckDB and PostgreSQL: every version of every key after each run (first load, unchanged resend,
changed rows, NULLs in non-key columns, deleted and revived keys, composite keys)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from etlcraft.handlers.context import Counts
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import PIPELINE_ID, PIPELINE_RUN_ID, Wh
from tests.py.warehouse.reference import digest

SELECT = "SELECT id, name FROM {s}.src"


def version(id_: int, name: str | None, *, row_id: int, opened: datetime, trid: int, closed: datetime | None = None,
            deleted: str = "N") -> dict[str, Any]:
    """One version of a key in an SCD2 target created by SCD2_MERGE from (id, name). A closed version carries the
    closing attempt's identities and time; an open one its opening attempt's."""
    return {"id": id_, "name": name, "pipeline_id": PIPELINE_ID, "pipeline_run_id": PIPELINE_RUN_ID,
            "task_run_id": trid, "row_id": row_id, "hash_key": digest((name, "text")), "create_date": opened,
            "created_by": TEST_ACTOR.name, "update_date": closed or opened, "updated_by": TEST_ACTOR.name,
            "delete_flag": deleted, "active_flag": "N" if closed else "Y", "valid_from": opened, "valid_to": closed}


def counts(source: int, insert: int = 0, update: int = 0, delete: int = 0, target: int = 0) -> Counts:
    return Counts(source=source, insert=insert, update=update, delete=delete, duplicate=0,
                  rows_written=insert + update + delete, target=target)


def test_scd2_merge__each_kind_of_change__every_version_is_as_expected(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES (1, 'ann'), (2, NULL), (3, '')")
    t1, _, t3 = wh.at(1), wh.at(2), wh.at(3)
    first = wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    loaded = [version(1, "ann", row_id=1, opened=t1, trid=101), version(2, None, row_id=2, opened=t1, trid=101),
              version(3, "", row_id=3, opened=t1, trid=101)]
    assert wh.contents(order="id, row_id") == loaded
    assert first.counts == counts(3, insert=3, target=3)

    resent = wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="id, row_id") == loaded, "an unchanged resend opens no version"
    assert resent.counts == counts(3, target=3)

    wh.execute("UPDATE {s}.src SET name = '' WHERE id = 2", "UPDATE {s}.src SET name = NULL WHERE id = 3",
               "INSERT INTO {s}.src VALUES (4, 'dan')", "DELETE FROM {s}.src WHERE id = 1")
    changed = wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="id, row_id") == [
        loaded[0],
        version(2, None, row_id=2, opened=t1, closed=t3, trid=103), version(2, "", row_id=4, opened=t3, trid=103),
        version(3, "", row_id=3, opened=t1, closed=t3, trid=103), version(3, None, row_id=5, opened=t3, trid=103),
        version(4, "dan", row_id=6, opened=t3, trid=103),
    ], "NULL -> '' and '' -> NULL are changes; a key the SELECT no longer returns keeps its active version"
    assert changed.counts == counts(3, insert=3, update=2, target=6)


def test_b17_scd2_merge__a_soft_deleted_key_comes_back_as_a_new_version(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'ann')")
    t1, t2, t3 = wh.at(1), wh.at(2), wh.at(3)
    wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    wh.run("DELETE_ROWS", SELECT, MERGE_KEY="id")
    deleted = version(1, "ann", row_id=1, opened=t1, trid=102, deleted="Y")
    assert wh.contents() == [{**deleted, "update_date": t2}], "a soft delete flags the active version"

    revived = wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    assert wh.contents(order="row_id") == [
        version(1, "ann", row_id=1, opened=t1, closed=t3, trid=103, deleted="Y"),
        version(1, "ann", row_id=2, opened=t3, trid=103),
    ], "the deleted version is closed and keeps DELETE_FLAG = 'Y'; the new one is live"
    assert revived.counts == counts(1, insert=1, update=1, target=2)


def test_scd2_merge__composite_key__versions_per_key(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (region VARCHAR(8), id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES ('eu', 1, 'a'), ('us', 1, 'a'), ('eu', 2, NULL)")
    select = "SELECT region, id, name FROM {s}.src"
    t1, t2 = wh.at(1), wh.at(2)
    wh.run("SCD2_MERGE", select, MERGE_KEY="region,id")

    def keyed(region: str, id_: int, name: str | None, **kwargs: Any) -> dict[str, Any]:
        return {"region": region, **version(id_, name, **kwargs)}

    loaded = [keyed("eu", 1, "a", row_id=1, opened=t1, trid=101), keyed("eu", 2, None, row_id=2, opened=t1, trid=101),
              keyed("us", 1, "a", row_id=3, opened=t1, trid=101)]
    assert wh.contents(order="row_id") == loaded
    wh.execute("UPDATE {s}.src SET name = 'b' WHERE region = 'us'", "INSERT INTO {s}.src VALUES ('us', 2, NULL)")
    result = wh.run("SCD2_MERGE", select, MERGE_KEY="region,id")
    assert wh.contents(order="row_id") == [
        loaded[0], loaded[1], keyed("us", 1, "a", row_id=3, opened=t1, closed=t2, trid=102),
        keyed("us", 1, "b", row_id=4, opened=t2, trid=102), keyed("us", 2, None, row_id=5, opened=t2, trid=102),
    ], "only ('us', 1) is versioned, not ('eu', 1) which shares its id; ('us', 2) is new although ('eu', 2) exists"
    assert result.counts == counts(4, insert=2, update=1, target=5)
