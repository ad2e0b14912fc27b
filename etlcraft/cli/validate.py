"""etl-craft validate: every problem in the active metadata and the project's SQL files and scripts."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.errors import error_specs
from etlcraft.services.validate import Problem, ValidationReport, validate

ACROSS = "across pipelines"


@click.command("validate")
@click.option("--pipeline-code", "pipeline_code", metavar="P", help="Report only the problems that involve pipeline P.")
@click.option("--offline", is_flag=True, help="Skip the warehouse checks (and the warning when the warehouse cannot be "
              "reached).")
@format_option
@click.pass_obj
def command(ctx: CliContext, pipeline_code: str | None, offline: bool, output_format: str) -> None:
    """Check the active metadata in the Engine DB against the project's files and report every problem found:
    codes, handlers and actions, task parameters, dependencies and cycles, schedules and time zones, table
    formats, and each SQL_FILE (exactly one read-only SELECT with plain output names) and SCRIPT_FILE. Unless
    --offline, also the warehouse: every table and column a SELECT reads exists (or is made by a task of the
    project), every merge key is among the SELECT's columns, and every existing target suits its task's action;
    and that EMAIL_ALERT tasks have an Email section to send through.
    A warehouse that cannot be reached is a warning, not a problem. Writes nothing. Exits 7 when there is a
    problem."""
    config = ctx.config()
    channels = tuple(config.alerts.channels) if config.alerts is not None else ()
    report = validate(ctx.existing_engine_db(), config.project_dir, config.warehouse.dialect, pipeline_code,
                      None if offline else config, alert_channels=channels)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    emit(output_format, report_document(report), lambda: report_text(report))
    if not report.ok:
        raise SystemExit(error_specs()["VALIDATION"].exit)


def group_of(problem: Problem) -> str:
    return f"pipeline {problem.pipelines[0]}" if len(problem.pipelines) == 1 else ACROSS


def report_document(report: ValidationReport) -> dict[str, Any]:
    return document("validation", 1, {
        "valid": report.ok,
        "pipelines": list(report.pipelines),
        "tasks": report.tasks,
        "files": report.files,
        "warehouse": report.warehouse,
        "warnings": list(report.warnings),
        "notes": list(report.notes),
        "problems": [{"check": p.check, "object": p.object, "pipelines": list(p.pipelines), "task": p.task,
                      "value": p.value, "expected": p.expected, "remedy": p.remedy, "message": p.message}
                     for p in report.problems],
    })


def report_text(report: ValidationReport) -> str:
    """Problems by pipeline, then by task; problems that span pipelines last."""
    groups: dict[str, list[Problem]] = {f"pipeline {code}": [] for code in report.pipelines}
    for problem in report.problems:
        groups.setdefault(group_of(problem), []).append(problem)
    lines = []
    for group, problems in groups.items():
        lines.append(f"{group}: {_count(len(problems), 'problem') if problems else 'ok'}")
        task = None
        for p in problems:
            if p.task is not None and group != ACROSS:
                if p.task != task:
                    lines.append(f"  task {p.task}")
                lines.append(f"    {p.detail}")
            else:
                lines.append(f"  {p.detail}" if p.object == group else f"  {p.message}")
            task = p.task
    lines += [f"note: {note}" for note in report.notes]
    checked = f"{_count(len(report.pipelines), 'pipeline')}, {_count(report.tasks, 'task')}, " \
              f"{_count(report.files, 'file')} read" + \
              (", warehouse unreachable" if report.warehouse == "unreachable" else "")
    lines.append(f"valid: {checked}" if report.ok else f"{_count(len(report.problems), 'problem')} ({checked})")
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
