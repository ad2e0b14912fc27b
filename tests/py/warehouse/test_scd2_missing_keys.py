"""SCD2_MISSING_KEYS on DuckDB and PostgreSQL: the full history of every key after each run of a five-run source
history (new keys, an unchanged resend, a changed value, NULL to value, value to NULL, '' to NULL, a decimal sent
with another scale, two keys deleted, still absent, then returning unchanged and changed), for KEEP, CLOSE and
MARK_DELETED, with the invariants each mode promises checked after every run."""

from __future__ import annotations

import re
from collections import defaultdict
from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest

from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.context import Counts
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import PIPELINE_ID, PIPELINE_RUN_ID, Wh
from tests.py.warehouse.reference import digest
from tests.py.warehouse.test_set_based import _statements

#: Run n reads the rows of source n (id, name, amount); run 1 creates the target.
SOURCES: dict[int, list[tuple[int, str | None, str]]] = {
    # 1: every key new.
    1: [(1, "ann", "1.50"), (2, None, "2.00"), (3, "", "3.00"), (4, "dan", "4.00"), (5, "eve", "5.00"),
        (6, "fay", "6.00"), (7, "gil", "7.00")],
    # 2: an unchanged resend.
    2: [(1, "ann", "1.50"), (2, None, "2.00"), (3, "", "3.00"), (4, "dan", "4.00"), (5, "eve", "5.00"),
        (6, "fay", "6.00"), (7, "gil", "7.00")],
    # 3: 1 changes, 2 NULL -> value, 3 '' -> NULL, 4 value -> NULL, 5 unchanged, 6 and 7 deleted, 8 new; from
    #    run 3 on, the SELECT returns amount as DECIMAL(12,4) (5.0000): the same values at another scale.
    3: [(1, "amy", "1.50"), (2, "bea", "2.00"), (3, None, "3.00"), (4, None, "4.00"), (5, "eve", "5.0000"),
        (8, "hal", "8.00")],
    # 4: the same again: 6 and 7 still absent.
    4: [(1, "amy", "1.50"), (2, "bea", "2.00"), (3, None, "3.00"), (4, None, "4.00"), (5, "eve", "5.0000"),
        (8, "hal", "8.00")],
    # 5: 6 returns unchanged, 7 returns changed.
    5: [(1, "amy", "1.50"), (2, "bea", "2.00"), (3, None, "3.00"), (4, None, "4.00"), (5, "eve", "5.0000"),
        (6, "fay", "6.00"), (7, "gus", "7.00"), (8, "hal", "8.00")],
}
#: Runs 1 and 2 return amount as the source declares it, DECIMAL(10,2), so the target created by run 1 declares it
#: too; runs 3 to 5 return it as DECIMAL(12,4), with trailing zeros that must not open versions.
SELECT = "SELECT id, name, amount FROM {s}.src"
SELECT_SCALED = "SELECT id, name, CAST(amount AS DECIMAL(12,4)) AS amount FROM {s}.src"


def load(wh: Wh, run: int) -> None:
    values = ", ".join(f"({i}, {'NULL' if n is None else repr(n)}, {a})" for i, n, a in SOURCES[run])
    wh.execute("DELETE FROM {s}.src", f"INSERT INTO {{s}}.src VALUES {values}")


def row(id_: int, name: str | None, amount: str, *, row_id: int, opened: int, closed: int | None = None,
        deleted: str = "N", closed_by: int | None = None) -> dict[str, Any]:
    """One version: opened by run `opened` and, when closed, closed by run `closed` (its time and identities);
    `deleted` is its DELETE_FLAG."""
    t_open = Wh.at(opened)
    last = closed if closed is not None else opened
    return {"id": id_, "name": name, "amount": Decimal(amount), "pipeline_id": PIPELINE_ID,
            "pipeline_run_id": PIPELINE_RUN_ID, "task_run_id": 100 + last, "row_id": row_id,
            "hash_key": digest((Decimal(amount), "decimal:2"), (name, "text")), "create_date": t_open,
            "created_by": TEST_ACTOR.name, "update_date": Wh.at(last), "updated_by": TEST_ACTOR.name,
            "delete_flag": deleted, "active_flag": "N" if closed is not None else "Y", "valid_from": t_open,
            "valid_to": Wh.at(closed) if closed is not None else None}


def counts(source: int, target: int, insert: int = 0, update: int = 0, delete: int = 0) -> Counts:
    return Counts(source=source, insert=insert, update=update, delete=delete, duplicate=0,
                  rows_written=insert + update + delete, target=target)


#: After runs 1 and 2 (every mode): one current version per key, opened by run 1.
LOADED = [row(i, n, a, row_id=i, opened=1) for i, n, a in SOURCES[1]]


def after_run_3(mode: str) -> list[dict[str, Any]]:
    """Keys 1 to 4 versioned at run 3 (new versions 8 to 11), 5 unchanged, 8 new (12); 6 and 7 as `mode` says."""
    closed = [row(i, n, a, row_id=i, opened=1, closed=3) for i, n, a in SOURCES[1][:4]]
    opened = [row(i, n, a, row_id=7 + k, opened=3) for k, (i, n, a) in enumerate(SOURCES[3][:4], start=1)]
    rows = [*closed, *opened, LOADED[4], row(8, "hal", "8.00", row_id=12, opened=3)]
    if mode == "KEEP":
        rows += LOADED[5:7]
    elif mode == "CLOSE":
        rows += [row(6, "fay", "6.00", row_id=6, opened=1, closed=3), row(7, "gil", "7.00", row_id=7, opened=1,
                                                                          closed=3)]
    else:
        rows += [row(6, "fay", "6.00", row_id=6, opened=1, closed=3), row(7, "gil", "7.00", row_id=7, opened=1,
                                                                          closed=3),
                 row(6, "fay", "6.00", row_id=13, opened=3, deleted="Y"),
                 row(7, "gil", "7.00", row_id=14, opened=3, deleted="Y")]
    return rows


def after_run_5(mode: str) -> list[dict[str, Any]]:
    """Run 5: 6 returns unchanged and 7 changed."""
    rows = after_run_3(mode)
    if mode == "KEEP":  # 6 was never closed: nothing to do; 7 changed: versioned
        return [*(r for r in rows if r["row_id"] != 7), row(7, "gil", "7.00", row_id=7, opened=1, closed=5),
                row(7, "gus", "7.00", row_id=13, opened=5)]
    if mode == "CLOSE":  # no current version: both open a new one, after a gap from run 3 to run 5
        return [*rows, row(6, "fay", "6.00", row_id=13, opened=5), row(7, "gus", "7.00", row_id=14, opened=5)]
    # MARK_DELETED: the markers are closed (keeping DELETE_FLAG = 'Y'), live versions open where they end
    return [r for r in rows if r["row_id"] not in (13, 14)] + [
        row(6, "fay", "6.00", row_id=13, opened=3, closed=5, deleted="Y"),
        row(7, "gil", "7.00", row_id=14, opened=3, closed=5, deleted="Y"),
        row(6, "fay", "6.00", row_id=15, opened=5), row(7, "gus", "7.00", row_id=16, opened=5)]


#: The counts of runs 1 to 5 in each mode.
COUNTS = {
    "KEEP": [counts(7, 7, insert=7), counts(7, 7), counts(6, 12, insert=5, update=4), counts(6, 12),
             counts(8, 13, insert=1, update=1)],
    "CLOSE": [counts(7, 7, insert=7), counts(7, 7), counts(6, 12, insert=5, update=4, delete=2), counts(6, 12),
              counts(8, 14, insert=2)],
    "MARK_DELETED": [counts(7, 7, insert=7), counts(7, 7), counts(6, 14, insert=7, update=4, delete=2),
                     counts(6, 14), counts(8, 16, insert=2, update=2)],
}


def check_invariants(rows: list[dict[str, Any]], mode: str, run: int) -> None:
    """At most one current version per key; a key's versions never overlap; where the mode promises it (KEEP and
    MARK_DELETED), each version after a key's first starts when the one before ended and only the last is open."""
    by_key: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_key[r["id"]].append(r)
    for key, versions in by_key.items():
        versions.sort(key=lambda r: (r["valid_from"], r["valid_to"] is None, r["valid_to"] or r["valid_from"]))
        assert sum(r["active_flag"] == "Y" for r in versions) <= 1, (mode, run, key, "two current versions")
        for r in versions:
            assert (r["active_flag"] == "Y") == (r["valid_to"] is None), (mode, run, key, r)
        for before, after in pairwise(versions):
            assert before["valid_to"] is not None and before["valid_to"] <= after["valid_from"], (mode, run, key,
                                                                                                  "overlap")
            if mode != "CLOSE":
                assert before["valid_to"] == after["valid_from"], (mode, run, key, "a gap in the history")


def run_history(wh: Wh, mode: str) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20), amount DECIMAL(10,2))")
    parameters = {"MERGE_KEY": "id", "SCD2_MISSING_KEYS": mode, "FULL_SNAPSHOT": "Y"}
    expected = {1: LOADED, 2: LOADED, 3: after_run_3(mode), 4: after_run_3(mode), 5: after_run_5(mode)}
    for run in range(1, 6):
        load(wh, run)
        result = wh.run("SCD2_MERGE", SELECT if run < 3 else SELECT_SCALED, **parameters)
        found = wh.contents(order="id, row_id")
        assert found == sorted(expected[run], key=lambda r: (r["id"], r["row_id"])), (mode, run)
        check_invariants(found, mode, run)
        assert result.counts == COUNTS[mode][run - 1], (mode, run)


@pytest.mark.parametrize("mode", ["KEEP", "CLOSE", "MARK_DELETED"])
def test_scd2_missing_keys__five_run_history__every_version_as_the_mode_says(wh: Wh, mode: str) -> None:
    run_history(wh, mode)


def test_scd2_missing_keys__mark_deleted__marker_carries_the_last_values_and_hash(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES (1, 'ann'), (2, 'bob')")
    select = "SELECT id, name FROM {s}.src"
    parameters = {"MERGE_KEY": "id", "SCD2_MISSING_KEYS": "mark_deleted", "FULL_SNAPSHOT": "Y"}
    wh.run("SCD2_MERGE", select, **parameters)
    wh.execute("DELETE FROM {s}.src WHERE id = 2")
    result = wh.run("SCD2_MERGE", select, **parameters)
    closed, marker = wh.contents(order="row_id")[1:]
    assert (closed["id"], closed["active_flag"], closed["delete_flag"]) == (2, "N", "N")
    assert {k: marker[k] for k in ("id", "name", "hash_key", "active_flag", "delete_flag", "row_id")} == {
        "id": 2, "name": "bob", "hash_key": closed["hash_key"], "active_flag": "Y", "delete_flag": "Y", "row_id": 3}
    assert "1 key(s) the SELECT no longer returns closed" in (result.message or "")
    assert "1 deletion marker(s) opened" in (result.message or "")


def test_scd2_missing_keys__an_empty_snapshot_closes_every_key(wh: Wh) -> None:
    """A full snapshot that returns nothing means the source is empty: CLOSE leaves no current row."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a'), (2, 'b')")
    parameters = {"MERGE_KEY": "id", "SCD2_MISSING_KEYS": "CLOSE", "FULL_SNAPSHOT": "Y"}
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", **parameters)
    wh.execute("DELETE FROM {s}.src")
    result = wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", **parameters)
    assert [(r["id"], r["active_flag"]) for r in wh.contents(order="id")] == [(1, "N"), (2, "N")]
    assert result.counts == counts(0, 2, delete=2)


@pytest.mark.parametrize("mode", ["CLOSE", "MARK_DELETED"])
def test_scd2_missing_keys__without_full_snapshot__refused_before_the_target_is_touched(wh: Wh, mode: str) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a')")
    with pytest.raises(SqlGuardError) as refused:
        wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id", SCD2_MISSING_KEYS=mode)
    assert f"SCD2_MISSING_KEYS is {mode}, but FULL_SNAPSHOT is not Y" in str(refused.value)
    assert "set FULL_SNAPSHOT to Y" in str(refused.value)
    assert not wh.query("SELECT table_name FROM information_schema.tables WHERE table_schema = '{s}' "
                        "AND table_name = 'target'")


def test_scd2_missing_keys__mark_deleted_needs_delete_flag(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a')",
               "CREATE TABLE {s}.target (id INTEGER, name VARCHAR(20), HASH_KEY VARCHAR(32), ACTIVE_FLAG CHAR(1), "
               "VALID_FROM TIMESTAMPTZ, VALID_TO TIMESTAMPTZ)")
    with pytest.raises(SqlGuardError, match="has no DELETE_FLAG column"):
        wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id", SCD2_MISSING_KEYS="MARK_DELETED",
               FULL_SNAPSHOT="Y")


@pytest.mark.parametrize(("mode", "writes", "closing"), [
    ("CLOSE", ["UPDATE", "INSERT", "UPDATE"], r"\n WHERE .*\n   AND NOT EXISTS \(SELECT 1 FROM (pg_temp|temp\.main)\."),
    ("MARK_DELETED", ["UPDATE", "INSERT", "INSERT", "UPDATE"], r'\n  FROM (pg_temp|temp\.main)\."etl_absent_'),
])
def test_scd2_missing_keys__one_set_based_pass__whatever_the_number_of_keys(
        wh: Wh, mode: str, writes: list[str], closing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the merge's close and insert: CLOSE's one UPDATE anti-joined to the hashed scratch table; MARK_DELETED's
    one anti-join into a scratch table of the missing keys' current versions, one INSERT ... SELECT of the markers
    from it and one UPDATE joined to it. The same statements for 50 missing keys as for one."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src SELECT CAST(g AS INTEGER), 'n' FROM generate_series(1, 60) AS t(g)")
    parameters = {"MERGE_KEY": "id", "SCD2_MISSING_KEYS": mode, "FULL_SNAPSHOT": "Y"}
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", **parameters)
    wh.execute("DELETE FROM {s}.src WHERE id > 10")
    seen = _statements(monkeypatch)
    result = wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", **parameters)
    found = [s for s in seen if re.match(r'(UPDATE|DELETE FROM|INSERT INTO) "?\w+"?\."?target"? ', s)]
    assert [w.split(" ")[0] for w in found] == writes, seen
    assert re.search(closing, found[-1]), found[-1]
    assert sum("NOT EXISTS" in s for s in seen[seen.index(found[1]) + 1:]) == 1, "one anti-join for the missing keys"
    assert result.counts.delete == 50
