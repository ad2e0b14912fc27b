"""etl-craft run --pipeline_code P: run a pipeline on this machine, in the foreground, until its run ends."""

from __future__ import annotations

from datetime import datetime

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.core.errors import IncompleteError, RunFailedError
from etlcraft.overseer.local import Interrupted
from etlcraft.services.runs import RunRequest, run_pipeline


@click.command("run")
@click.option("--pipeline_code", "pipeline_code", required=True, metavar="P", help="The pipeline to run.")
@click.option("--run-key", help="The run's key: resumes that run, or creates it when it does not exist.")
@click.option("--run-id", type=int, help="Resume this existing IN-PROGRESS run.")
@click.option("--run-date", type=click.DateTime(formats=["%Y-%m-%d"]), help="The date the run runs as of "
              "(default: today in the project's time zone).")
@click.option("--reason", help="Why this run is started (recorded on the run).")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str, run_key: str | None, run_id: int | None, run_date: datetime | None,
            reason: str | None, output_format: str) -> None:
    """Run pipeline P: create the run (or resume the one named by --run-key or --run-id, or the pipeline's one
    active run), own it with a lease, start each task as soon as its dependencies are met, one process per
    attempt within the pipeline's slots, and end the run when nothing is left to run.

    Exits 0 when the run ends SUCCESS or SKIPPED, 9 when it ends FAILED or CANCELLED, 25 when it is left
    unfinished (stopped by SIGTERM or SIGHUP, or its lease was lost).
    """
    actor = ctx.actor()
    request = RunRequest(pipeline_code, run_key, run_id, run_date.date() if run_date else None, reason)
    quiet = output_format == "json"
    with acting_as(actor):
        try:
            outcome = run_pipeline(ctx.engine_db(), ctx.config(), request,
                                   on_event=(lambda _: None) if quiet else click.echo)
        except Interrupted as exc:
            raise IncompleteError(f"etl-craft run was stopped by {exc}; its running tasks were stopped and recorded "
                                  f"FAILED; resume the run with etl-craft run --pipeline_code {pipeline_code} "
                                  "--run-id N (see etl-craft status)") from exc
    doc = document("run-outcome", 1, {
        "pipeline_run_id": outcome.pipeline_run_id, "status": outcome.status, "message": outcome.message,
        "attempts": [{"attempt_id": e.attempt_id, "task_code": e.task_code, "status": e.status}
                     for e in outcome.ended],
        "skipped": [{"task_code": code, "reason": why} for code, why in outcome.skipped],
    })
    emit(output_format, doc, lambda: outcome.message)
    if outcome.status == "IN-PROGRESS":
        raise IncompleteError(outcome.message)
    if outcome.status in ("FAILED", "CANCELLED"):
        failed = sorted({e.task_code for e in outcome.ended if e.status != "SUCCESS"})
        raise RunFailedError(f"run {outcome.pipeline_run_id} of {pipeline_code} ended {outcome.status}"
                             + (f" (failed: {', '.join(failed)})" if failed else "")
                             + f"; see etl-craft status --pipeline_code {pipeline_code} --run-id "
                             f"{outcome.pipeline_run_id}")

