"""Set-based writes (S3.G.2, B36) and what HAS_DATA reads (B42), on DuckDB and PostgreSQL."""

from __future__ import annotations

import re
import time

import pytest

from etlcraft.warehouse.connection import Session
from tests.py.warehouse.conftest import Wh


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = Session.run

    def record(self: Session, sql: str) -> int:
        seen.append(sql)
        return original(self, sql)

    monkeypatch.setattr(Session, "run", record)
    return seen


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_b36_merge_updates__one_update_from_the_stage__no_correlated_subqueries(
        wh: Wh, action: str, monkeypatch: pytest.MonkeyPatch) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, a VARCHAR(9), b INTEGER)", "INSERT INTO {s}.src VALUES (1, 'x', 1)")
    wh.run(action, "SELECT id, a, b FROM {s}.src", MERGE_KEY="id")
    wh.execute("UPDATE {s}.src SET a = 'y', b = 2")
    seen = _statements(monkeypatch)
    wh.run(action, "SELECT id, a, b FROM {s}.src", MERGE_KEY="id")
    updates = [s for s in seen if s.startswith("UPDATE")]
    if wh.dialect == "duckdb" and action == "SCD1_MERGE":
        assert updates == [], "DuckDB replaces SCD1's changed rows (Dialect.replaces_changed_rows)"
        return
    assert len(updates) == 1
    assert re.search(r"^UPDATE .* AS t SET .*\n  FROM (pg_temp|temp\.main)\.", updates[0])
    assert "SELECT" not in updates[0].split("FROM")[0], "no subquery per column in SET"


def test_duckdb_scd1__changed_rows_are_replaced_by_one_delete_and_one_insert__not_updated(
        wh: Wh, monkeypatch: pytest.MonkeyPatch) -> None:
    """On DuckDB an UPDATE leaves each updated column of every row group it touched to be rewritten at the next
    checkpoint; SCD1 deletes its changed rows and inserts their new versions, set-based, from one scratch table."""
    if wh.dialect != "duckdb":
        pytest.skip("PostgreSQL updates in place")
    wh.execute("CREATE TABLE {s}.src (id INTEGER, a VARCHAR(9))", "INSERT INTO {s}.src VALUES (1, 'x'), (2, 'x')")
    wh.run("SCD1_MERGE", "SELECT id, a FROM {s}.src", MERGE_KEY="id")
    wh.execute("UPDATE {s}.src SET a = 'y' WHERE id = 2")
    seen = _statements(monkeypatch)
    changed = wh.run("SCD1_MERGE", "SELECT id, a FROM {s}.src", MERGE_KEY="id")
    writes = [s for s in seen if re.match(r'(UPDATE|DELETE FROM|INSERT INTO) "?\w+"?\."?target"? ', s)]
    assert [w.split(" ")[0] for w in writes] == ["DELETE", "INSERT", "INSERT"], seen  # the last: new keys (none)
    assert re.search(r"WHERE rowid IN \(SELECT \S+ FROM temp\.main\.", writes[0])
    assert (changed.counts.update, changed.counts.insert, changed.counts.target) == (1, 0, 2)


def test_b42_rows_written__counts_what_changed__not_what_the_target_holds(wh: Wh) -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER, v INTEGER)", "INSERT INTO {s}.src VALUES (1, 1), (2, 2)")
    appended = wh.run("APPEND_TABLE", "SELECT id, v FROM {s}.src", "log")
    empty = wh.run("APPEND_TABLE", "SELECT id, v FROM {s}.src WHERE id < 0", "log")
    assert (appended.counts.rows_written, empty.counts.rows_written, empty.counts.target) == (2, 0, 2), \
        "an empty append into a non-empty table wrote nothing: HAS_DATA is not met"
    wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    unchanged = wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    assert (unchanged.counts.rows_written, unchanged.counts.target) == (0, 2)
    wh.execute("UPDATE {s}.src SET v = 9 WHERE id = 2")
    one = wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    assert (one.counts.update, one.counts.rows_written) == (1, 1)


def _scans(wh: Wh, table: str) -> int:
    """Sequential scans PostgreSQL has counted on the table (every read of a table without an index is one). A
    session reports its counts when it ends: first wait until the writer's sessions of this worker's warehouse
    database have ended (a backend leaves pg_stat_activity after it has reported)."""
    others = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    for _ in range(200):
        if wh.query(others) == [(0,)]:
            break
        time.sleep(0.05)
    found = wh.query(f"SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = '{wh.schema}'"
                     f" AND relname = '{table}'")
    return int(found[0][0])


@pytest.mark.postgres
def test_append_table__reads_an_existing_target_once(pg_wh: Wh) -> None:
    """COUNT(*), MAX(ROW_ID) and the retry check of an append come from one read of the target: appending a few
    rows to a large table does not scan it three times."""
    pg_wh.execute("CREATE TABLE {s}.src (id INTEGER, v INTEGER)", "INSERT INTO {s}.src VALUES (1, 1), (2, 2)")
    pg_wh.run("APPEND_TABLE", "SELECT id, v FROM {s}.src", "log")
    before = _scans(pg_wh, "log")
    appended = pg_wh.run("APPEND_TABLE", "SELECT id, v FROM {s}.src", "log")
    assert _scans(pg_wh, "log") - before == 1
    assert (appended.counts.insert, appended.counts.delete, appended.counts.target) == (2, 0, 4)
    assert pg_wh.query("SELECT row_id FROM {s}.log ORDER BY row_id") == [(1,), (2,), (3,), (4,)]


@pytest.mark.postgres
def test_scd1_merge__reads_the_target_for_its_figures_once(pg_wh: Wh) -> None:
    """Besides the UPDATE and the new-key INSERT, a merge reads its target once, for TARGET_COUNT and ROW_ID."""
    pg_wh.execute("CREATE TABLE {s}.src (id INTEGER, v INTEGER)", "INSERT INTO {s}.src VALUES (1, 1), (2, 2)")
    pg_wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    pg_wh.execute("UPDATE {s}.src SET v = 9 WHERE id = 2", "INSERT INTO {s}.src VALUES (3, 3)")
    before = _scans(pg_wh, "target")
    merged = pg_wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    assert _scans(pg_wh, "target") - before == 3
    assert (merged.counts.insert, merged.counts.update, merged.counts.target) == (1, 1, 3)
    assert pg_wh.query("SELECT id, v, row_id FROM {s}.target ORDER BY id") == [(1, 1, 1), (2, 9, 2), (3, 3, 3)]


@pytest.mark.postgres
def test_merge__reads_no_task_run_rows__a_text_task_run_id_is_never_compared_to_a_number(pg_wh: Wh) -> None:
    """Only APPEND_TABLE asks the one read for its task run's rows: a merge target made by hand with a text
    TASK_RUN_ID (which PostgreSQL will not compare with a number) merges as before."""
    pg_wh.execute("CREATE TABLE {s}.src (id INTEGER, v INTEGER)", "INSERT INTO {s}.src VALUES (1, 1)",
                  "CREATE TABLE {s}.target (id INTEGER, v INTEGER, task_run_id VARCHAR(20), hash_key VARCHAR(32))")
    merged = pg_wh.run("SCD1_MERGE", "SELECT id, v FROM {s}.src", MERGE_KEY="id")
    assert (merged.counts.insert, merged.counts.target) == (1, 1)
    assert pg_wh.query("SELECT id, v, task_run_id FROM {s}.target") == [(1, 1, str(100 + pg_wh.runs))]
