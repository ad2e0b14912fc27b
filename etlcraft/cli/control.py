"""etl-craft mark, cancel, pause, resume and reopen: operator controls, each one call of etlcraft.services.control."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.cli.remote import run_id_of, segment
from etlcraft.core.errors import UsageError
from etlcraft.services import control
from etlcraft.services.control import OperationContext, RunRef

_pipeline = click.option("--pipeline-code", "pipeline_code", required=True, metavar="P", help="The pipeline.")
_run_id = click.option("--run-id", type=int, help="The run, by id.")
_run_key = click.option("--run-key", help="The run, by key.")


def _reason(help_text: str, required: bool = True) -> Callable[[Any], Any]:
    return click.option("--reason", required=required, help=help_text)


def _context(ctx: CliContext) -> OperationContext:
    lease = ctx.config().orchestration.lease_seconds if ctx.has_project else 60
    return OperationContext(ctx.existing_engine_db(), ctx.actor(), lease)


def _emit(output_format: str, doc: dict[str, Any]) -> None:
    emit_document(output_format, doc, lambda d: str(d["message"]))


@click.command("mark")
@_pipeline
@click.option("--task-code", "task_code", metavar="T", help="Mark task T's outcome in the run (else the run's).")
@click.option("--status", required=True, type=click.Choice(control.MARK_STATUSES, case_sensitive=False),
              help="The outcome to record.")
@_reason("Why (recorded on the run or task run and in AUD_RUN_INTERVENTIONS).")
@click.option("--rows", "rows", type=click.IntRange(min=0), help="With --task-code: the rows the task wrote.")
@_run_id
@_run_key
@format_option
@click.pass_obj
def mark(ctx: CliContext, pipeline_code: str, task_code: str | None, status: str, reason: str, rows: int | None,
         run_id: int | None, run_key: str | None, output_format: str) -> None:
    """Record by hand how a run ended, or with --task-code how a task ended in it (SUCCESS, FAILED or SKIPPED),
    for work done or judged outside etl-craft. Refused while a live process runs the run or the task; attempts
    whose owner died are marked LOST first. Marking a task of an ended run reopens the run."""
    if ctx.remote:
        if task_code is None:
            raise UsageError("with --server, mark records a task's outcome (--task-code T); marking a whole run "
                             "needs the Engine DB (run etl-craft mark without --server where it is reachable)")
        run = segment(run_id_of(ctx.remote, pipeline_code, run_id, run_key, "mark"))
        body = {"status": status.upper(), "reason": reason, "rows_written": rows}
        _emit(output_format, ctx.remote.post(f"/runs/{run}/tasks/{segment(task_code)}/mark", body))
        return
    request = control.MarkRequest(pipeline_code, status.upper(), reason, task_code, rows, RunRef(run_id, run_key))
    _emit(output_format, control.to_json(control.mark(_context(ctx), request)))


@click.command("cancel")
@_pipeline
@_reason("Why the run is cancelled (recorded).")
@_run_id
@_run_key
@format_option
@click.pass_obj
def cancel(ctx: CliContext, pipeline_code: str, reason: str, run_id: int | None, run_key: str | None,
           output_format: str) -> None:
    """Cancel a run: its queued attempts are cancelled, its running ones are asked to stop, and the run ends
    CANCELLED once none is live. Attempts whose owner died are marked LOST first."""
    if ctx.remote:
        run = segment(run_id_of(ctx.remote, pipeline_code, run_id, run_key, "cancel"))
        _emit(output_format, ctx.remote.post(f"/runs/{run}/cancel", {"reason": reason}))
        return
    request = control.CancelRequest(pipeline_code, reason, RunRef(run_id, run_key))
    _emit(output_format, control.to_json(control.cancel(_context(ctx), request)))


@click.command("reopen")
@_pipeline
@_reason("Why the run is reopened (recorded as a REOPEN intervention).")
@_run_id
@_run_key
@format_option
@click.pass_obj
def reopen(ctx: CliContext, pipeline_code: str, reason: str, run_id: int | None, run_key: str | None,
           output_format: str) -> None:
    """Reopen an ended run, named by --run-id or --run-key, so its tasks can run in it again (a repair); a run
    that had succeeded publishes its next output revision when it ends SUCCESS again."""
    request = control.ReopenRequest(pipeline_code, reason, RunRef(run_id, run_key))
    _emit(output_format, control.to_json(control.reopen(_context(ctx), request)))


_pipeline_or_project = click.option(
    "--pipeline-code", "pipeline_code", metavar="P",
    help="The pipeline; without it, every active pipeline of the project named by --project-code.")
_project_code = click.option(
    "--project-code", "project_code", metavar="CODE",
    help="The project (as the global --project-code): with --pipeline-code, the project of that pipeline; without "
         "it, every active pipeline of the project is paused or resumed.")


def _pause_or_resume(ctx: CliContext, verb: str, pipeline_code: str | None, project_code: str | None,
                     reason: str | None, output_format: str) -> None:
    if project_code:
        ctx = ctx.for_project(project_code)
    if pipeline_code is None:
        if not ctx.project_code:
            raise UsageError(f"{verb} needs --pipeline-code P, or --project-code CODE to {verb} every active "
                             "pipeline of a project")
        if ctx.remote:
            body = {"reason": reason}
            _emit(output_format, ctx.remote.post(f"/projects/{segment(ctx.project_code)}/{verb}", body))
            return
        request = control.ProjectPauseRequest(verb, ctx.project_code, reason)
        _emit(output_format, control.project_pause_json(control.pause_project(_context(ctx), request)))
        return
    if ctx.remote:
        body = {"reason": reason}
        _emit(output_format, ctx.remote.post(f"/pipelines/{segment(pipeline_code)}/{verb}", body))
        return
    if verb == "pause":
        assert reason is not None
        done = control.pause(_context(ctx), control.PauseRequest(pipeline_code, reason))
    else:
        done = control.resume(_context(ctx), control.ResumeRequest(pipeline_code, reason))
    _emit(output_format, control.to_json(done))


@click.command("pause")
@_pipeline_or_project
@_project_code
@_reason("Why the pipeline is paused (recorded in AUD_PIPELINE_PAUSES).")
@format_option
@click.pass_obj
def pause(ctx: CliContext, pipeline_code: str | None, project_code: str | None, reason: str,
          output_format: str) -> None:
    """Pause a pipeline: no run and no task of it starts until etl-craft resume; runs and tasks already going are
    left to finish. Without --pipeline-code, `etl-craft pause --project-code CODE` pauses every active pipeline of
    project CODE (one pause each; those already paused keep theirs)."""
    _pause_or_resume(ctx, "pause", pipeline_code, project_code, reason, output_format)


@click.command("resume")
@_pipeline_or_project
@_project_code
@_reason("Why the pipeline is resumed (recorded).", required=False)
@format_option
@click.pass_obj
def resume(ctx: CliContext, pipeline_code: str | None, project_code: str | None, reason: str | None,
           output_format: str) -> None:
    """Resume a paused pipeline: its runs and tasks start again at their next admission. Without --pipeline-code,
    `etl-craft resume --project-code CODE` resumes every paused pipeline of project CODE."""
    _pause_or_resume(ctx, "resume", pipeline_code, project_code, reason, output_format)


COMMANDS = (mark, cancel, reopen, pause, resume)
