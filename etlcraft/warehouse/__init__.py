"""The warehouse SQL tasks read and write: DuckDB (the embedded default) or PostgreSQL, through SQLAlchemy Core.

`open_warehouse` connects with the session time zone pinned to UTC; `Dialect` renders the SQL that differs between
the two (canonical text for hashing, catalog reads, scratch tables, set-based updates); `names` holds the identifier
rules. Any other warehouse is refused, naming the supported ones.
"""

from __future__ import annotations

from etlcraft.warehouse.connection import SUPPORTED_WAREHOUSES, Session, Warehouse, open_warehouse
from etlcraft.warehouse.dialects import Column, Dialect, Family, dialect_for
from etlcraft.warehouse.names import TableName, needs_quotes, parse_table_name

__all__ = [
    "SUPPORTED_WAREHOUSES",
    "Column",
    "Dialect",
    "Family",
    "Session",
    "TableName",
    "Warehouse",
    "dialect_for",
    "needs_quotes",
    "open_warehouse",
    "parse_table_name",
]
