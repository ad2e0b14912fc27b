"""etl-craft engine copy --to URL: move the project's Engine DB to another database with what its next runs need."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.config.loader import resolve_variable
from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB
from etlcraft.services.engine_copy import copy_engine, describe, target_db, to_json


@click.group("engine")
def group() -> None:
    """Act on the project's Engine DB as a whole: copy what its next runs need into another database (moving from
    SQLite to PostgreSQL, for example)."""


@group.command("copy")
@click.option("--to", "to_url", required=True, metavar="URL",
              help="The target Engine DB, new and empty: postgresql://user@host:5432/db or sqlite:///path (no password "
                   "in it).")
@click.option("--to-schema", metavar="NAME", help="The target's PostgreSQL schema [default: etl_craft].")
@click.option("--to-secret", metavar="VARIABLE",
              help="The variable that holds the target's password (the environment, then the project's .env), as "
                   "Engine.secret in craft-connector.yml. Without it, libpq finds the password (.pgpass).")
@format_option
@click.pass_obj
def copy(ctx: CliContext, to_url: str, to_schema: str | None, to_secret: str | None, output_format: str) -> None:
    """Copy what the next runs need from the project's Engine DB into a new one: the target is migrated (engine and
    project migrations, as etl-craft migrate does), then given each ingestion task's last offset, each warehouse
    target's hash version and each open pipeline pause, in one transaction, and the copy is recorded in both
    databases' AUD_ACTIONS. Run history is not copied (runs enter an Engine DB only through its state machine):
    it stays in the source. Then set the Engine section of craft-connector.yml to the target.

    Exit codes: 0 copied; 3 --to or --to-secret is not usable; 4 an Engine DB cannot be reached; 5 the source has
    migrations to apply first, or the target's differ; 24 refused: the target is not fresh (it has runs, offsets,
    hash versions or pauses), is the source, or the source has a run that has not ended. A refusal writes nothing.
    """
    config = ctx.config()
    password = resolve_variable(to_secret, config.env, ctx.project_dir) if to_secret else None
    source = ctx.existing_engine_db()
    target = target_db(to_url, to_schema, password)
    try:
        with acting_as(ctx.actor()):
            outcome = copy_engine(source, target, ctx.project_dir, _progress)
    finally:
        target.dispose()
    emit(output_format, to_json(outcome), lambda: "\n".join([*describe(outcome), _next(target, to_secret)]))


def _progress(what: str, done: int, total: int) -> None:
    click.echo(f"engine copy: {what} {done:,} of {total:,}", err=True)


def _next(target: EngineDB, secret: str | None) -> str:
    """What to write in craft-connector.yml to use the target."""
    if target.is_postgres:
        where = (f"dialect: postgresql, url: {target.url._replace(password=None).render_as_string()}"
                 + (f", secret: {secret}" if secret else "") + f", schema: {target.schema}")
    else:
        where = f"dialect: sqlite, path: {target.url.database}"
    return f"next: set Engine in craft-connector.yml to the target ({where}), then run etl-craft doctor"
