"""The warehouse's catalog as sqlglot sees it, and a SELECT resolved against it.

`read_catalog` reads every table and view with its columns from information_schema (DuckDB: every attached
database but temp and system; PostgreSQL: every schema of the database). `Catalog.resolve` qualifies a SELECT with
sqlglot's optimizer against a `MappingSchema` of that catalog, plus the tables the project's tasks will make: it
names the tables the SELECT reads that neither has, the columns it reads that their table lacks, and the names it
returns (its * expanded when every table's columns are known).
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.qualify_tables import qualify_tables
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from etlcraft.core.selects import DEFAULT_SCHEMAS
from etlcraft.core.sqltext import SQLGLOT_DIALECTS
from etlcraft.warehouse.connection import Session

#: Columns every table has without listing them in information_schema.
_SYSTEM_COLUMNS = {"duckdb": frozenset({"rowid"}),
                   "postgresql": frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"})}
_CREATE = re.compile(r"\s*CREATE\s+(OR\s+REPLACE\s+)?TABLE\b", re.IGNORECASE)
_DUCKDB_SQL = ("SELECT table_catalog, table_schema, table_name, column_name FROM information_schema.columns\n"
               " WHERE table_catalog NOT IN ('temp', 'system') ORDER BY 1, 2, 3, ordinal_position")
_POSTGRES_SQL = ("SELECT table_schema, table_name, column_name FROM information_schema.columns\n"
                 " ORDER BY 1, 2, ordinal_position")


@dataclass(frozen=True)
class Resolution:
    """What a SELECT reads and returns. Table names are dotted and lower case, as `Catalog.key` gives them."""

    missing_tables: tuple[str, ...] = ()  # read, but neither in the warehouse nor made by a task
    missing_columns: tuple[tuple[str, str], ...] = ()  # (table, column): read, but the table lacks the column
    reads: tuple[str, ...] = ()  # every table read
    outputs: tuple[str, ...] | None = None  # the names returned; None when a * reaches unknown columns
    error: str | None = None  # sqlglot could not read or qualify the SELECT


@dataclass
class Catalog:
    """Tables by key (catalog.schema.table on DuckDB, schema.table on PostgreSQL), each with its columns in order;
    `made` holds the tables a task will create, with their columns when its SELECT resolves (None otherwise)."""

    dialect: str  # etl-craft's name: duckdb or postgresql
    database: str | None  # DuckDB's current database (unqualified names are read in it); None on PostgreSQL
    tables: dict[str, tuple[str, ...]] = field(default_factory=dict)
    made: dict[str, tuple[str, ...] | None] = field(default_factory=dict)

    def key(self, parts: Iterable[str | None]) -> str:
        """The key of a table named by `parts` (catalog, schema, table; missing ones take the defaults)."""
        default = ([self.database.lower()] if self.database else []) + [DEFAULT_SCHEMAS[self.dialect]]
        names = [p.lower() for p in parts if p][-(len(default) + 1):]
        return ".".join(default[:len(default) + 1 - len(names)] + names)

    def show(self, key: str) -> str:
        """A key as messages name the table: without DuckDB's current database."""
        prefix = f"{self.database.lower()}." if self.database else ""
        return " or ".join(k.removeprefix(prefix) for k in key.split(" or "))

    def columns(self, key: str) -> tuple[str, ...] | None:
        """The table's columns: from the warehouse, else from the task that makes it (None: not known)."""
        return self.tables[key] if key in self.tables else self.made.get(key)

    def known(self, key: str) -> bool:
        return key in self.tables or key in self.made

    def near(self, key: str) -> list[str]:
        """Tables named like `key`, for a did-you-mean."""
        names = {self.show(k): k for k in [*self.tables, *self.made]}
        return [names[n] for n in difflib.get_close_matches(self.show(key), list(names), n=2, cutoff=0.8)]

    def schema(self) -> MappingSchema:
        mapping: dict[str, object] = {}
        for key in {**{k: v for k, v in self.made.items() if v is not None}, **self.tables}:
            columns = self.columns(key)
            assert columns is not None
            node = mapping
            *outer, table = key.split(".")
            for part in outer:
                node = node.setdefault(part, {})  # type: ignore[assignment]
            fold = self.dialect == "duckdb"  # DuckDB matches every name case-blind; sqlglot reads them lower case
            node[table] = {c.lower() if fold else c: "text" for c in columns}
        return MappingSchema(mapping, dialect=SQLGLOT_DIALECTS[self.dialect], normalize=False)

    def resolve(self, select: str) -> Resolution:
        """Qualify `select` against the catalog; see the module's docstring."""
        read = SQLGLOT_DIALECTS[self.dialect]
        try:
            tree = normalize_identifiers(sqlglot.parse_one(select, read=read), dialect=read)
            tree = qualify_tables(tree, db=DEFAULT_SCHEMAS[self.dialect], catalog=self.database, dialect=read)
            scopes = traverse_scope(tree)
        except SqlglotError as exc:
            return Resolution(error=str(exc).splitlines()[0])
        reads, missing_tables, missing_columns = self._sources(scopes)
        if missing_tables or missing_columns:
            return Resolution(tuple(missing_tables), tuple(missing_columns), tuple(reads))
        try:
            qualified = qualify(tree.copy(), schema=self.schema(), dialect=read, validate_qualify_columns=False,
                                quote_identifiers=False, identify=False)
        except SqlglotError as exc:
            return Resolution(reads=tuple(reads), error=str(exc).splitlines()[0])
        missing_columns = list(self._unresolved(traverse_scope(qualified)))
        outputs = tuple(qualified.named_selects) if isinstance(qualified, exp.Query) else ()
        return Resolution((), tuple(missing_columns), tuple(reads),
                          None if "*" in outputs or not outputs else outputs)

    def _table_key(self, source: exp.Table) -> str | None:
        if not isinstance(source.this, exp.Identifier):
            return None  # a table function: generate_series(...), read_csv(...)
        return self.key((source.catalog, source.db, source.name))

    def _sources(self, scopes: list[Scope]) -> tuple[list[str], list[str], list[tuple[str, str]]]:
        """Every table the scopes read; those unknown; qualified columns their known table lacks."""
        reads: list[str] = []
        missing: list[str] = []
        columns: list[tuple[str, str]] = []
        for scope in scopes:
            for _alias, source in _sources_of(scope):
                key = self._table_key(source)
                if key is None:
                    continue
                reads.append(key)
                if not self.known(key):
                    missing.append(key)
            for column in scope.columns:
                found = self._source_columns(scope, column.table)
                if found is not None and not self._has(found[1], column.name):
                    columns.append((found[0], column.name))
        return list(dict.fromkeys(reads)), list(dict.fromkeys(missing)), list(dict.fromkeys(columns))

    def _source_columns(self, scope: Scope, alias: str) -> tuple[str, tuple[str, ...]] | None:
        source = scope.selected_sources.get(alias, (None, None))[1] if alias else None
        if not isinstance(source, exp.Table):
            return None
        key = self._table_key(source)
        known = self.columns(key) if key is not None else None
        return None if key is None or known is None else (key, known)

    def _has(self, columns: tuple[str, ...], name: str) -> bool:
        return name == "*" or name.lower() in {c.lower() for c in columns} or \
            name.lower() in _SYSTEM_COLUMNS[self.dialect]

    def _unresolved(self, scopes: list[Scope]) -> Iterable[tuple[str, str]]:
        """Unqualified columns sqlglot found in no table of a scope whose every table's columns are known."""
        seen: set[int] = set()
        for scope in scopes:
            sources = [s for _, s in scope.selected_sources.values()]
            tables = [self._table_key(s) for s in sources if isinstance(s, exp.Table)]
            if not tables or len(tables) != len(sources) or any(k is None or self.columns(k) is None
                                                                 for k in tables):
                continue
            for column in scope.unqualified_columns:
                if id(column) in seen:
                    continue
                seen.add(id(column))
                if not any(self._has(self.columns(k) or (), column.name) for k in tables if k):
                    yield " or ".join(k for k in tables if k), column.name


def _sources_of(scope: Scope) -> Iterable[tuple[str, exp.Table]]:
    for alias, (_, source) in scope.selected_sources.items():
        if isinstance(source, exp.Table):
            yield alias, source


def read_catalog(session: Session) -> Catalog:
    """Every table and view of the warehouse with its columns, in order."""
    dialect = session.dialect.name
    by_table: dict[str, list[str]] = {}
    if dialect == "duckdb":
        catalog = Catalog(dialect, str(session.scalar("SELECT current_database()")))
        rows = [(f"{c}.{s}.{t}".lower(), n) for c, s, t, n in session.rows(_DUCKDB_SQL)]
    else:
        catalog = Catalog(dialect, None)
        rows = [(f"{s}.{t}".lower(), n) for s, t, n in session.rows(_POSTGRES_SQL)]
    for key, name in rows:
        by_table.setdefault(key, []).append(str(name))
    catalog.tables = {k: tuple(v) for k, v in by_table.items()}
    return catalog


def declared_tables(script: Path, dialect: str) -> list[tuple[tuple[str | None, ...], tuple[str, ...] | None]]:
    """The tables an ingestion script creates: each CREATE TABLE statement written as a string in its text, with
    its columns (None for CREATE TABLE ... AS). A script that cannot be read declares none (validate's file checks
    report why)."""
    try:
        tree = ast.parse(script.read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, ValueError):
        return []
    found: list[tuple[tuple[str | None, ...], tuple[str, ...] | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CREATE.match(node.value):
            with contextlib.suppress(SqlglotError):
                create = sqlglot.parse_one(node.value, read=SQLGLOT_DIALECTS[dialect])
                if isinstance(create, exp.Create) and create.kind == "TABLE":
                    found.append(_declared(create))
    return found


def _declared(create: exp.Create) -> tuple[tuple[str | None, ...], tuple[str, ...] | None]:
    target = create.this
    if isinstance(target, exp.Schema):
        table = target.this
        columns = tuple(c.name for c in target.expressions if isinstance(c, exp.ColumnDef))
        return (table.catalog, table.db, table.name), columns
    return (target.catalog, target.db, target.name), None
