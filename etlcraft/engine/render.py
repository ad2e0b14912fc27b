"""Render etl-craft's SQL templates (sql/migrations, sql/functions) for one Engine DB dialect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2

from etlcraft.core import parameters
from etlcraft.core.errors import error_specs
from etlcraft.core.states import state_machine
from etlcraft.engine.views import views_spec
from etlcraft.paths import sql_dir


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
    # of the user's own in the system's temporary directory, keyed by each template's source checksum.
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
        **context,
    )
    return text.strip() + "\n"
