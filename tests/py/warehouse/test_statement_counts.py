"""How many statements a merge sends, on DuckDB and PostgreSQL: etl-craft test runs the same action code for every
test of a suite, where each statement has a fixed cost (about 0.25 ms on DuckDB) that a two-row test cannot hide."""

from __future__ import annotations

from typing import Any

import pytest

from etlcraft.warehouse.connection import Session
from tests.py.warehouse.conftest import Wh


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement the SQL handler sends from now on (Session.run, rows, scalar and names)."""
    seen: list[str] = []
    for method in ("run", "rows", "names"):
        original = getattr(Session, method)

        def record(self: Session, sql: str, _original: Any = original) -> Any:
            seen.append(sql)
            return _original(self, sql)

        monkeypatch.setattr(Session, method, record)
    return seen


def test_scd1_merge__new_target__seven_statements_and_no_hashed_scratch_table(
        wh: Wh, monkeypatch: pytest.MonkeyPatch) -> None:
    """Into a missing target: the SELECT's names, the stage and its columns, one query for the key guards, one
    catalog read, one CREATE TABLE AS with every row and its hash, the stage's DROP (were 23 on DuckDB, 20 on
    PostgreSQL)."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, a VARCHAR(9))", "INSERT INTO {s}.src VALUES (1, 'x'), (2, 'y')")
    seen = _record(monkeypatch)
    merged = wh.run("SCD1_MERGE", "SELECT id, a FROM {s}.src", MERGE_KEY="id")
    assert len(seen) == 7, "\n---\n".join(seen)
    counted = [s for s in seen if "COUNT(*)" in s.split("FROM")[0] and "IS NULL" not in s]
    assert not counted and not [s for s in seen if "etl_merge_" in s or "etl_replace_" in s], seen
    assert (merged.counts.source, merged.counts.insert, merged.counts.target) == (2, 2, 2)
    rows = wh.query("SELECT id, a, row_id, hash_key FROM {s}.target ORDER BY id")
    assert [r[:3] for r in rows] == [(1, "x", 1), (2, "y", 2)] and all(r[3] for r in rows)


def test_scd1_merge__unchanged_source__no_delete_or_insert_of_changed_rows(
        wh: Wh, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second run with nothing changed writes nothing: no DELETE and no re-INSERT of replaced rows on DuckDB, no
    row updated on PostgreSQL; the hashes of the first run (made without a hashed scratch table) match."""
    wh.execute("CREATE TABLE {s}.src (id INTEGER, a VARCHAR(9))", "INSERT INTO {s}.src VALUES (1, 'x'), (2, 'y')")
    wh.run("SCD1_MERGE", "SELECT id, a FROM {s}.src", MERGE_KEY="id")
    seen = _record(monkeypatch)
    again = wh.run("SCD1_MERGE", "SELECT id, a FROM {s}.src", MERGE_KEY="id")
    assert (again.counts.insert, again.counts.update, again.counts.target) == (0, 0, 2)
    assert not [s for s in seen if s.startswith("DELETE")], seen
    assert len([s for s in seen if s.startswith("INSERT")]) == 1, seen  # the new keys' INSERT (none)
    assert len(seen) <= (14 if wh.dialect == "duckdb" else 16), "\n---\n".join(seen)
