"""Set-based writes (S3.G.2, B36) and what HAS_DATA reads (B42), on DuckDB and PostgreSQL."""

from __future__ import annotations

import re

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
    assert len(updates) == 1
    assert re.search(r"^UPDATE .* AS t SET .*\n  FROM (pg_temp|temp\.main)\.", updates[0])
    assert "SELECT" not in updates[0].split("FROM")[0], "no subquery per column in SET"


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
