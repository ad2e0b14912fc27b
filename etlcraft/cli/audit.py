"""etl-craft audit: who asked for what, and who changed which metadata, newest first."""

from __future__ import annotations

from datetime import datetime

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services import audit as service


@click.command("audit")
@click.option("--pipeline-code", "pipeline_code", metavar="P",
              help="Only the requests naming pipeline P and the changes to its metadata rows.")
@click.option("--since", type=click.DateTime(formats=["%Y-%m-%d"]), metavar="YYYY-MM-DD",
              help="Only entries from this day on (00:00 UTC).")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str | None, since: datetime | None, output_format: str) -> None:
    """List the recorded requests (AUD_ACTIONS: command, actor, pipeline, run and arguments) and the metadata
    changes (AUD_METADATA_CHANGES: operation, table, row, actor and migration), newest first. Changes nothing."""
    day = since.date() if since else None
    if ctx.remote:
        doc = ctx.remote.get("/audit", pipeline_code=pipeline_code, since=day.isoformat() if day else None)
    else:
        doc = service.to_json(service.audit(ctx.existing_engine_db(), service.AuditRequest(pipeline_code, day)))
    emit_document(output_format, doc, service.render)
