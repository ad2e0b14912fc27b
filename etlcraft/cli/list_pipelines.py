"""etl-craft list: the active pipelines with their schedule, task count and state."""

from __future__ import annotations

from collections.abc import Sequence

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.core.zones import schedule_zone
from etlcraft.services.metadata import PipelineView
from etlcraft.services.pipelines import list_document


@click.command("list")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_format: str) -> None:
    """List the active pipelines of the Engine DB: code, name, schedule and its time zone (the pipeline's own, else
    its project's), number of active tasks, and whether the pipeline is active or paused."""
    configured = ctx.configured_timezone()
    pipelines, doc = list_document(ctx.existing_engine_db(), configured)
    emit(output_format, doc, lambda: pipelines_text(pipelines, configured))


def pipelines_text(pipelines: Sequence[PipelineView], configured: str | None) -> str:
    if not pipelines:
        return "no active pipelines; add them in a project migration (migrations/) and run etl-craft migrate"
    several = len({p.project_code for p in pipelines}) > 1
    header = [*(["PROJECT"] if several else []), "PIPELINE", "NAME", "SCHEDULE", "TIMEZONE", "TASKS", "STATE"]
    rows = [[*([p.project_code] if several else []), p.code, p.name or "", p.schedule or "(none)",
             schedule_zone(p.timezone, p.project_zone(configured)) + ("" if p.timezone else " (project)"),
             str(p.task_count), p.state] for p in pipelines]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
