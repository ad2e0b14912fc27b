"""etl-craft schedule list: each pipeline's schedule, its next ticks and its last run."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.services.server import schedule_json, schedule_list, schedule_text


@click.group("schedule")
def command() -> None:
    """The schedules etl-craft server runs pipelines on."""


@command.command("list")
@click.option("--count", type=click.IntRange(1, 100), default=3, show_default=True, help="Ticks to show per pipeline.")
@format_option
@click.pass_obj
def list_schedules(ctx: CliContext, count: int, output_format: str) -> None:
    """Each scheduled pipeline: its cron expression and time zone, its next ticks in local time and UTC (with the
    run date each gets), whether it is paused, and its last run."""
    views = schedule_list(ctx.existing_engine_db(), ctx.config(), count)
    emit(output_format, schedule_json(views), lambda: schedule_text(views))
