"""Call the Engine DB's write API by name, identically on both dialects.

On PostgreSQL each function is a PL/pgSQL function in the etl-craft schema, called with named arguments. On
SQLite, which has no procedures, the same template renders an ordered statement block that this module runs in
one BEGIN IMMEDIATE transaction, binding arguments and the locals each statement yields (`/* into: ... */`).
Either way the result is a list of typed rows, and a refusal raises the exception class of its ECnnn code.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from typing import Any

import sqlalchemy as sa

from etlcraft.core.actor import current_actor
from etlcraft.engine.db import EngineDB, format_timestamp, sqlite_script_statements
from etlcraft.engine.queries import fetch_all, psycopg_sql
from etlcraft.engine.render import render
from etlcraft.paths import sql_dir

_HEADER = re.compile(r"^-- @(\w+) ?(.*)$")
_INTO = re.compile(r"/\* into: ([\w, ]+) \*/")
_TEMPLATE = re.compile(r"^\d{3}_[a-z0-9_]+\.sql\.j2$")


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: str | None


@dataclass(frozen=True)
class FunctionSpec:
    """One function of the write API, as its template declares it."""

    name: str
    template: str
    args: tuple[Param, ...]
    returns: tuple[tuple[str, str], ...]
    doc: Mapping[str, str]
    statements: tuple[str, ...]  # SQLite only

    def row_type(self) -> type:
        return _row_type(self.name, self.returns)

    @property
    def readonly(self) -> bool:
        """A read of the state machine (ready_tasks, retry_policy): it writes nothing and needs no actor."""
        return "readonly" in self.doc


@cache
def _row_type(name: str, returns: tuple[tuple[str, str], ...]) -> type:
    return namedtuple(f"{name}_row", [field for field, _ in returns])


def _parse_params(text: str) -> tuple[Param, ...]:
    params = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        left, _, default = part.partition(" = ")
        name, type_ = left.split()
        params.append(Param(name, type_, default or None))
    return tuple(params)


def parse_functions(rendered: str, template: str, *, with_statements: bool = False) -> list[FunctionSpec]:
    """The functions declared in one rendered template: their headers, and with `with_statements` the statement
    blocks of a template rendered for SQLite calls."""
    specs: list[FunctionSpec] = []
    current: dict[str, str] | None = None
    body: list[str] = []
    key = ""
    for line in rendered.splitlines():
        header = _HEADER.match(line)
        if header and header.group(1) == "function":
            current, body, key = {"function": header.group(2)}, [], "function"
        elif header and current is not None and header.group(1) == "end":
            statements = tuple(sqlite_script_statements("\n".join(body))) if with_statements else ()
            specs.append(FunctionSpec(
                name=current["function"], template=template, args=_parse_params(current.get("args", "")),
                returns=tuple((r.split()[0], r.split()[1]) for r in current.get("returns", "").split(", ") if r),
                doc={k: v for k, v in current.items() if k not in ("function", "args", "returns")},
                statements=statements,
            ))
            current = None
        elif header and current is not None:
            key = header.group(1)
            current[key] = header.group(2)
        elif current is not None and line.startswith("--   ") and key:
            current[key] += "\n" + line[5:]
        elif current is not None:
            key = ""
            body.append(line)
    return specs


def function_templates() -> list[str]:
    return sorted(p.name for p in (sql_dir() / "functions").glob("*.sql.j2") if _TEMPLATE.match(p.name))


@cache
def function_specs(dialect: str) -> dict[str, FunctionSpec]:
    """Every function of the write API, by name, for `dialect`."""
    specs: dict[str, FunctionSpec] = {}
    for template in function_templates():
        rendered = render(f"functions/{template}", dialect, "etl_craft", sqlite_calls=dialect == "sqlite", tables=[])
        for spec in parse_functions(rendered, template, with_statements=dialect == "sqlite"):
            specs[spec.name] = spec
    return specs


def call(db: EngineDB, name: str, /, **arguments: Any) -> list[Any]:
    """Call the write-API function `name` in its own transaction, as the current actor; typed rows back."""
    if _alone(db):
        return _call_alone(db, None, name, arguments)
    with db.write(mark=False) as conn:
        return call_in(db, conn, name, **arguments)


def read_then_call(db: EngineDB, query: str, params: Mapping[str, Any], name: str, /,
                   **arguments: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """Read the named query `query` with `params`, then call the write-API function `name`, in one transaction: on
    PostgreSQL in one round trip (pipeline mode: both statements go before either answer is read, and the server
    runs them as one implicit transaction), elsewhere as a read then the call in one write transaction. The read's
    rows (as fetch_all gives them) and the call's typed rows; a refused call raises as call() does, and the read is
    lost with it. A supervisor hands an attempt to its spare task process this way: the attempt's context read and
    start_attempt in one round trip instead of two."""
    if not _alone(db) or not _pipelines():
        with db.write(mark=False) as conn:
            return fetch_all(db, conn, query, **params), call_in(db, conn, name, **arguments)
    spec = _checked(db, name, arguments)
    with db.single_statement() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        with driver.pipeline():
            read = driver.execute(psycopg_sql(query, db.schema), dict(params), prepare=True)
            called = driver.execute(_pg_statement(db.schema, name, tuple(arguments)), _pg_values(arguments),
                                    prepare=True)
        names = [column.name.lower() for column in read.description or ()]
        rows = [dict(zip(names, row, strict=True)) for row in read.fetchall()]
        return rows, _typed_rows(spec, called.fetchall(), db.dialect)


@cache
def _pipelines() -> bool:
    """Whether psycopg's libpq has pipeline mode; imported here, for a PostgreSQL Engine DB only (`etl-craft test`
    and a SQLite Engine DB never load the driver)."""
    import psycopg

    return bool(psycopg.Pipeline.is_supported())


def call_on(db: EngineDB, conn: sa.Connection, name: str, /, **arguments: Any) -> list[Any]:
    """Call `name` in its own transaction on a connection the caller keeps open (a worker's loop)."""
    if _alone(db):
        return _call_alone(db, conn, name, arguments)
    with db.transaction(conn, mark=False):
        return call_in(db, conn, name, **arguments)


def call_in(db: EngineDB, conn: sa.Connection, name: str, /, **arguments: Any) -> list[Any]:
    """Call `name` inside a write transaction the caller holds (db.write())."""
    spec = _checked(db, name, arguments)
    rows = _call_postgres(db, conn, spec, arguments) if db.is_postgres else _call_sqlite(conn, spec, arguments)
    return _typed_rows(spec, rows, db.dialect)


def _alone(db: EngineDB) -> bool:
    """A call in its own transaction on PostgreSQL is one statement, so it is sent as its own transaction: one round
    trip instead of BEGIN, the call and COMMIT. Not with a pinned clock, which a transaction marks (db.transaction)."""
    return db.is_postgres and db.clock.pinned is None


def _call_alone(db: EngineDB, conn: sa.Connection | None, name: str, arguments: Mapping[str, Any]) -> list[Any]:
    spec = _checked(db, name, arguments)
    with db.single_statement(conn) as statement_conn:
        rows = _call_postgres(db, statement_conn, spec, arguments)
    return _typed_rows(spec, rows, db.dialect)


def _checked(db: EngineDB, name: str, arguments: Mapping[str, Any]) -> FunctionSpec:
    return _checked_names(db.dialect, name, tuple(arguments))


@cache
def _checked_names(dialect: str, name: str, argument_names: tuple[str, ...]) -> FunctionSpec:
    """The function `name` once its call's argument names are known to fit it; remembered per call shape, since a
    worker's loop makes the same calls thousands of times."""
    spec = function_specs(dialect).get(name)
    if spec is None:
        raise KeyError(f"the Engine DB has no function {name!r}")
    known = {p.name for p in spec.args}
    unknown = sorted(set(argument_names) - known)
    if unknown:
        raise TypeError(f"{name}() has no argument {unknown[0]!r}; it takes {', '.join(sorted(known))}")
    missing = [p.name for p in spec.args if p.default is None and p.name not in argument_names]
    if missing:
        raise TypeError(f"{name}() needs the argument {missing[0]!r}")
    return spec


def _typed_rows(spec: FunctionSpec, rows: list[Any], dialect: str) -> list[Any]:
    if not rows:
        return []
    row_type = spec.row_type()
    converted = _converted_columns(dialect, spec.returns)
    if not converted:
        return [row_type(*row) for row in rows]
    typed = []
    for row in rows:
        values = list(row)
        for index, type_ in converted:
            values[index] = _typed(values[index], type_)
        typed.append(row_type(*values))
    return typed


@cache
def _converted_columns(dialect: str, returns: tuple[tuple[str, str], ...]) -> tuple[tuple[int, str], ...]:
    """The columns whose driver value _typed() changes. psycopg already hands back int, bool and date for those
    types; only a timestamptz, in the session's zone, is moved to UTC. SQLite's text and integers need all."""
    changed = ("timestamptz",) if dialect == "postgresql" else ("timestamptz", "date", "bool", "bigint", "int")
    return tuple((index, type_) for index, (_, type_) in enumerate(returns) if type_ in changed)


def _call_postgres(db: EngineDB, conn: sa.Connection, spec: FunctionSpec, arguments: Mapping[str, Any]) -> list[Any]:
    """SELECT * FROM schema.name(p_x => %(x)s, ..., p_actor => ...): the function marks the transaction itself.

    Sent on the psycopg connection as a prepared statement: this is the hot path of every claim and finish, and it
    skips SQLAlchemy's statement handling.
    """
    driver = conn.connection.driver_connection
    assert driver is not None
    cursor = driver.execute(_pg_statement(db.schema, spec.name, tuple(arguments)), _pg_values(arguments), prepare=True)
    return cursor.fetchall()


def _pg_values(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a _pg_statement call: the arguments, and the current actor, who marks the transaction."""
    actor = current_actor()
    return {**arguments, "_actor": actor.name, "_actor_kind": str(actor.kind)}


@cache
def _pg_statement(schema: str, name: str, argument_names: tuple[str, ...]) -> str:
    named = [f"p_{k} => %({k})s" for k in argument_names] + ["p_actor => %(_actor)s", "p_actor_kind => %(_actor_kind)s"]
    return f"SELECT * FROM {schema}.{name}({', '.join(named)})"


def _call_sqlite(conn: sa.Connection, spec: FunctionSpec, arguments: Mapping[str, Any]) -> list[Any]:
    """Run the rendered statements in order on the caller's BEGIN IMMEDIATE transaction."""
    params: dict[str, Any] = {f"p_{p.name}": _sqlite_default(p) for p in spec.args}
    params.update({f"p_{k}": _sqlite_value(v) for k, v in arguments.items()})
    params["p_actor"], params["p_actor_kind"] = current_actor().name, str(current_actor().kind)
    dbapi = conn.connection.driver_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    rows: list[Any] = []
    try:
        for statement in spec.statements:
            cursor.execute(statement, params)
            rows = cursor.fetchall() if cursor.description else []
            into = _INTO.search(statement)
            if into:
                names = [n.strip() for n in into.group(1).split(",")]
                values = rows[0] if rows else (None,) * len(names)
                params.update(zip(names, values, strict=True))
    finally:
        cursor.close()
    return rows


def _sqlite_default(param: Param) -> Any:
    if param.default is None or param.default.upper() == "NULL":
        return None
    if param.default.startswith("'"):
        return param.default.strip("'")
    return int(param.default) if param.default.lstrip("-").isdigit() else param.default


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bool):
        return "Y" if value else "N"
    return value


def _typed(value: Any, type_: str) -> Any:
    """A column value as Python: SQLite hands back text for times and dates, PostgreSQL a session-zone time."""
    if value is None:
        return None
    if type_ == "timestamptz":
        stamp = datetime.fromisoformat(value) if isinstance(value, str) else value
        return stamp.astimezone(UTC)
    if type_ == "date":
        return date.fromisoformat(value) if isinstance(value, str) else value
    if type_ == "bool":
        return value in (True, 1, "Y", "t", "true")
    if type_ in ("bigint", "int"):
        return int(value)
    return value
