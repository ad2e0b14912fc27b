"""etl-craft run --pipeline-code P: run a pipeline on this machine, in the foreground, until its run ends."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, emit_document, format_option
from etlcraft.cli.remote import Remote, run_id_of, segment
from etlcraft.core.actor import acting_as
from etlcraft.core.enums import AttemptStatus, RunStatus
from etlcraft.core.errors import IncompleteError, RunFailedError, UsageError
from etlcraft.overseer.local import Interrupted
from etlcraft.services.handoff import hand_over
from etlcraft.services.queueing import backfill_queued_json, queue_backfill, queue_rerun, rerun_queued_json
from etlcraft.services.runs import (
    RunRequest,
    TaskRequest,
    backfill_json,
    end_run,
    init_json,
    init_run,
    outcome_json,
    run_pipeline,
    skip_json,
    skip_task,
)
from etlcraft.services.runs import backfill as run_backfill
from etlcraft.services.server import active_server

#: What a stop did to the tasks that were running (interrupt_attempt), for the message of a stopped command.
_INTERRUPTED = ("its running tasks were stopped and recorded interrupted, which uses no retry, and each is queued to "
                "run again")


@click.command("run")
@click.option("--pipeline-code", "pipeline_code", required=True, metavar="P", help="The pipeline to run.")
@click.option("--run-key", help="The run's key: resumes that run, or creates it when it does not exist.")
@click.option("--run-id", type=int, help="The existing run to work in.")
@click.option("--run-date", type=click.DateTime(formats=["%Y-%m-%d"]), help="The date the run runs as of "
              "(default: today in the project's time zone).")
@click.option("--reason", help="Why this run is started or reopened (recorded).")
@click.option("--task-code", "task_code", metavar="T", help="Run only task T in the run (its dependencies must be "
              "met unless --ignore-dependencies).")
@click.option("--rerun", metavar="T", help="Run task T again where it FAILED or was CANCELLED, reopening the run if "
              "it has ended; the tasks its failure skipped run afterwards (now with --with-downstream).")
@click.option("--with-downstream", is_flag=True, help="With --task-code or --rerun: also run the tasks that depend "
              "on T, as their dependencies are met.")
@click.option("--ignore-dependencies", is_flag=True, help="With --task-code: run T even though its dependencies are "
              "not met.")
@click.option("--force", is_flag=True, help="With --task-code: run T even if it succeeded, reopening an ended run "
              "(recorded as REOPEN).")
@click.option("--skip", metavar="T", help="Record that task T will not run in the run (SKIPPED by an operator, "
              "with --reason); run nothing.")
@click.option("--backfill", metavar="FROM:TO", help="One BACKFILL run per date from FROM to TO (YYYY-MM-DD), in "
              "date order, each to its end before the next; needs --reason.")
@click.option("--init-only", is_flag=True, help="Create and admit the run, print its id, run nothing (for an external "
              "orchestrator that runs each task with --task-code, or for a server). With --backfill: create the "
              "runs QUEUED for the server; with --rerun T: queue T again in its run for the server.")
@click.option("--finalize-only", is_flag=True, help="End the run from its task runs, run nothing.")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str, run_key: str | None, run_id: int | None, run_date: datetime | None,
            reason: str | None, task_code: str | None, rerun: str | None, with_downstream: bool,
            ignore_dependencies: bool, force: bool, skip: str | None, backfill: str | None, init_only: bool,
            finalize_only: bool, output_format: str) -> None:
    """Run pipeline P: create the run (or resume the one named by --run-key or --run-id, or the pipeline's one
    active run), own it with a lease, start each task as soon as its dependencies are met, one process per
    attempt within the pipeline's slots, and end the run when nothing is left to run.

    With --task-code T or --rerun T, run only T (and with --with-downstream the tasks depending on it) in the run;
    the run ends when all its tasks have settled, else it stays IN-PROGRESS for the next etl-craft run.

    Exits 0 when the run (or the task) ends SUCCESS or SKIPPED, 9 when it ends FAILED or CANCELLED, 25 when it is
    left unfinished (stopped by SIGTERM, SIGHUP or SIGINT, or its lease was lost), 26 when --task-code recorded nothing
    because T's dependencies are not met yet.
    """
    _check_options(task_code, rerun, with_downstream, ignore_dependencies, force, init_only, finalize_only, run_id,
                   run_key)
    if backfill is not None and (task_code or rerun or finalize_only or run_id is not None or run_key is not None):
        raise UsageError("--backfill creates its own runs, one per date: it cannot be given with --task-code, "
                         "--rerun, --finalize-only, --run-id or --run-key")
    if ctx.remote:
        if not init_only or skip is not None:
            raise UsageError("with --server, etl-craft run only starts work for the server: give --init-only (a run, "
                             "--backfill FROM:TO or --rerun T); running tasks in the foreground, --skip and "
                             "--finalize-only need the Engine DB (run them without --server where it is reachable)")
        doc = _remote(ctx.remote, pipeline_code, run_key, run_id, run_date, reason, rerun, backfill)
        emit_document(output_format, doc, _init_text if doc["schema"] == "etl-craft/run-init/1" else _message)
        return
    actor = ctx.actor()
    task = None
    if task_code or rerun:
        task = TaskRequest(task_code or rerun or "", rerun=rerun is not None, with_downstream=with_downstream,
                           ignore_dependencies=ignore_dependencies, force=force)
    request = RunRequest(pipeline_code, run_key, run_id, run_date.date() if run_date else None, reason, task)
    quiet = output_format == "json"
    if backfill is not None:
        first, last = _date_range(backfill)
        if init_only:
            with acting_as(actor):
                queued = queue_backfill(ctx.engine_db(), ctx.config(), request, first, last)
            emit_document(output_format, backfill_queued_json(queued), _message)
            return
        with acting_as(actor):
            try:
                done = run_backfill(ctx.engine_db(), ctx.config(), request, first, last,
                                    on_event=(lambda _: None) if quiet else click.echo)
            except Interrupted as exc:
                raise IncompleteError(f"the backfill was stopped by {exc}; {_INTERRUPTED}; resume it with the same "
                                      "command") from exc
        emit(output_format, backfill_json(done), lambda: done.message)
        if not done.complete:
            if done.runs and done.runs[-1].status not in (RunStatus.SUCCESS, RunStatus.SKIPPED):
                raise RunFailedError(done.message)
            raise IncompleteError(done.message)
        return
    if skip is not None:
        if task or init_only or finalize_only:
            raise UsageError("--skip records one task as skipped and runs nothing: it cannot be given with "
                             "--task-code, --rerun, --init-only or --finalize-only")
        with acting_as(actor):
            skipped = skip_task(ctx.engine_db(), ctx.config(), request, skip)
        emit(output_format, skip_json(skipped, skip), lambda: skipped.message)
        return
    with acting_as(actor):
        if init_only and rerun:
            rerun_queued = queue_rerun(ctx.engine_db(), ctx.config(), request)
            emit_document(output_format, rerun_queued_json(rerun_queued), _message)
            return
        if init_only:
            created = init_run(ctx.engine_db(), ctx.config(), request)
            emit_document(output_format, init_json(created, pipeline_code), _init_text)
            return
        try:
            if finalize_only:
                outcome = end_run(ctx.engine_db(), ctx.config(), request)
            elif task is None and (server := active_server(ctx.engine_db())) is not None:
                config = ctx.config()
                outcome = hand_over(ctx.engine_db(), config, request, server,
                                    on_event=(lambda _: None) if quiet else click.echo)
            else:
                outcome = run_pipeline(ctx.engine_db(), ctx.config(), request,
                                       on_event=(lambda _: None) if quiet else click.echo)
        except Interrupted as exc:
            run = f"run {exc.run_id}" if exc.run_id is not None else "the run"
            resume = ("the same command" if task or finalize_only or exc.run_id is None
                      else f"etl-craft run --pipeline-code {pipeline_code} --run-id {exc.run_id}")
            raise IncompleteError(f"etl-craft run was stopped by {exc}; {_INTERRUPTED}; {run} is left IN-PROGRESS to "
                                  f"resume: resume it with {resume}") from exc
    emit(output_format, outcome_json(outcome), lambda: outcome.message)
    failed = sorted({e.task_code for e in outcome.ended if e.status != AttemptStatus.SUCCESS})
    if outcome.status == RunStatus.IN_PROGRESS:
        if task is None or not outcome.ended:
            raise IncompleteError(outcome.message)
        if failed:
            raise RunFailedError(f"{', '.join(failed)} did not succeed in run {outcome.pipeline_run_id}; see "
                                 f"etl-craft status --pipeline-code {pipeline_code} --run-id {outcome.pipeline_run_id}")
        return
    if outcome.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        raise RunFailedError(f"run {outcome.pipeline_run_id} of {pipeline_code} ended {outcome.status}"
                             + (f" (failed: {', '.join(failed)})" if failed else "")
                             + f"; see etl-craft status --pipeline-code {pipeline_code} --run-id "
                             f"{outcome.pipeline_run_id}")


def _message(doc: dict[str, Any]) -> str:
    return str(doc["message"])


def _init_text(doc: dict[str, Any]) -> str:
    run, pipeline = doc["pipeline_run_id"], doc["pipeline_code"]
    return (f"run {run} of {pipeline} is IN-PROGRESS; run its tasks with etl-craft run --pipeline-code {pipeline} "
            f"--run-id {run} --task-code T")


def _remote(remote: Remote, pipeline_code: str, run_key: str | None, run_id: int | None, run_date: datetime | None,
            reason: str | None, rerun: str | None, backfill: str | None) -> dict[str, Any]:
    """The document of the HTTP API request that --init-only makes with --server."""
    pipeline = segment(pipeline_code)
    if rerun:
        run = segment(run_id_of(remote, pipeline_code, run_id, run_key, "run --rerun"))
        return remote.post(f"/runs/{run}/tasks/{segment(rerun)}/rerun", {"reason": reason})
    if backfill is not None:
        first, last = _date_range(backfill)
        return remote.post(f"/pipelines/{pipeline}/backfills",
                           {"first": first.isoformat(), "last": last.isoformat(), "reason": reason})
    if run_id is not None:
        raise UsageError("with --server, run --init-only creates or finds a run by --run-key; --run-id names a run "
                         "that exists already (give --run-key, or nothing)")
    body = {"run_key": run_key, "run_date": run_date.date().isoformat() if run_date else None, "reason": reason}
    return remote.post(f"/pipelines/{pipeline}/runs", body)


def _check_options(task_code: str | None, rerun: str | None, with_downstream: bool, ignore_dependencies: bool,
                   force: bool, init_only: bool, finalize_only: bool, run_id: int | None, run_key: str | None) -> None:
    """Refuse option combinations that contradict each other, naming both."""
    if task_code and rerun:
        raise UsageError("--task-code and --rerun both name a task to run; give one of them")
    if init_only and finalize_only:
        raise UsageError("--init-only and --finalize-only contradict each other; give one of them")
    if finalize_only and (task_code or rerun):
        raise UsageError("--finalize-only runs no task, so it cannot be given with --task-code or --rerun")
    if init_only and task_code:
        raise UsageError("--init-only runs no task, so it cannot be given with --task-code (--rerun T --init-only "
                         "queues T for the server)")
    if init_only and (with_downstream or ignore_dependencies or force):
        raise UsageError("--init-only runs no task itself: --with-downstream, --ignore-dependencies and --force "
                         "do not apply (a server runs what becomes ready in the run)")
    if with_downstream and not (task_code or rerun):
        raise UsageError("--with-downstream needs the task to start from: give --task-code T or --rerun T")
    for flag, given in (("--ignore-dependencies", ignore_dependencies), ("--force", force)):
        if given and not task_code:
            raise UsageError(f"{flag} applies to one task: give --task-code T")
    if run_id is not None and run_key is not None:
        raise UsageError("--run-id and --run-key both name the run; give one of them")


def _date_range(text: str) -> tuple[date, date]:
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError(text)
        return date.fromisoformat(parts[0]), date.fromisoformat(parts[1])
    except ValueError:
        raise UsageError(f"--backfill {text} is not FROM:TO with two dates YYYY-MM-DD, such as "
                         "2026-11-01:2026-11-30") from None
