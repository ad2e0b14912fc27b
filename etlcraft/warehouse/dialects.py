"""The SQL that differs between the warehouses etl-craft supports: DuckDB and PostgreSQL.

Each dialect renders names and literals, reads a table's columns with their full types from the catalog (filtered
by catalog, schema and table with exact matches, never by bare name: B34), creates scratch tables, renders the
canonical text the change hash is computed from (S3.G.1) and the set-based `UPDATE ... FROM` (S3.G.2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from etlcraft.warehouse.names import TableName


class Family(StrEnum):
    """What a column type is, as far as hashing and guards care."""

    TIMESTAMPTZ = "timestamp with time zone"
    TIMESTAMP = "timestamp"
    DATE = "date"
    TIME = "time"
    DECIMAL = "decimal"
    BOOLEAN = "boolean"
    FLOAT = "float"
    INTEGER = "integer"
    TEXT = "text"
    OTHER = "other"


@dataclass(frozen=True)
class Column:
    name: str  # as the warehouse stores it
    type: str  # the full type, as DDL accepts it (numeric(12,2), DECIMAL(12,2), character varying(20))
    family: Family

    @property
    def key(self) -> str:
        return self.name.lower()


#: The types of the columns etl-craft writes itself, the same text on both warehouses.
ENGINE_COLUMN_TYPES = {
    "PIPELINE_ID": "BIGINT", "PIPELINE_RUN_ID": "BIGINT", "TASK_RUN_ID": "BIGINT", "ROW_ID": "BIGINT",
    "HASH_KEY": "VARCHAR(32)", "CREATE_DATE": "TIMESTAMP WITH TIME ZONE", "CREATED_BY": "VARCHAR(128)",
    "UPDATE_DATE": "TIMESTAMP WITH TIME ZONE", "UPDATED_BY": "VARCHAR(128)", "DELETE_FLAG": "VARCHAR(1)",
    "ACTIVE_FLAG": "VARCHAR(1)", "VALID_FROM": "TIMESTAMP WITH TIME ZONE", "VALID_TO": "TIMESTAMP WITH TIME ZONE",
}


class Dialect:
    """What DuckDB and PostgreSQL share; the subclasses hold the differences."""

    name = ""
    default_schema = ""
    _families: tuple[tuple[re.Pattern[str], Family], ...] = ()
    #: SCD1_MERGE deletes its changed rows and inserts their new versions instead of updating them in place: on a
    #: columnar warehouse (DuckDB) an UPDATE leaves every updated column of every row group it touched to be
    #: rewritten whole at the next checkpoint, which a merge's commit usually is.
    replaces_changed_rows = False

    # -- names and literals ----------------------------------------------------------------------------------

    @staticmethod
    def quote(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def table(self, name: TableName) -> str:
        return ".".join(self.quote(p) for p in (name.catalog, name.schema, name.table) if p)

    def engine_name(self, name: str) -> str:
        """How etl-craft spells an engine-managed column it creates (PIPELINE_RUN_ID, ...)."""
        return name

    @staticmethod
    def literal(value: object) -> str:
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, datetime):
            return f"CAST('{value.isoformat(sep=' ', timespec='microseconds')}' AS TIMESTAMP WITH TIME ZONE)"
        if isinstance(value, date):
            return f"CAST('{value.isoformat()}' AS DATE)"
        return "'" + str(value).replace("'", "''") + "'"

    # -- types -----------------------------------------------------------------------------------------------

    def family(self, type_text: str) -> Family:
        for pattern, family in self._families:
            if pattern.fullmatch(type_text.strip()):
                return family
        return Family.OTHER

    def column(self, name: str, type_text: str) -> Column:
        return Column(name, type_text, self.family(type_text))

    def canonical_text(self, expr: str, column: Column) -> str:
        """SQL for the canonical text of a value of `column`'s type (see docs/guides/sql-tasks.md)."""
        raise NotImplementedError

    def hash_segment(self, expr: str, column: Column) -> str:
        """'N' for NULL, else 'V' <length> ':' <canonical text>: NULL, '' and separators never collide (B22)."""
        text = self.canonical_text(expr, column)
        return (f"CASE WHEN {expr} IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH({text}) AS VARCHAR) || ':' || {text} "
                "END")

    # -- catalog ---------------------------------------------------------------------------------------------

    def columns_sql(self, name: TableName) -> str:
        """(column name, full type) of a table, in column order."""
        raise NotImplementedError

    def scratch_columns_sql(self, scratch: str) -> str:
        raise NotImplementedError

    def relation_sql(self, name: TableName) -> str:
        """(kind, format) of the relation: kind 'table' or 'view'; format 'native' or the storage it uses."""
        raise NotImplementedError

    def schema_exists_sql(self, name: TableName) -> str:
        raise NotImplementedError

    def dependent_views_sql(self, name: TableName) -> str | None:
        """The views that would block dropping the table (None: the warehouse binds views when they are read)."""
        return None

    def create_schema(self, name: TableName) -> str:
        parts = (name.catalog, name.schema)
        return "CREATE SCHEMA IF NOT EXISTS " + ".".join(self.quote(p) for p in parts if p)

    # -- scratch tables --------------------------------------------------------------------------------------

    def scratch(self, scratch: str) -> str:
        """A scratch table as SQL names it: always qualified with the session's temporary schema (B34)."""
        raise NotImplementedError

    def create_scratch(self, scratch: str, query: str) -> str:
        raise NotImplementedError

    def prepare_stage(self, scratch: str, keys: list[str]) -> list[str]:
        """Statements that make joins on `keys` to the scratch table fast (none by default)."""
        return []

    # -- writes ----------------------------------------------------------------------------------------------

    def update_from_stage(self, target: str, stage: str, keys: list[tuple[str, str]],
                          assignments: list[tuple[str, str]], condition: str | None) -> str:
        """One set-based UPDATE of `target` (alias t) joined to `stage` (alias s) on `keys`, (target column, stage
        column) pairs: `assignments` are (target column, expression) pairs; `condition` limits which matched rows
        change. Both warehouses run it as UPDATE ... FROM (S3.G.2); a warehouse without it would render MERGE."""
        sets = ", ".join(f"{self.quote(column)} = {expr}" for column, expr in assignments)
        match = " AND ".join(f"t.{self.quote(a)} = s.{self.quote(b)}" for a, b in keys)
        where = f"{match} AND ({condition})" if condition else match
        return f"UPDATE {target} AS t SET {sets}\n  FROM {stage} AS s\n WHERE {where}"

    def update_absent_from_stage(self, target: str, stage: str, keys: list[tuple[str, str]],
                                 assignments: list[tuple[str, str]], condition: str) -> str:
        """One set-based UPDATE of the `target` rows (alias t) matching `condition` whose key has no row in `stage`
        (alias s): an anti-join, which both warehouses plan as one pass over the target (a hash anti-join on
        PostgreSQL). `keys` and `assignments` as in update_from_stage."""
        sets = ", ".join(f"{self.quote(column)} = {expr}" for column, expr in assignments)
        match = " AND ".join(f"s.{self.quote(b)} = t.{self.quote(a)}" for a, b in keys)
        return (f"UPDATE {target} AS t SET {sets}\n WHERE ({condition})\n"
                f"   AND NOT EXISTS (SELECT 1 FROM {stage} AS s WHERE {match})")

    def clear_table(self, target: str) -> str:
        return f"DELETE FROM {target}"

    def session_setup(self, zone: str) -> str:
        raise NotImplementedError


def _patterns(*pairs: tuple[str, Family]) -> tuple[tuple[re.Pattern[str], Family], ...]:
    return tuple((re.compile(p, re.IGNORECASE), f) for p, f in pairs)


class PostgresDialect(Dialect):
    name = "postgresql"
    default_schema = "public"
    _families = _patterns(
        (r"timestamp(\(\d+\))? with time zone", Family.TIMESTAMPTZ),
        (r"timestamp(\(\d+\))? without time zone", Family.TIMESTAMP),
        (r"date", Family.DATE),
        (r"time(\(\d+\))? without time zone", Family.TIME),
        (r"numeric(\(\d+(,\d+)?\))?", Family.DECIMAL),
        (r"boolean", Family.BOOLEAN),
        (r"real|double precision", Family.FLOAT),
        (r"smallint|integer|bigint", Family.INTEGER),
        (r"text|name|\"char\"|character varying(\(\d+\))?|character(\(\d+\))?", Family.TEXT),
    )

    def engine_name(self, name: str) -> str:
        return name.lower()

    def canonical_text(self, expr: str, column: Column) -> str:
        family = column.family
        if family is Family.TIMESTAMPTZ:
            return f"to_char(({expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
        if family is Family.TIMESTAMP:
            return f"to_char({expr}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"
        if family is Family.DATE:
            return f"to_char({expr}, 'YYYY-MM-DD')"
        if family is Family.TIME:
            return f"to_char({expr}, 'HH24:MI:SS.US')"
        if family is Family.DECIMAL and "(" not in column.type:
            return f"CAST(trim_scale({expr}) AS VARCHAR)"  # no declared scale: 1.50 and 1.5 are one value
        if family is Family.BOOLEAN:
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        return f"CAST({expr} AS VARCHAR)"

    def columns_sql(self, name: TableName) -> str:
        where = f"n.nspname = {self.literal(name.schema)} AND c.relname = {self.literal(name.table)}"
        return self._columns(where)

    def scratch_columns_sql(self, scratch: str) -> str:
        return self._columns(f"n.oid = pg_my_temp_schema() AND c.relname = {self.literal(scratch)}")

    @staticmethod
    def _columns(where: str) -> str:
        return ("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a\n"
                "  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid\n"
                "  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n"
                f" WHERE {where} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum")

    def relation_sql(self, name: TableName) -> str:
        return ("SELECT CASE WHEN c.relkind IN ('r', 'p', 'f') THEN 'table' ELSE 'view' END,\n"
                "       CASE c.relkind WHEN 'f' THEN 'foreign' ELSE 'native' END\n"
                "  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n"
                f" WHERE n.nspname = {self.literal(name.schema)} AND c.relname = {self.literal(name.table)}\n"
                "   AND c.relkind IN ('r', 'p', 'f', 'v', 'm')")

    def create_schema(self, name: TableName) -> str:
        # Two tasks creating their first tables in one new schema at once would both insert it into pg_namespace,
        # and the later one fail on its unique index: they take turns on a transaction advisory lock of the schema.
        lock = f"SELECT pg_advisory_xact_lock(hashtextextended({self.literal('etl-craft schema ' + name.schema)}, 0))"
        return f"{lock}; {super().create_schema(name)}"

    def schema_exists_sql(self, name: TableName) -> str:
        return f"SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = {self.literal(name.schema)}"

    def dependent_views_sql(self, name: TableName) -> str | None:
        table = self.literal(f"{self.quote(name.schema)}.{self.quote(name.table)}")
        return ("SELECT DISTINCT v.oid::regclass::text FROM pg_catalog.pg_depend d\n"
                "  JOIN pg_catalog.pg_rewrite r ON r.oid = d.objid JOIN pg_catalog.pg_class v ON v.oid = r.ev_class\n"
                f" WHERE d.refobjid = {table}::regclass AND v.oid <> d.refobjid ORDER BY 1")

    def scratch(self, scratch: str) -> str:
        return f"pg_temp.{self.quote(scratch)}"

    def create_scratch(self, scratch: str, query: str) -> str:
        return f"CREATE TEMP TABLE {self.quote(scratch)} ON COMMIT DROP AS\n{query}"

    def prepare_stage(self, scratch: str, keys: list[str]) -> list[str]:
        """An index on the merge key and fresh statistics, so the planner joins the stage well (S3.G.2)."""
        columns = ", ".join(self.quote(k) for k in keys)
        return [f"CREATE INDEX ON {self.scratch(scratch)} ({columns})", f"ANALYZE {self.scratch(scratch)}"]

    def clear_table(self, target: str) -> str:
        return f"TRUNCATE TABLE {target}"  # transactional on PostgreSQL: a rollback brings the rows back

    def session_setup(self, zone: str) -> str:
        return f"SET TIME ZONE {self.literal(zone)}"


class DuckDBDialect(Dialect):
    name = "duckdb"
    default_schema = "main"
    replaces_changed_rows = True
    _families = _patterns(
        (r"timestamp with time zone", Family.TIMESTAMPTZ),
        (r"timestamp(_s|_ms|_ns)?", Family.TIMESTAMP),
        (r"date", Family.DATE),
        (r"time", Family.TIME),
        (r"decimal\(\d+,\d+\)", Family.DECIMAL),
        (r"boolean", Family.BOOLEAN),
        (r"float|double|real", Family.FLOAT),
        (r"u?(tinyint|smallint|integer|bigint|hugeint)", Family.INTEGER),
        (r"varchar(\(\d+\))?", Family.TEXT),
    )

    def canonical_text(self, expr: str, column: Column) -> str:
        family = column.family
        if family is Family.TIMESTAMPTZ:
            return f"strftime(timezone('UTC', {expr}), '%Y-%m-%dT%H:%M:%S.%fZ')"
        if family is Family.TIMESTAMP:
            return f"strftime(CAST({expr} AS TIMESTAMP), '%Y-%m-%dT%H:%M:%S.%f')"
        if family is Family.DATE:
            return f"strftime({expr}, '%Y-%m-%d')"
        if family is Family.TIME:
            return f"strftime(DATE '2000-01-01' + {expr}, '%H:%M:%S.%f')"
        if family is Family.BOOLEAN:
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        return f"CAST({expr} AS VARCHAR)"

    def _catalog(self, name: TableName) -> str:
        return self.literal(name.catalog) if name.catalog else "current_database()"

    # The catalog is read from DuckDB's own catalog functions, which its information_schema views are defined over
    # (columns: duckdb_columns() of non-internal columns; tables: duckdb_tables() and the non-internal
    # duckdb_views(); schemata: duckdb_schemas()): the same rows, without binding the views' forty-odd columns,
    # which made each lookup cost about twice as much (and etl-craft test makes five per step).

    def columns_sql(self, name: TableName) -> str:
        return self._columns(self._catalog(name), name.schema, name.table)

    def scratch_columns_sql(self, scratch: str) -> str:
        return self._columns("'temp'", "main", scratch)

    def _columns(self, catalog: str, schema: str, table: str) -> str:
        return ("SELECT column_name, data_type FROM duckdb_columns()\n"
                f" WHERE NOT internal AND database_name = {catalog}"
                f" AND lower(schema_name) = lower({self.literal(schema)})\n"
                f"   AND lower(table_name) = lower({self.literal(table)}) ORDER BY column_index")

    def relation_sql(self, name: TableName) -> str:
        return ("SELECT r.kind, CASE WHEN d.type = 'duckdb' THEN 'native' ELSE lower(d.type) END\n"
                "  FROM (SELECT 'table' AS kind, database_name, schema_name, table_name AS name FROM duckdb_tables()\n"
                "        UNION ALL SELECT 'view', database_name, schema_name, view_name FROM duckdb_views()\n"
                "         WHERE NOT internal) r\n"
                "  JOIN duckdb_databases() d ON d.database_name = r.database_name\n"
                f" WHERE r.database_name = {self._catalog(name)}\n"
                f"   AND lower(r.schema_name) = lower({self.literal(name.schema)})\n"
                f"   AND lower(r.name) = lower({self.literal(name.table)})")

    def schema_exists_sql(self, name: TableName) -> str:
        return (f"SELECT 1 FROM duckdb_schemas() WHERE database_name = {self._catalog(name)}"
                f" AND lower(schema_name) = lower({self.literal(name.schema)})")

    def scratch(self, scratch: str) -> str:
        return f"temp.main.{self.quote(scratch)}"

    def create_scratch(self, scratch: str, query: str) -> str:
        return f"CREATE TEMP TABLE {self.quote(scratch)} AS\n{query}"

    def session_setup(self, zone: str) -> str:
        return f"SET TimeZone = {self.literal(zone)}"


_DIALECTS: dict[str, Dialect] = {"postgresql": PostgresDialect(), "duckdb": DuckDBDialect()}


def dialect_for(name: str) -> Dialect:
    """The dialect of warehouse `name` (duckdb or postgresql); KeyError for any other."""
    return _DIALECTS[name]
