"""etl-craft show: one pipeline's tasks, parameters, dependencies and derived graph."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.cli.remote import segment
from etlcraft.core.zones import ProjectZone
from etlcraft.services.pipelines import pipeline_document, pipeline_page


@click.command("show")
@click.option("--pipeline-code", "pipeline_code", metavar="P", required=True, help="The pipeline to show.")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str, output_format: str) -> None:
    """Show one active pipeline: its schedule and state, its tasks (handler, action, target, file, parameters),
    their dependencies in the pipeline and across pipelines, and the graph derived from them, task by
    dependency level."""
    if ctx.remote:
        doc = ctx.remote.get(f"/pipelines/{segment(pipeline_code)}")
    else:
        doc = pipeline_document(pipeline_page(ctx.existing_engine_db(), pipeline_code, ctx.configured_timezone()))
    emit_document(output_format, doc, detail_text)


def _upstream_text(e: dict[str, Any], pipeline: str) -> str:
    name = (e["upstream_task"] if e["upstream_pipeline"] == pipeline
            else f"{e['upstream_pipeline']}.{e['upstream_task']}")
    return f"{name} ({e['type']}{'' if e['upstream_active'] else ', switched off'})"


def detail_text(doc: dict[str, Any]) -> str:
    """etl-craft/pipeline/1 as text (its parameters are masked in the document already)."""
    p = doc["pipeline"]
    zone = ProjectZone(p["project"], p["project_timezone"], p["project_timezone_source"])
    lines = [f"pipeline {p['code']}" + (f" ({p['name']})" if p["name"] else "") + f": {p['state']}",
             f"  schedule: {p['schedule'] or 'none'}"
             + (f" ({p['timezone'] or 'project time zone'})" if p["schedule"] else ""),
             f"  project time zone: {zone.name} ({zone.origin()})"]
    if doc["upstream_pipelines"]:
        lines.append("  waits for pipelines: " + ", ".join(f"{e['pipeline']} ({e['type']})"
                                                           for e in doc["upstream_pipelines"]))
    if doc["downstream_pipelines"]:
        lines.append("  pipelines waiting for it: " + ", ".join(e["pipeline"] for e in doc["downstream_pipelines"]))
    lines += ["", f"tasks ({len(doc['tasks'])}, in dependency order)"]
    order = {code: i for i, code in enumerate([c for level in doc["levels"] for c in level] + doc["unleveled"])}
    for t in sorted(doc["tasks"], key=lambda t: order.get(t["code"], len(order))):
        lines += _task_lines(t, p["code"])
    lines += ["", "graph"]
    upstream = {t["code"]: [e["upstream_task"] for e in t["depends_on"] if not e["cross_pipeline"]]
                for t in doc["tasks"]}
    for number, level in enumerate(doc["levels"], start=1):
        lines.append(f"  level {number}")
        lines += [f"    {code}" + (f" <- {', '.join(upstream[code])}" if upstream[code] else "") for code in level]
    if doc["unleveled"]:
        lines.append(f"  in or after a dependency cycle (run etl-craft validate): {', '.join(doc['unleveled'])}")
    if doc["downstream_tasks"]:
        lines += ["", "tasks of other pipelines waiting for this one"]
        lines += [f"  {e['pipeline']}.{e['task']} waits for {e['upstream_task']} ({e['type']})"
                  for e in doc["downstream_tasks"]]
    return "\n".join(lines)


def _task_lines(t: dict[str, Any], pipeline: str) -> list[str]:
    kind = f"{t['handler']} {t['action']}" if t["action"] else t["handler"]
    target = f" -> {t['target']}" if t["target"] else ""
    source = f"sql_files/{t['sql_file']}" if t["sql_file"] else f"ingestion_scripts/{t['script_file']}" \
        if t["script_file"] else ""
    lines = [f"  {t['code']}: {kind}{target}" + (f" from {source}" if source else "")]
    lines += [f"    {name} = {value}" for name, value in t["parameters"].items()]
    lines += [f"    rule {r['code']} ({r['type']}, key {r['key_column']}): " + " ".join(r["rule_sql"].split())
              for r in t["rules"]]
    ups = [_upstream_text(e, pipeline) for e in t["depends_on"]]
    if ups:
        lines.append(f"    waits for ({t['run_condition']}): " + ", ".join(ups))
    return lines
