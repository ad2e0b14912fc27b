"""Why the Engine DB refused a statement of a project migration, in words: the file, the statement, the table and
column, the value, what the column takes and the fix.

A refusal is read from the driver's error (SQLite's message text, PostgreSQL's diagnostics: constraint, table and
column names), the constraint's own definition in the Engine DB's catalog (a CHECK's value list is the one the
database enforces, which tests keep equal to sql/state_machine.yaml), and the rows the statement would have written,
read again after the statement was rolled back to its savepoint.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
import sqlglot
from sqlglot import exp

from etlcraft.core import parameters
from etlcraft.core.errors import EngineRuleError, EtlCraftError, MigrationError
from etlcraft.core.sqltext import SQLGLOT_DIALECTS, Statement
from etlcraft.engine.catalog import owned_tables
from etlcraft.engine.db import EngineDB

_SQLITE = re.compile(r"^(CHECK|UNIQUE|NOT NULL|FOREIGN KEY) constraint failed(?::\s*(.*))?$", re.DOTALL)
_PG_KINDS = {"23514": "CHECK", "23505": "UNIQUE", "23502": "NOT NULL", "23503": "FOREIGN KEY"}
_LITERAL = re.compile(r"'((?:[^']|'')*)'")
_FIRST_NAME = re.compile(r"^[\s(]*([A-Za-z_]\w*)")
_PG_KEY = re.compile(r"Key \((.*?)\)=\((.*)\)")
_SHOWN = 5  # values named in a message at most
_NOTHING_KEPT = "nothing of this migration was applied (a migration is one transaction)"
_AGAIN = "correct the file (it was not applied, so it may still change) and run etl-craft migrate again"
_FIX_SQL = "in the file (it was not applied, so it may still change) and run etl-craft migrate again"


@dataclass(frozen=True)
class _Violation:
    kind: str  # CHECK, UNIQUE, NOT NULL, FOREIGN KEY, or SQL for any other error
    table: str  # upper case; the statement's table when the error does not name one
    constraint: str | None
    columns: tuple[str, ...]
    message: str  # the database's own words
    detail: str | None = None


def refusal(db: EngineDB, conn: sa.Connection, source: str, statement: Statement, exc: BaseException,
            state: Any = None) -> EtlCraftError:
    """The error to raise for `statement` of migration `source`, refused with `exc` and already rolled back to its
    savepoint (the transaction can still read). A refusal by one of the Engine DB's own rules (an ECnnn code)
    keeps its class and exit code; every other one is a MigrationError."""
    mapped = db.map_error(exc, state)
    where = _where(source, statement)
    if isinstance(mapped, EngineRuleError):
        return type(mapped)(f"{where}: {mapped}; {_NOTHING_KEPT}")
    tree = _parse(db, statement.text)
    table = _target(tree)
    violation = _violation(exc, table)
    try:
        explained = _explain(db, conn, violation, tree)
    except (sa.exc.DBAPIError, sqlite3.Error, sqlglot.errors.SqlglotError):
        explained = None  # the statement cannot be read again: say what the database said
    if explained is None:
        explained = f"the Engine DB refused it: {violation.message}; {_AGAIN}"
    return MigrationError(f"{where} was refused: {explained}; {_NOTHING_KEPT}")


def _where(source: str, statement: Statement) -> str:
    first = statement.text.strip().splitlines()[0].strip() if statement.text.strip() else ""
    first = first if len(first) <= 100 else first[:97] + "..."
    return f"{source}, statement {statement.number} (line {statement.line}: {first})"


def _parse(db: EngineDB, text: str) -> exp.Expression | None:
    try:
        tree = sqlglot.parse_one(text, read=SQLGLOT_DIALECTS[db.dialect])
        return tree if isinstance(tree, exp.Expression) else None
    except sqlglot.errors.SqlglotError:
        return None


def _target(tree: exp.Expression | None) -> str:
    target = tree.this if isinstance(tree, exp.Insert | exp.Update | exp.Delete) else None
    table = target.find(exp.Table) if isinstance(target, exp.Expression) else None
    if isinstance(target, exp.Table):
        table = target
    return table.name.upper() if table is not None else ""


def _violation(exc: BaseException, table: str) -> _Violation:
    orig = getattr(exc, "orig", None) or exc
    diag = getattr(orig, "diag", None)
    if diag is not None:  # psycopg
        kind = _PG_KINDS.get(getattr(orig, "sqlstate", None) or "", "SQL")
        found_table = (diag.table_name or table).upper()
        columns: tuple[str, ...] = (diag.column_name.upper(),) if diag.column_name else ()
        key = _PG_KEY.search(diag.message_detail or "")
        if key and not columns:
            columns = tuple(c.strip().upper() for c in key.group(1).split(","))
        return _Violation(kind, found_table, diag.constraint_name, columns, diag.message_primary or str(orig),
                          diag.message_detail)
    text = str(orig).strip()
    match = _SQLITE.match(text)
    if match is None:
        return _Violation("SQL", table, None, (), text)
    kind, rest = match.group(1), (match.group(2) or "").strip()
    if kind == "CHECK":
        return _Violation(kind, table, rest or None, (), text)
    named = [c.strip() for c in rest.split(",") if c.strip()]
    columns = tuple(c.split(".")[-1].upper() for c in named)
    found_table = named[0].split(".")[0].upper() if named and "." in named[0] else table
    return _Violation(kind, found_table, None, columns, text)


def _explain(db: EngineDB, conn: sa.Connection, v: _Violation, tree: exp.Expression | None) -> str | None:
    if v.kind == "CHECK" and v.constraint:
        return _check(db, conn, v, tree)
    if v.kind == "UNIQUE":
        return _unique(db, conn, v, tree)
    if v.kind == "NOT NULL" and v.columns:
        column = v.columns[0]
        return (f"{v.table}.{column} would be NULL in a row it writes, and {column} needs a value; give it one (an "
                f"INSERT ... SELECT whose subquery finds no row gives NULL too); {_AGAIN}")
    if v.kind == "FOREIGN KEY":
        return _foreign_key(db, conn, v, tree)
    if v.kind == "SQL":
        return _sql_error(db, conn, v)
    return None


# -- CHECK ---------------------------------------------------------------------------------------------------------

def _check(db: EngineDB, conn: sa.Connection, v: _Violation, tree: exp.Expression | None) -> str:
    name = str(v.constraint)
    definition = _check_definition(db, conn, v.table, name)
    column = _first_name(definition) if definition else None
    rule = f"CHECK {name} of {v.table}"
    if definition is None or column is None:
        return f"a row breaks {rule}; {_AGAIN}"
    values = _value_set(definition)
    found = _column_values(db, conn, tree, column)
    if values is not None:
        bad = [x for x in found if x not in values] or found
        return (f"{v.table}.{column} {_is(bad)}, which {rule} refuses; {column} takes one of "
                f"{', '.join(values)} (spelled exactly so: case counts); write one of them and run etl-craft migrate "
                "again")
    if name.endswith("_is_identifier"):
        bad = [x for x in found if not (isinstance(x, str) and parameters.CODE.match(x))] or found
        return (f"{v.table}.{column} {_is(bad)}, which {rule} refuses: a code is "
                f"{parameters.IDENTIFIER_EXPECTED}; rename it, e.g. {_suggest(bad)}, and run etl-craft migrate again")
    if name == "not_self_dependent":
        other = "DEPENDS_ON_PIPELINE_ID" if v.table == "CFG_PIPELINE_DEPENDENCY" else "DEPENDS_ON_TASK_ID"
        rows = _rows(db, conn, tree)
        owner = _name_of(db, conn, column, rows[0].get(column)) if rows else None
        what = "a pipeline" if other == "DEPENDS_ON_PIPELINE_ID" else "a task"
        subject = owner or what
        return (f"a {v.table} row makes {subject} wait for itself ({column} = {other}), which {rule} refuses; "
                f"name another {what.split()[1]} as the upstream, or leave the row out")
    return (f"a row breaks {rule}: {definition}; {v.table}.{column} {_is(found)}; change the row so that the rule "
            f"holds; {_AGAIN}")


def _check_definition(db: EngineDB, conn: sa.Connection, table: str, name: str) -> str | None:
    """The condition of CHECK `name` on `table` as the catalog holds it, without the CHECK keyword."""
    if db.is_postgres:
        found = conn.execute(sa.text(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " WHERE n.nspname = :schema AND t.relname = :table AND c.conname = :name AND c.contype = 'c'"),
            {"schema": db.schema, "table": table.lower(), "name": name}).scalar()
        text = str(found or "")
        return _balanced(text, text.upper().find("CHECK") + 5) if found else None
    sql = conn.execute(sa.text("SELECT sql FROM sqlite_master WHERE type = 'table' AND upper(name) = :table"),
                       {"table": table}).scalar()
    match = re.search(rf"\bCONSTRAINT\s+{re.escape(name)}\s+CHECK\s*", str(sql or ""), re.IGNORECASE)
    return _balanced(str(sql), match.end()) if match else None


def _balanced(text: str, start: int) -> str | None:
    """The text inside the parentheses that open at or after `start` (string literals skipped)."""
    begin = text.find("(", start)
    if begin < 0:
        return None
    depth, quoted = 0, False
    for i in range(begin, len(text)):
        if text[i] == "'":
            quoted = not quoted
        elif not quoted and text[i] in "()":
            depth += 1 if text[i] == "(" else -1
            if depth == 0:
                return text[begin + 1:i].strip()
    return None


def _first_name(definition: str) -> str | None:
    match = _FIRST_NAME.match(definition)
    return match.group(1).upper() if match else None


def _value_set(definition: str) -> tuple[str, ...] | None:
    """The values of a value-set CHECK (COL IN ('A', 'B'), or PostgreSQL's = ANY (ARRAY[...]) and '{A,B}' forms)."""
    if not re.search(r"\bIN\s*\(|=\s*ANY\s*\(", definition, re.IGNORECASE):
        return None
    values = [v.replace("''", "'") for v in _LITERAL.findall(definition)]
    if len(values) == 1 and values[0].startswith("{") and values[0].endswith("}"):
        values = [x.strip('"') for x in values[0][1:-1].split(",")]
    return tuple(values) or None


# -- UNIQUE ----------------------------------------------------------------------------------------------------------

def _unique(db: EngineDB, conn: sa.Connection, v: _Violation, tree: exp.Expression | None) -> str:
    columns = v.columns
    rows = _rows(db, conn, tree)
    key = ", ".join(columns)
    taken = []
    for row in rows:
        if all(c in row for c in columns):
            parts = [_shown(db, conn, c, row[c]) for c in columns]
            text = ", ".join(parts)
            if text not in taken:
                taken.append(text)
    if not taken and v.detail:
        taken = [v.detail]
    noun = {"CFG_TASKS": "task code", "CFG_PIPELINES": "pipeline code", "CFG_TASK_PARAMETERS": "parameter",
            "CFG_TASK_DEPENDENCY": "dependency", "CFG_PIPELINE_DEPENDENCY": "dependency"}.get(v.table, "row")
    found = f" ({'; '.join(taken[:_SHOWN])})" if taken else ""
    fix = ("give the new row a code of its own, or change the existing row with an UPDATE"
           if noun.endswith("code") else "change the existing row with an UPDATE instead of inserting it again")
    return (f"{v.table} already has an active row with these values of ({key}){found}, and an active "
            f"{noun} is unique there (it may come from an earlier migration or an earlier statement of this "
            f"file); {fix}")


# -- FOREIGN KEY -----------------------------------------------------------------------------------------------------

def _foreign_keys(db: EngineDB, conn: sa.Connection, table: str) -> list[tuple[str, str, str]]:
    """(column, parent table, parent column) of each foreign key of `table`, upper case."""
    if db.is_postgres:
        rows = conn.execute(sa.text(
            "SELECT a.attname, ct.relname, af.attname FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
            " JOIN pg_class ct ON ct.oid = c.confrelid"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]"
            " JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1]"
            " WHERE c.contype = 'f' AND n.nspname = :schema AND t.relname = :table ORDER BY c.conname"),
            {"schema": db.schema, "table": table.lower()}).all()
        return [(str(a).upper(), str(b).upper(), str(c).upper()) for a, b, c in rows]
    rows = conn.exec_driver_sql(f'PRAGMA foreign_key_list("{table}")').all()
    return [(str(r[3]).upper(), str(r[2]).upper(), str(r[4]).upper()) for r in rows]


def _foreign_key(db: EngineDB, conn: sa.Connection, v: _Violation, tree: exp.Expression | None) -> str:
    rows = _rows(db, conn, tree)
    for column, parent, parent_column in _foreign_keys(db, conn, v.table):
        for row in rows:
            value = row.get(column)
            if value is None or column not in row:
                continue
            exists = conn.execute(sa.text(f"SELECT 1 FROM {db.qualify(parent)} WHERE {parent_column} = :v"),
                                  {"v": value}).first()
            if exists is None:
                code = parent_column.removesuffix("_ID") + "_CODE"
                return (f"{v.table}.{column} is {value!r}, which names no row of {parent} (FOREIGN KEY to "
                        f"{parent}.{parent_column}); look the id up instead of writing it: INSERT ... SELECT "
                        f"{parent_column} FROM {parent} WHERE {code} = '...'")
    if isinstance(tree, exp.Delete | exp.Update):
        return (f"a {v.table} row it deletes or changes is still named by another table (FOREIGN KEY); switch the "
                "row off with UPDATE ... SET ACTIVE_FLAG = 'N' instead of deleting it")
    return f"a row names an id that no row has (FOREIGN KEY of {v.table}); look ids up by their codes; {_AGAIN}"


# -- other SQL errors ------------------------------------------------------------------------------------------------

def _sql_error(db: EngineDB, conn: sa.Connection, v: _Violation) -> str:
    said = v.message
    lower = said.lower()
    # CFG_API_TOKENS is written by etl-craft token only, never by a project migration.
    tables = [t for t in owned_tables(db, conn) if t.name.startswith("CFG_") and t.name != "CFG_API_TOKENS"]
    if "no such table" in lower or ("relation" in lower and "does not exist" in lower and "column" not in lower):
        return (f"the Engine DB refused it: {said}; the metadata tables are {', '.join(t.name for t in tables)}; "
                f"correct the table name {_FIX_SQL}")
    if "column" in lower:
        own = next((t for t in tables if t.name == v.table), None)
        known = f"; {own.name} has the columns {', '.join(own.columns)}" if own else ""
        return f"the Engine DB refused it: {said}{known}; correct the column name {_FIX_SQL}"
    return f"the Engine DB refused it: {said}; {_AGAIN}"


# -- the rows a statement writes -------------------------------------------------------------------------------------

def _rows(db: EngineDB, conn: sa.Connection, tree: exp.Expression | None) -> list[dict[str, Any]]:
    """The column values the statement writes, row by row (an INSERT's VALUES or SELECT, an UPDATE's SET),
    evaluated by the Engine DB as it was before the statement; [] when it cannot be read."""
    dialect = SQLGLOT_DIALECTS[db.dialect]
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        names = [c.name.upper() for c in tree.this.expressions]
        source = tree.expression
        if isinstance(source, exp.Values):
            rows = []
            for row in source.expressions:
                select = exp.select(*[e.copy() for e in row.expressions])
                found = conn.execute(sa.text(select.sql(dialect=dialect))).first()
                rows.append(dict(zip(names, found or (), strict=False)))
            return rows
        if isinstance(source, exp.Select):
            return [dict(zip(names, r, strict=False)) for r in conn.execute(sa.text(source.sql(dialect=dialect)))]
        return []
    if isinstance(tree, exp.Update):
        sets = [e for e in tree.expressions if isinstance(e, exp.EQ)]
        names = [e.this.name.upper() for e in sets]
        select = exp.select(*[e.expression.copy() for e in sets]).from_(tree.this.copy())
        where = tree.args.get("where")
        if where is not None:
            select = select.where(where.this.copy())
        return [dict(zip(names, r, strict=False)) for r in conn.execute(sa.text(select.sql(dialect=dialect)))]
    return []


def _column_values(db: EngineDB, conn: sa.Connection, tree: exp.Expression | None, column: str) -> list[Any]:
    found: list[Any] = []
    for row in _rows(db, conn, tree):
        if column in row and row[column] not in found:
            found.append(row[column])
    return found


def _is(values: Sequence[Any]) -> str:
    if not values:
        return "has a value"
    shown = ", ".join(repr(x) if x is not None else "NULL" for x in values[:_SHOWN])
    return f"is {shown}" if len(values) == 1 else f"is one of {shown}"


def _suggest(values: Sequence[Any]) -> str:
    text = str(values[0]) if values and values[0] is not None else "new_code"
    fixed = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "new_code"
    return repr(fixed if fixed[0].isalpha() else f"x_{fixed}")


def _name_of(db: EngineDB, conn: sa.Connection, column: str, value: Any) -> str | None:
    """'task customer_totals' for TASK_ID 7, 'pipeline shop_ingest' for PIPELINE_ID 1; None when unknown."""
    kind = column.removeprefix("DEPENDS_ON_").removesuffix("_ID")
    if kind not in ("TASK", "PIPELINE", "PROJECT") or value is None:
        return None
    table = {"TASK": "CFG_TASKS", "PIPELINE": "CFG_PIPELINES", "PROJECT": "CFG_PROJECTS"}[kind]
    code = conn.execute(sa.text(f"SELECT {kind}_CODE FROM {db.qualify(table)} WHERE {kind}_ID = :v"),
                        {"v": value}).scalar()
    return f"{kind.lower()} {code}" if code is not None else None


def _shown(db: EngineDB, conn: sa.Connection, column: str, value: Any) -> str:
    named = _name_of(db, conn, column, value)
    return f"{column} = {value!r}" + (f" ({named})" if named else "")
