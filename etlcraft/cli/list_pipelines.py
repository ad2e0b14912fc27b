"""etl-craft list: the active pipelines with their schedule, task count and state."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services.pipelines import list_document


@click.command("list")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_format: str) -> None:
    """List the active pipelines of the Engine DB: code, name, schedule and its time zone (the pipeline's own, else
    its project's), number of active tasks, and whether the pipeline is active or paused. Every project's, with a
    PROJECT column when there are several; with the global --project-code (ETL_CRAFT_PROJECT_CODE), that
    project's only."""
    if ctx.remote:
        doc = ctx.remote.get("/pipelines")  # with --project-code, Remote sends ?project=
    else:
        doc = list_document(ctx.existing_engine_db(), ctx.configured_timezone(), ctx.project_code)[1]
    emit_document(output_format, doc, pipelines_text)


def pipelines_text(doc: dict[str, Any]) -> str:
    """etl-craft/pipelines/1 as a table; a pipeline's schedule is read in its own zone, else its project's."""
    pipelines = doc["pipelines"]
    if not pipelines:
        return "no active pipelines; add them in a project migration (migrations/) and run etl-craft migrate"
    several = len({p["project"] for p in pipelines}) > 1
    header = [*(["PROJECT"] if several else []), "PIPELINE", "NAME", "SCHEDULE", "TIMEZONE", "TASKS", "STATE"]
    rows = [[*([p["project"]] if several else []), p["code"], p["name"] or "", p["schedule"] or "(none)",
             _zone_text(p), str(p["tasks"]), p["state"]] for p in pipelines]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])


def _zone_text(p: dict[str, Any]) -> str:
    zone = p["timezone"] if p["timezone"] is not None else p["project_timezone"]
    return str(zone) + ("" if p["timezone"] else " (project)")
