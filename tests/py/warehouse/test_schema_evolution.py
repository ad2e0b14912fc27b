"""Schema evolution by ALTER TABLE ADD COLUMN with full types (S3.G.4) on DuckDB and PostgreSQL: lengths,
precision and scale survive (B39), the table is never rebuilt and keeps its properties (B40), and a changed type
is refused naming both types."""

from __future__ import annotations

import pytest

from etlcraft.core.errors import InjectedFaultError, SqlGuardError
from etlcraft.core.faults import VARIABLE
from etlcraft.handlers.sql.task import FAULT_BEFORE_COMMIT
from tests.py.warehouse.conftest import Wh

NEW_COLUMNS = ("SELECT id, CAST(9.99 AS DECIMAL(12,2)) AS price, CAST('EUR' AS CHAR(3)) AS currency, "
               "CAST('x' AS VARCHAR(20)) AS label, "
               "CAST('2026-03-01 10:00:00+00' AS TIMESTAMP WITH TIME ZONE) AS seen_at "
               "FROM {s}.src")
EXPECTED = {
    "postgresql": [("price", "numeric(12,2)"), ("currency", "character(3)"), ("label", "character varying(20)"),
                   ("seen_at", "timestamp with time zone")],
    "duckdb": [("price", "decimal(12,2)"), ("currency", "varchar"), ("label", "varchar"),
               ("seen_at", "timestamp with time zone")],
}


def _start(wh: Wh, action: str = "SCD1_MERGE") -> None:
    wh.execute("CREATE TABLE {s}.src (id INTEGER)", "INSERT INTO {s}.src VALUES (1), (2)")
    wh.run(action, "SELECT id FROM {s}.src", MERGE_KEY="id")


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE", "APPEND_TABLE", "OVERWRITE_TABLE", "SETUP_TABLE"])
def test_b39_new_columns__added_with_their_full_types(wh: Wh, action: str) -> None:
    _start(wh, action)
    wh.run(action, NEW_COLUMNS, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    columns = wh.columns()
    added = [c for c in columns if c[0] in ("price", "currency", "label", "seen_at")]
    assert added == EXPECTED[wh.dialect]
    assert [c for c, _ in columns].index("price") > [c for c, _ in columns].index("pipeline_id"), \
        "added columns come after the existing ones: the table is altered, not rebuilt"


def test_b40_evolution__keeps_the_table_and_its_properties(wh: Wh) -> None:
    _start(wh)
    wh.execute("COMMENT ON TABLE {s}.target IS 'precious'", "CREATE INDEX ix_evolve ON {s}.target (id)")
    if wh.dialect == "postgresql":
        wh.execute("CREATE VIEW {s}.v AS SELECT id FROM {s}.target", "GRANT SELECT ON {s}.target TO PUBLIC")
        identity = "SELECT c.oid, obj_description(c.oid, 'pg_class'), c.relacl::text FROM pg_class c " \
                   "WHERE c.oid = '{s}.target'::regclass"
    else:
        identity = "SELECT table_oid, comment FROM duckdb_tables() WHERE schema_name = '{s}'"
    before = wh.query(identity)
    result = wh.run("SCD1_MERGE", NEW_COLUMNS, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    assert wh.query(identity) == before
    assert result.counts.update == 2, "existing rows get the new columns' values"
    if wh.dialect == "postgresql":
        assert wh.query("SELECT count(*) FROM pg_indexes WHERE indexname = 'ix_evolve'") == [(1,)]
        assert wh.query("SELECT * FROM {s}.v ORDER BY id") == [(1,), (2,)]
    else:
        assert wh.query("SELECT count(*) FROM duckdb_indexes() WHERE index_name = 'ix_evolve'") == [(1,)]


def test_changed_type_with_schema_evolution__refused_naming_both_types(wh: Wh) -> None:
    _start(wh)
    wh.run("SCD1_MERGE", NEW_COLUMNS, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    before = wh.columns()
    changed = NEW_COLUMNS.replace("DECIMAL(12,2)) AS price", "DECIMAL(14,4)) AS price")
    with pytest.raises(SqlGuardError, match=r"column price is (numeric|DECIMAL)\(14,4\) in the SELECT and "
                                            r"(numeric|DECIMAL)\(12,2\) in .*target; schema evolution adds columns "
                                            r"but never changes a type"):
        wh.run("SCD1_MERGE", changed, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    retyped = NEW_COLUMNS.replace("CAST('x' AS VARCHAR(20)) AS label", "42 AS label")
    with pytest.raises(SqlGuardError, match=r"column label is (integer|INTEGER) in the SELECT"):
        wh.run("SCD1_MERGE", retyped, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    assert wh.columns() == before
    literal = NEW_COLUMNS.replace("CAST('x' AS VARCHAR(20)) AS label", "'y' AS label")
    assert wh.run("SCD1_MERGE", literal, MERGE_KEY="id", SCHEMA_EVOLUTION="Y").counts.update == 2, \
        "a literal declares no length: it is written into the column's declared type"


def test_evolution_then_a_failure__adds_nothing__the_retry_adds_every_column(
        wh: Wh, monkeypatch: pytest.MonkeyPatch) -> None:
    _start(wh)
    before = wh.columns()
    monkeypatch.setenv(VARIABLE, FAULT_BEFORE_COMMIT)
    with pytest.raises(InjectedFaultError):
        wh.run("SCD1_MERGE", NEW_COLUMNS, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    assert wh.columns() == before
    monkeypatch.delenv(VARIABLE)
    wh.run("SCD1_MERGE", NEW_COLUMNS, MERGE_KEY="id", SCHEMA_EVOLUTION="Y")
    assert [c for c in wh.columns() if c not in before] == EXPECTED[wh.dialect]
