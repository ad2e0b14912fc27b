"""A full description of an Engine DB's catalog, to compare databases built by different paths."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB

_PG_QUERIES = {
    "columns": """SELECT table_name, column_name, data_type, character_maximum_length, column_default,
                         is_nullable, is_identity, identity_generation
                    FROM information_schema.columns WHERE table_schema = :s ORDER BY 1, 2""",
    "constraints": """SELECT t.relname, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c
                        JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
                       WHERE n.nspname = :s ORDER BY 1, 2""",
    "indexes": "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = :s ORDER BY 1, 2",
    "triggers": """SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
                     JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = :s AND NOT t.tgisinternal ORDER BY 1, 2""",
    "functions": """SELECT p.proname, pg_get_function_identity_arguments(p.oid), md5(pg_get_functiondef(p.oid))
                      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :s
                     ORDER BY 1, 2""",
    "comments": """SELECT c.relname, d.objsubid, d.description FROM pg_description d
                     JOIN pg_class c ON c.oid = d.objoid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = :s ORDER BY 1, 2""",
    "options": """SELECT c.relname, c.reloptions::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = :s AND c.reloptions IS NOT NULL ORDER BY 1""",
    "reference": """SELECT 'transitions', count(*)::text FROM eng_transitions UNION ALL
                    SELECT 'statuses', count(*)::text FROM eng_statuses UNION ALL
                    SELECT 'errors', count(*)::text FROM eng_error_codes""",
}


def snapshot(db: EngineDB) -> dict[str, Any]:
    """Columns, defaults, constraints with names, indexes, triggers, functions, comments, table options and
    reference rows (PostgreSQL); every schema object's SQL (SQLite)."""
    with db.read() as conn:
        if db.is_postgres:
            return {name: [tuple(r) for r in conn.execute(sa.text(q), {"s": db.schema})]
                    for name, q in _PG_QUERIES.items()}
        objects = conn.execute(sa.text(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY 1, 2"))
        return {"objects": [tuple(r) for r in objects],
                "reference": [conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar()
                              for t in ("ENG_TRANSITIONS", "ENG_STATUSES", "ENG_ERROR_CODES")]}
