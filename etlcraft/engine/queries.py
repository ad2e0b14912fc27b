"""Named read queries: `-- name: <name> [:one|:many]` blocks in etlcraft/engine/queries/*.sql, loaded once.

Table names are written `{CFG_TASKS}` and qualified for the Engine DB (schema on PostgreSQL, plain on SQLite);
values are bound as `:name` through SQLAlchemy text(). Whole-line comments inside a block are dropped, so a
colon in a comment is never read as a bind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB

QUERY_DIR = Path(__file__).parent / "queries"
_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*(?::(one|many))?\s*$")
_TABLE = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")


@dataclass(frozen=True)
class NamedQuery:
    name: str
    cardinality: str  # "one" or "many"
    sql: str  # with {TABLE} placeholders
    source: str  # file name


def _blocks(path: Path) -> list[NamedQuery]:
    queries: list[NamedQuery] = []
    name: str | None = None
    cardinality, body = "many", list[str]()
    for line in [*path.read_text(encoding="utf-8").splitlines(), "-- name: _end"]:
        header = _HEADER.match(line.strip())
        if header:
            if name is not None:
                sql = "\n".join(body).strip().rstrip(";").strip()
                queries.append(NamedQuery(name, cardinality, sql, path.name))
            name, cardinality, body = header.group(1), header.group(2) or "many", []
        elif name is not None and not line.strip().startswith("--"):
            body.append(line)
    return queries


@cache
def named_queries() -> dict[str, NamedQuery]:
    """Every named query by name; a name defined twice is an error."""
    found: dict[str, NamedQuery] = {}
    for path in sorted(QUERY_DIR.glob("*.sql")):
        for query in _blocks(path):
            if query.name in found:
                raise ValueError(f"query {query.name} is defined in {found[query.name].source} and {query.source}")
            found[query.name] = query
    return found


@cache
def _statement(name: str, dialect: str, schema: str) -> sa.TextClause:
    query = named_queries()[name]
    qualify = (lambda t: f"{schema}.{t}") if dialect == "postgresql" else (lambda t: t)
    return sa.text(_TABLE.sub(lambda m: qualify(m.group(1)), query.sql))


def statement(db: EngineDB, name: str) -> sa.TextClause:
    """The query `name` with its table names qualified for `db`."""
    return _statement(name, db.dialect, db.schema)


@cache
def psycopg_sql(name: str, schema: str) -> str:
    """The query `name` for PostgreSQL as psycopg sends it (binds as %(name)s), for a statement sent on the driver's
    connection (etlcraft.engine.functions.read_then_call)."""
    from sqlalchemy.dialects.postgresql.psycopg import dialect  # only for a PostgreSQL Engine DB

    return str(_statement(name, "postgresql", schema).compile(dialect=dialect()))


def fetch_all(db: EngineDB, conn: sa.Connection, name: str, **params: Any) -> list[dict[str, Any]]:
    """The rows of query `name` as dicts keyed by lower-case column name (PostgreSQL folds unquoted aliases to
    lower case, SQLite keeps them as written)."""
    return [{k.lower(): v for k, v in row._mapping.items()} for row in conn.execute(statement(db, name), params)]


def fetch_one(db: EngineDB, conn: sa.Connection, name: str, **params: Any) -> dict[str, Any] | None:
    row = conn.execute(statement(db, name), params).first()
    return None if row is None else {k.lower(): v for k, v in row._mapping.items()}
