"""etl-craft explain: why a task of a run is in its state, and the one thing that would make it run."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.cli.remote import run_id_of, segment
from etlcraft.services import explain as service
from etlcraft.services.control import RunRef


@click.command("explain")
@click.option("--pipeline-code", "pipeline_code", required=True, metavar="P", help="The pipeline.")
@click.option("--task-code", "task_code", required=True, metavar="T", help="The task to explain.")
@click.option("--run-id", type=int, help="The run, by id.")
@click.option("--run-key", help="The run, by key.")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str, task_code: str, run_id: int | None, run_key: str | None,
            output_format: str) -> None:
    """Explain task T in a run (by --run-id or --run-key; else the pipeline's single run that has not ended): the
    run's status and pause, the task's attempts, its run condition, each dependency and whether it is met, the
    gate decisions, the retry schedule, and one sentence saying what would make it run. Changes nothing."""
    if ctx.remote:
        run = segment(run_id_of(ctx.remote, pipeline_code, run_id, run_key, "explain"))
        doc = ctx.remote.get(f"/runs/{run}/tasks/{segment(task_code)}/explain")
    else:
        request = service.ExplainRequest(pipeline_code, task_code, RunRef(run_id, run_key))
        doc = service.to_json(service.explain_task(ctx.existing_engine_db(), request))
    emit_document(output_format, doc, service.render)
