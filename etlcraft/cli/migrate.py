"""etl-craft migrate: the Engine DB's migrations, then the project's metadata migrations (migrations/*.sql)."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.engine.migrations import MigrateReport, migrate

_SIGNS = {"INSERT": "+", "UPDATE": "~", "DELETE": "-"}


@click.command("migrate")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_format: str) -> None:
    """Apply pending Engine DB migrations, then the project's pending migrations/NNNN_name.sql files.

    Every metadata change a project migration makes is recorded in AUD_METADATA_CHANGES with the migration's
    name and your actor (ETL_CRAFT_ACTOR, else user@host). All of it happens in one transaction. Each project
    keeps its own ledger of applied migrations, named by --project-code or Orchestration: Project (needed once
    several projects share the Engine DB).
    """
    actor = ctx.actor()
    db = ctx.engine_db()
    project_dir = ctx.project_dir if ctx.has_project else None
    with acting_as(actor):
        report = migrate(db, project_dir=project_dir, command="migrate",
                         project_code=ctx.project_code or ctx.configured_project())
    emit(output_format, report_document(db.display_url, report), lambda: report_text(db.display_url, report))


def report_document(url: str, report: MigrateReport) -> dict[str, Any]:
    return document("migration-report", 1, {
        "engine_db": url,
        "engine_version": report.engine_version,
        "applied": [{"stream": m.stream, "version": m.version, "name": m.name, "source": m.source}
                    for m in report.applied],
        "refreshed": [{"name": m.name, "source": m.source} for m in report.refreshed],
        "project": [
            {"version": m.version, "name": m.name,
             "changes": [{"table": t, "operation": op, "rows": n} for (t, op), n in changes.items()]}
            for m, changes in report.project
        ],
    })


def report_text(url: str, report: MigrateReport) -> str:
    if not report.changed_anything:
        return f"Engine DB {url} is up to date (schema version {report.engine_version}); nothing to apply"
    lines = [f"Engine DB {url}"]
    lines += [f"  applied    ENGINE {m.version} {m.name}" for m in report.applied]
    if report.refreshed:
        lines.append(f"  refreshed  functions and triggers: {', '.join(m.name for m in report.refreshed)}")
    for migration, changes in report.project:
        summary = ", ".join(f"{t} {_SIGNS[op]}{n}" for (t, op), n in changes.items()) or "no metadata changes"
        lines.append(f"  applied    PROJECT {migration.name}: {summary}")
    lines.append(f"schema version {report.engine_version}")
    return "\n".join(lines)
