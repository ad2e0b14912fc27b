"""Warehouse identifier rules: a TARGET_OBJECT as a qualified table name, and which output names need quotes.

etl-craft quotes every name it writes into SQL, spelled as the warehouse stores it, so reserved words work as column
names. PostgreSQL folds unquoted names to lower case: a name with an upper-case letter was quoted in the SELECT and
would have to be quoted by every later reader. DuckDB keeps the case of unquoted names as written and matches them
case-insensitively: a name all in lower or all in upper case reads the same however it is typed, a mixed-case one
does not (B45).
"""

from __future__ import annotations

from dataclasses import dataclass

from etlcraft.core.parameters import PLAIN_NAME
from etlcraft.core.selects import DEFAULT_SCHEMAS

#: How many dotted parts a table name may have on each warehouse (DuckDB: catalog.schema.table).
_MAX_PARTS = {"duckdb": 3, "postgresql": 2}


@dataclass(frozen=True)
class TableName:
    """A table in the warehouse. `schema` and `table` are as the warehouse stores them (lower case on
    PostgreSQL); `catalog` is a DuckDB database name, or None for the current one."""

    schema: str
    table: str
    catalog: str | None = None

    @property
    def key(self) -> str:
        """The name etl-craft records and locks the table by: lower case, with its schema."""
        parts = (self.catalog, self.schema, self.table)
        return ".".join(p.lower() for p in parts if p)

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.schema, self.table) if p)


def parse_table_name(text: str, dialect: str) -> TableName:
    """`schema.table` or `table` (the warehouse's default schema; DuckDB also `catalog.schema.table`).
    Raises ValueError saying what is wrong: every part must be a plain name."""
    parts = text.strip().split(".")
    most = _MAX_PARTS[dialect]
    if not 1 <= len(parts) <= most or not all(PLAIN_NAME.match(p) for p in parts):
        shape = "schema.table or table" + (" (or catalog.schema.table)" if most == 3 else "")
        raise ValueError(f"{text!r} is not a table name etl-craft can use on {dialect}; expected {shape}, each "
                         "part made of letters, digits and _ and not starting with a digit")
    if dialect == "postgresql":
        parts = [p.lower() for p in parts]
    if len(parts) == 1:
        return TableName(DEFAULT_SCHEMAS[dialect], parts[0])
    if len(parts) == 2:
        return TableName(parts[0], parts[1])
    return TableName(parts[1], parts[2], parts[0])


def needs_quotes(name: str, dialect: str) -> bool:
    """Whether an output name, as the warehouse returned it, only reads back when quoted (B45)."""
    if not PLAIN_NAME.match(name):
        return True
    if dialect == "postgresql":
        return name != name.lower()
    return name not in (name.lower(), name.upper())


def snake_case(name: str) -> str:
    """A plain lower-case name to suggest as an alias for `name` (CustomerId -> customer_id)."""
    out: list[str] = []
    for index, char in enumerate(name):
        if char.isupper() and index and (name[index - 1].islower() or name[index - 1].isdigit()):
            out.append("_")
        out.append(char.lower() if char.isalnum() else "_")
    text = "_".join(part for part in "".join(out).split("_") if part)
    return text if text and not text[0].isdigit() else f"c_{text}"
