"""etl-craft alerts list: the alerts the Engine DB raised and their delivery attempts, one call of
etlcraft.services.alerts."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services import alerts as service


@click.group("alerts")
def command() -> None:
    """Alerts: what the Engine DB raised (a run failed, an SLA breached, an attempt lost, a gate waiting past its
    threshold, a run recovered) for the rules of CFG_ALERT_RULES, and where each delivery stands."""


@command.command("list")
@click.option("--pipeline-code", "pipeline_code", metavar="P", help="Only the alerts of pipeline P's runs.")
@click.option("--status", type=click.Choice(service.DELIVERY_STATUSES, case_sensitive=False),
              help="Only the alerts with a delivery in this status.")
@format_option
@click.pass_obj
def list_command(ctx: CliContext, pipeline_code: str | None, status: str | None, output_format: str) -> None:
    """List alerts, newest first, each with its deliveries: channel, status (PENDING, DELIVERED or FAILED),
    attempts made, the next attempt due and what the channel last answered. Changes nothing."""
    wanted = status.upper() if status else None
    if ctx.remote:
        doc = ctx.remote.get("/alerts", pipeline_code=pipeline_code, status=wanted)
    else:
        doc = service.list_alerts(ctx.existing_engine_db(), pipeline_code, wanted)
    emit_document(output_format, doc, service.render)
