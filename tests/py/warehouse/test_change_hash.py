"""The canonical change hash, version 2, on DuckDB and PostgreSQL: golden digests, independence from the session
time zone, AUD_TARGET_HASH_VERSION and etl-craft rehash."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa

from etlcraft.core.actor import acting_as
from etlcraft.core.errors import SqlGuardError
from etlcraft.handlers.sql.rehash import MergeContract, rehash_target
from etlcraft.warehouse import connection
from etlcraft.warehouse.names import parse_table_name
from tests.py.conftest import TEST_ACTOR
from tests.py.warehouse.conftest import Wh
from tests.py.warehouse.reference import digest

GOLDEN_TABLE = ("CREATE TABLE {s}.src (id INTEGER, txt VARCHAR(40), ts TIMESTAMP WITH TIME ZONE, d DATE, "
                "amt DECIMAL(12,4), flag BOOLEAN, n BIGINT, lts TIMESTAMP)")
GOLDEN_ROWS = (
    "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(2, '', '2026-03-01 12:00:00+00', '2026-03-01', 1.5, TRUE, 0, '2026-03-01 12:00:00')",
    "(3, '', '2026-03-01 17:30:00+05:30', '2026-03-01', 1.50000, TRUE, 0, '2026-03-01 12:00:00')",
    "(4, 'V1:x', '2026-03-01 04:00:00.123456-08:00', '1999-12-31', -0.5, FALSE, -7, '2026-03-01 04:00:00.123456')",
    "(5, 'a|b:N日本', '2026-03-01 12:00:00+00', '2026-03-01', 1234567.0001, TRUE, 9007199254740993, "
    "'2026-03-01 12:00:00')",
    "(6, NULL, '2026-03-01 12:00:00+00', '2026-03-01', 1.5, TRUE, 0, '2026-03-01 12:00:00')",
)
#: The digests docs/guides/sql-tasks.md documents; compare columns amt, d, flag, lts, n, ts, txt (alphabetical).
GOLDEN = {1: "22f5a758e5cf829804292fa88aede5aa", 2: "5e24b85f510790ae72ae3720206b1aee",
          3: "5e24b85f510790ae72ae3720206b1aee", 4: "7ba86374705a52e5f2ee6d44266546b9",
          5: "73064886e9a98f00245907d6bd3f21c1", 6: "a7a30407e57ad9fecead8b77be7777b9"}
SELECT = "SELECT id, txt, ts, d, amt, flag, n, lts FROM {s}.src"


def _golden_source(wh: Wh) -> None:
    wh.execute(GOLDEN_TABLE, *(f"INSERT INTO {{s}}.src VALUES {row}" for row in GOLDEN_ROWS))


def test_b22_b35_golden_digests__the_same_documented_values_on_every_warehouse(wh: Wh) -> None:
    _golden_source(wh)
    wh.run("SCD1_MERGE", SELECT, MERGE_KEY="id")
    assert {r["id"]: r["hash_key"] for r in wh.contents(order="id")} == GOLDEN
    utc, kolkata = UTC, timezone(timedelta(hours=5, minutes=30))
    reference = digest((Decimal("1.5"), "decimal:4"), (date(2026, 3, 1), "date"), (True, "bool"),
                       (datetime(2026, 3, 1, 12), "ts"), (0, "int"), (datetime(2026, 3, 1, 17, 30, tzinfo=kolkata),
                                                                      "tstz"), ("", "text"))
    assert reference == GOLDEN[3] == digest((Decimal("1.5000"), "decimal:4"), (date(2026, 3, 1), "date"),
                                            (True, "bool"), (datetime(2026, 3, 1, 12), "ts"), (0, "int"),
                                            (datetime(2026, 3, 1, 12, tzinfo=utc), "tstz"), ("", "text"))
    assert GOLDEN[2] != GOLDEN[6], "NULL and '' differ"


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_b35_session_time_zone_change__creates_no_scd2_version(
        wh: Wh, zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _golden_source(wh)
    wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    before = wh.contents(order="id")
    monkeypatch.setattr(connection, "SESSION_TIME_ZONE", zone)
    assert wh.query("SELECT current_setting('TimeZone')") == [(zone,)]
    again = wh.run("SCD2_MERGE", SELECT, MERGE_KEY="id")
    assert again.counts.rows_written == 0
    assert wh.contents(order="id") == before


def test_every_warehouse_session__runs_in_utc(wh: Wh) -> None:
    assert wh.query("SELECT current_setting('TimeZone')") == [("UTC",)]


def _versions(wh: Wh) -> list[tuple[object, ...]]:
    with wh.engine_db.read() as conn:
        return [tuple(r) for r in conn.execute(sa.text(
            "SELECT TARGET_OBJECT, HASH_VERSION, RECOMPUTED_BY, RECOMPUTED_BY_KIND FROM AUD_TARGET_HASH_VERSION"))]


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE", "SETUP_TABLE", "CREATE_TABLE"])
def test_targets_created_by_this_version__record_hash_version_2(wh: Wh, action: str) -> None:
    params = {"MERGE_KEY": "id"} if "MERGE" in action else {}
    wh.run(action, "SELECT 1 AS id, 'a' AS name", **params)
    assert _versions(wh) == [(f"{wh.schema}.target", 2, TEST_ACTOR.name, "HUMAN")]


def _old_target(wh: Wh) -> None:
    """An SCD1 target whose HASH_KEY came from an older formula (md5 of the text), with no version recorded."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))",
               "INSERT INTO {s}.src VALUES (1, 'a'), (2, NULL), (3, '')",
               "CREATE TABLE {s}.target (id INTEGER, name VARCHAR(20), hash_key VARCHAR(32), delete_flag VARCHAR(1), "
               "update_date TIMESTAMP WITH TIME ZONE)",
               "INSERT INTO {s}.target SELECT id, name, md5(COALESCE(name, '')), 'N', NULL FROM {s}.src")


def test_merge_into_a_target_with_older_hashes__refused_naming_rehash__rehash_makes_it_a_no_op(wh: Wh) -> None:
    _old_target(wh)
    rows = wh.query("SELECT * FROM {s}.target ORDER BY id")
    with pytest.raises(SqlGuardError, match=rf"run etl-craft rehash --target {wh.schema}\.target, then run the task"):
        wh.run("SCD1_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    assert wh.query("SELECT * FROM {s}.target ORDER BY id") == rows

    name, contract = parse_table_name(wh.t("target"), wh.dialect), MergeContract.of("pipe.task", "id", None)
    with acting_as(TEST_ACTOR):
        dry = rehash_target(wh.config, wh.engine_db, name, contract, dry_run=True)
        assert (dry.rows, dry.changed, dry.compare, _versions(wh)) == (3, 3, ("name",), [])
        done = rehash_target(wh.config, wh.engine_db, name, contract, dry_run=False)
    assert done.changed == 3
    assert wh.query("SELECT id, hash_key FROM {s}.target ORDER BY id") == [
        (1, digest(("a", "text"))), (2, digest((None, "text"))), (3, digest(("", "text")))]
    assert _versions(wh) == [(f"{wh.schema}.target", 2, TEST_ACTOR.name, "HUMAN")]
    merged = wh.run("SCD1_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    assert merged.counts.rows_written == 0, "after rehash an unchanged resend changes nothing"


def test_rehash__scd2_target__recomputes_every_version(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, name VARCHAR(20))", "INSERT INTO {s}.src VALUES (1, 'a')")
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    wh.execute("UPDATE {s}.src SET name = 'b'")
    wh.run("SCD2_MERGE", "SELECT id, name FROM {s}.src", MERGE_KEY="id")
    wh.execute("UPDATE {s}.target SET hash_key = 'stale'")
    name = parse_table_name(wh.t("target"), wh.dialect)
    with acting_as(TEST_ACTOR):
        done = rehash_target(wh.config, wh.engine_db, name, MergeContract.of("p.t", "id", None), dry_run=False)
    assert (done.rows, done.changed) == (2, 2)
    assert wh.query("SELECT name, hash_key FROM {s}.target ORDER BY row_id") == [
        ("a", digest(("a", "text"))), ("b", digest(("b", "text")))]
