"""etl-craft show: one pipeline's tasks, parameters, dependencies and derived graph."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.core.zones import ProjectZone
from etlcraft.services.metadata import PipelineDetail, TaskEdge
from etlcraft.services.pipelines import pipeline_document, pipeline_page
from etlcraft.services.redaction import masked_parameters


@click.command("show")
@click.option("--pipeline-code", "pipeline_code", metavar="P", required=True, help="The pipeline to show.")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str, output_format: str) -> None:
    """Show one active pipeline: its schedule and state, its tasks (handler, action, target, file, parameters),
    their dependencies in the pipeline and across pipelines, and the graph derived from them, task by
    dependency level."""
    page = pipeline_page(ctx.existing_engine_db(), pipeline_code, ctx.configured_timezone())
    emit(output_format, pipeline_document(page), lambda: detail_text(page.detail, page.zone))


def _upstream_text(e: TaskEdge, pipeline: str) -> str:
    name = e.upstream_task_code if e.upstream_pipeline_code == pipeline else \
        f"{e.upstream_pipeline_code}.{e.upstream_task_code}"
    return f"{name} ({e.type}{'' if e.upstream_active else ', switched off'})"


def detail_text(d: PipelineDetail, zone: ProjectZone) -> str:
    p = d.pipeline
    lines = [f"pipeline {p.code}" + (f" ({p.name})" if p.name else "") + f": {p.state}",
             f"  schedule: {p.schedule or 'none'}" + (f" ({p.timezone or 'project time zone'})" if p.schedule else ""),
             f"  project time zone: {zone.name} ({zone.origin()})"]
    if d.upstream_pipelines:
        lines.append("  waits for pipelines: " + ", ".join(f"{e.upstream_pipeline_code} ({e.type})"
                                                           for e in d.upstream_pipelines))
    if d.downstream_pipelines:
        lines.append("  pipelines waiting for it: " + ", ".join(e.pipeline_code for e in d.downstream_pipelines))
    lines += ["", f"tasks ({len(d.tasks)}, in dependency order)"]
    order = {code: i for i, code in enumerate([c for level in d.levels for c in level] + list(d.unleveled))}
    for t in sorted(d.tasks, key=lambda t: order.get(t.code, len(order))):
        kind = f"{t.handler} {t.action}" if t.action else t.handler
        target = f" -> {t.target}" if t.target else ""
        source = f"sql_files/{t.sql_file}" if t.sql_file else f"ingestion_scripts/{t.script_file}" \
            if t.script_file else ""
        lines.append(f"  {t.code}: {kind}{target}" + (f" from {source}" if source else ""))
        lines += [f"    {name} = {value}" for name, value in
                  masked_parameters({prm.name: prm.value for prm in t.parameters}).items()]
        lines += [f"    rule {r.code} ({r.rule_type}, key {r.key_column}): " + " ".join(r.rule_sql.split())
                  for r in d.rules if r.task_id == t.task_id]
        ups = [_upstream_text(e, p.code) for e in d.edges if e.task_id == t.task_id]
        if ups:
            lines.append(f"    waits for ({t.run_condition}): " + ", ".join(ups))
    lines += ["", "graph"]
    upstream = {t.code: [e.upstream_task_code for e in d.edges if e.task_id == t.task_id and not e.cross_pipeline]
                for t in d.tasks}
    for number, level in enumerate(d.levels, start=1):
        lines.append(f"  level {number}")
        lines += [f"    {code}" + (f" <- {', '.join(upstream[code])}" if upstream[code] else "") for code in level]
    if d.unleveled:
        lines.append(f"  in or after a dependency cycle (run etl-craft validate): {', '.join(d.unleveled)}")
    if d.downstream_edges:
        lines += ["", "tasks of other pipelines waiting for this one"]
        lines += [f"  {e.pipeline_code}.{e.task_code} waits for {e.upstream_task_code} ({e.type})"
                  for e in d.downstream_edges]
    return "\n".join(lines)
