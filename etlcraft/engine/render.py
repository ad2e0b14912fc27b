"""Render etl-craft's SQL templates (sql/migrations, sql/functions) for one Engine DB dialect."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from etlcraft.core import parameters
from etlcraft.core.errors import error_specs
from etlcraft.core.states import state_machine
from etlcraft.engine.views import views_spec
from etlcraft.paths import sql_dir

if TYPE_CHECKING:
    import jinja2


def sql_literal(value: object) -> str:
    """A SQL literal for a string, number or None."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        raise TypeError("booleans have no portable SQL literal here; use 'Y'/'N'")
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def json_image(columns: Sequence[str], alias: str, overrides: Mapping[str, str] | None = None) -> str:
    """SQLite json_object(...) of a row's columns (upper-case keys), with some values replaced by expressions."""
    pairs = []
    for column in columns:
        expression = (overrides or {}).get(column, f"{alias}.{column}")
        pairs.append(f"'{column}', {expression}")
    lines = [", ".join(pairs[i:i + 3]) for i in range(0, len(pairs), 3)]
    return "json_object(\n      " + ",\n      ".join(lines) + ")"


#: pg_advisory_xact_lock key of the migration lock: the first 8 bytes of sha256("etl-craft:migrate"). The guards of
#: the tables only migrate writes (090_guards) look for it in pg_locks, which shows its high and low 32 bits.
MIGRATE_LOCK_KEY = int.from_bytes(hashlib.sha256(b"etl-craft:migrate").digest()[:8], "big", signed=True)
_MIGRATE_LOCK = {"classid": (MIGRATE_LOCK_KEY >> 32) & 0xFFFFFFFF, "objid": MIGRATE_LOCK_KEY & 0xFFFFFFFF}

#: The mark the fail() macro of sql/functions/_functions.sql.j2 puts before a PostgreSQL refusal statement.
_REFUSAL = re.compile(r"/\*@refuse (EC\d{3})\*/")


def pg_refusals(body: str) -> str:
    """A PL/pgSQL body with each marked refusal statement (`SELECT 'ECnnn: ' || ... INTO v_failure FROM ...;`)
    followed by the RAISE it stands for, when the statement found a row. The RAISE is in the function's own body,
    so the error's context names the function and line only, not the statement that read the message."""
    out: list[str] = []
    pos = 0
    for match in _REFUSAL.finditer(body):
        if match.start() < pos:
            raise ValueError(f"a refusal of {match.group(1)} is inside another refusal statement")
        end = statement_end(body, match.end())
        line_start = body.rfind("\n", 0, match.start()) + 1
        indent = body[line_start:match.start()]
        indent = indent[:len(indent) - len(indent.lstrip())]
        code = match.group(1)
        out += [body[pos:match.start()], body[match.end():end + 1],
                f"\n{indent}IF FOUND THEN\n{indent}  RAISE EXCEPTION USING ERRCODE = '{code}', "
                f"MESSAGE = COALESCE(v_failure, '{code}');\n{indent}END IF;"]
        pos = end + 1
    out.append(body[pos:])
    return "".join(out)


def statement_end(sql: str, start: int) -> int:
    """The index of the `;` that ends the SQL statement going on at `start`: the first one outside quotes, quoted
    names and comments."""
    i = start
    while i < len(sql):
        char = sql[i]
        if char in "'\"":
            i = sql.index(char, i + 1)
            while i + 1 < len(sql) and sql[i + 1] == char:  # a doubled quote stands for itself
                i = sql.index(char, i + 2)
        elif sql.startswith("--", i):
            i = sql.index("\n", i)
        elif sql.startswith("/*", i):
            i = sql.index("*/", i) + 1
        elif char == ";":
            return i
        i += 1
    raise ValueError(f"no ; ends the statement at {sql[start:start + 60]!r}")


@cache
def _retry_defaults() -> dict[str, Any]:
    """The built-in retry policy the retry rule of 020_attempts falls back on: the defaults of the task parameters
    RETRIES, RETRY_DELAY_SECONDS and RETRY_BACKOFF, and the cap on one retry's delay."""
    by_name = parameters.BY_NAME
    return {"retries": int(by_name["RETRIES"].default or 0),
            "delay": int(by_name["RETRY_DELAY_SECONDS"].default or 0),
            "backoff": float(by_name["RETRY_BACKOFF"].default or 1),
            "max_delay": parameters.MAX_RETRY_DELAY_SECONDS}


@cache
def environment() -> jinja2.Environment:
    # Compiling the templates is most of what rendering costs (about half a second per process: migrate, and every
    # SQLite Engine DB process, whose functions are rendered statements). Jinja keeps the compiled code in a folder
    # of the user's own in the system's temporary directory, keyed by each template's source checksum. Jinja2 is
    # imported here: a process that renders nothing (etl-craft test with its cached engine image) does not load it.
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(sql_dir())),
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["sql_literal"] = sql_literal
    env.filters["pg_refusals"] = pg_refusals
    env.globals["sql_literal"] = sql_literal
    env.globals["image"] = json_image
    env.globals["views_spec"] = views_spec  # read when a template calls it: only 080_views does
    return env


def render(template: str, dialect: str, schema: str, *, sqlite_calls: bool = False, **context: Any) -> str:
    """Render one template for `dialect` ('postgresql' or 'sqlite'); on PostgreSQL names are qualified with
    `schema`."""
    pg = dialect == "postgresql"
    text = environment().get_template(template).render(
        pg=pg,
        sqlite=not pg,
        schema=schema,
        S=f"{schema}." if pg else "",
        sm=state_machine(),
        enums=state_machine().enums,
        errors=list(error_specs().values()),
        sqlite_calls=sqlite_calls,
        retry_defaults=_retry_defaults(),
        migrate_lock=_MIGRATE_LOCK,
        **context,
    )
    return text.strip() + "\n"
