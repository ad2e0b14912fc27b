"""etl-craft init-db: create or upgrade the Engine DB's schema."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.migrate import report_document, report_text
from etlcraft.cli.output import emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.engine.migrations import migrate


@click.command("init-db")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_format: str) -> None:
    """Create the Engine DB's tables, functions and triggers, or bring them up to date.

    Safe to run again: a second run changes nothing. Project metadata migrations are applied by
    `etl-craft migrate`.
    """
    actor = ctx.actor()
    db = ctx.engine_db()
    with acting_as(actor):
        report = migrate(db, command="init-db")
    emit(output_format, report_document(db.display_url, report), lambda: report_text(db.display_url, report))
