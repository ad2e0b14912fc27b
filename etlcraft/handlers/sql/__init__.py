"""The SQL handler: a SQL task's one read-only SELECT, written into its target with its action (CREATE_TABLE,
SETUP_TABLE, OVERWRITE_TABLE, APPEND_TABLE, SCD1_MERGE, SCD2_MERGE, DELETE_ROWS) on DuckDB or PostgreSQL.

docs/guides/sql-tasks.md describes the actions, the columns etl-craft writes, the guards and the change hash.
"""

from __future__ import annotations

from etlcraft.handlers.sql.task import run_sql_task

__all__ = ["run_sql_task"]
