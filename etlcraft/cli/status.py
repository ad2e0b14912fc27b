"""etl-craft status, history and logs: what a run did, read from the Engine DB (or with --server, from the HTTP API)."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.cli.remote import run_id_of, segment
from etlcraft.services.runs import attempt_log, attempt_log_json
from etlcraft.services.status import history_json, run_history, run_status, status_json

_MARKS = {"SUCCESS": "+", "FAILED": "x", "SKIPPED": "-", "CANCELLED": "/", "IN-PROGRESS": ">", "NOT RUN": "."}


@click.command("status")
@click.option("--pipeline-code", "pipeline_code", required=True, metavar="P")
@click.option("--run-id", type=int, help="The run to show (default: the pipeline's one active run).")
@click.option("--run-key", help="The run to show, by its key (schedule:..., manual:..., or your own).")
@format_option
@click.pass_obj
def status(ctx: CliContext, pipeline_code: str, run_id: int | None, run_key: str | None,
           output_format: str) -> None:
    """Show a run: its identity and status, then one line per task (status, attempts, rows written, duration
    and the first line of its error or reason)."""
    if ctx.remote:
        doc = ctx.remote.get(f"/runs/{segment(run_id_of(ctx.remote, pipeline_code, run_id, run_key, 'status'))}")
    else:
        doc = status_json(run_status(ctx.existing_engine_db(), pipeline_code, run_id, run_key))
    emit_document(output_format, doc, status_text)


def status_text(doc: dict[str, Any]) -> str:
    """etl-craft/run-status/1 as text."""
    run, tasks = doc["run"], doc["tasks"]
    lines = [f"run {run['pipeline_run_id']} of {run['pipeline_code']} ({run['run_key']}, {run['trigger_kind']}, "
             f"run date {run['run_date']}): {run['status']}",
             f"  started {run['start_date']} by {run['started_by']}"
             + (f", ended {run['end_date']} by {run['ended_by']}" if run["end_date"] else "")
             + (f"; SLA {run['sla_status']}" if run.get("sla_status") else ""),
             *([f"  pipeline gate: {doc['pipeline_gate_wait']}"] if doc["pipeline_gate_wait"] else []),
             f"  tasks: {''.join(_MARKS.get(t['status'], '?') for t in tasks)}   "
             "(+ success, x failed, - skipped, / cancelled, > running, . not run)"]
    for task in tasks:
        detail = f"{task['attempts']} attempt(s)"
        if task["rows_written"] is not None:
            detail += f", {task['rows_written']} rows written"
        if task["seconds"] is not None:
            detail += f", {task['seconds']:.1f}s"
        if task["attempt_id"]:
            detail += f", attempt {task['attempt_id']}"
        lines.append(f"  {task['task_code']:<24} {task['status']:<12} {detail}"
                     + (f"  {task['note']}" if task["note"] else ""))
    return "\n".join(lines)


@click.command("history")
@click.option("--pipeline-code", "pipeline_code", required=True, metavar="P")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--before", type=click.IntRange(min=1), metavar="RUN_ID",
              help="Only runs older than run RUN_ID (the next page: the last id of the previous one).")
@format_option
@click.pass_obj
def history(ctx: CliContext, pipeline_code: str, limit: int, before: int | None, output_format: str) -> None:
    """List the pipeline's runs, newest first, with their ids, keys, statuses and who started and ended them."""
    if ctx.remote:
        doc = ctx.remote.get(f"/pipelines/{segment(pipeline_code)}/runs", limit=limit, before=before)
    else:
        doc = history_json(pipeline_code, run_history(ctx.existing_engine_db(), pipeline_code, limit, before))
    emit_document(output_format, doc, history_text)


def history_text(doc: dict[str, Any]) -> str:
    """etl-craft/run-history/1 as text."""
    lines = [f"{'RUN':>6}  {'STATUS':<12} {'RUN DATE':<10}  {'KEY':<44} STARTED BY"]
    for r in doc["runs"]:
        lines.append(f"{r['pipeline_run_id']:>6}  {r['status']:<12} {r['run_date']!s:<10}  {r['run_key']:<44} "
                     f"{r['started_by']}" + (f"  ({r['failed_tasks']} failed)" if r["failed_tasks"] else ""))
    return "\n".join(lines)


@click.command("logs")
@click.option("--attempt-id", type=int, required=True)
@format_option
@click.pass_obj
def logs(ctx: CliContext, attempt_id: int, output_format: str) -> None:
    """Print what an attempt's task process printed (its log file, or the tail kept in the Engine DB). Log files
    are kept under .etl-craft/logs/<Engine DB identity>/, so two Engine DBs of one project never share one."""
    if ctx.remote:
        doc = ctx.remote.get(f"/attempts/{segment(attempt_id)}")
    else:
        doc = attempt_log_json(attempt_log(ctx.existing_engine_db(), attempt_id))
    if doc["note"]:
        click.echo(f"note: {doc['note']}", err=True)
    emit_document(output_format, doc, lambda d: str(d["log"]).rstrip("\n"))
