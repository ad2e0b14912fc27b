"""The SQL each template renders, per dialect, is checked in under sql/rendered/ so a reviewer sees the SQL a
change really produces. `make snapshot` rewrites it after a deliberate change; this test fails on any diff."""

from __future__ import annotations

import os
from pathlib import Path

from etlcraft.engine.catalog import owned_tables
from etlcraft.engine.db import EngineDB
from etlcraft.engine.migrations import engine_migrations, repeatable_objects

SNAPSHOT = Path(__file__).resolve().parents[3] / "sql" / "rendered"


def test_rendered_sql_matches_the_snapshot(engine_db: EngineDB) -> None:
    with engine_db.read() as conn:
        tables = owned_tables(engine_db, conn)
    rendered = {
        f"{m.version}_{m.name}.sql": m.sql for m in engine_migrations(engine_db.dialect, "etl_craft")
    } | {f"{m.name}.sql": m.sql for m in repeatable_objects(engine_db.dialect, "etl_craft", tables)}
    folder = SNAPSHOT / engine_db.dialect
    if os.environ.get("ETL_CRAFT_UPDATE_SNAPSHOT") == "1":
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.sql"):
            stale.unlink()
        for name, sql in rendered.items():
            (folder / name).write_text(sql, encoding="utf-8")
    checked_in = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.sql")}
    assert sorted(checked_in) == sorted(rendered), "sql/rendered/ lists other files: run make snapshot"
    for name, sql in rendered.items():
        assert checked_in[name] == sql, f"sql/rendered/{engine_db.dialect}/{name} is stale: run make snapshot"
