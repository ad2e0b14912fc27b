"""etl-craft grant: the reader, operator and engine roles of a PostgreSQL Engine DB."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.services.grants import GrantReport, grant_roles, script


@click.command("grant")
@click.option("--print", "print_only", is_flag=True,
              help="Print the SQL instead of running it (a DBA can review it, or run it with psql).")
@click.option("--prefix", default=None, metavar="NAME",
              help="Name the roles NAME_reader, NAME_operator and NAME_engine [default: the schema].")
@format_option
@click.pass_obj
def command(ctx: CliContext, print_only: bool, prefix: str | None, output_format: str) -> None:
    """Create the roles of a PostgreSQL Engine DB, or bring them up to date; safe to run again. Run it as the
    schema's owner (the login that runs migrate). The write-API functions run as their owner, so the roles hold
    EXECUTE, never a write on a table; PUBLIC executes none of them.

    <schema>_reader selects the AUD_V_* views (BI tools); <schema>_operator also runs the operator functions (mark,
    cancel, pause, resume, reopen), the read functions and a run by hand (docs/guides/sql-api.md), and reads
    CFG_PROJECTS, CFG_PIPELINES and CFG_TASKS; <schema>_engine executes every function and reads every table (the
    CLI and workers). Grant a login one of them: GRANT etl_craft_operator TO alice. migrate applies the grants again
    to the functions and views it re-creates.
    """
    db = ctx.engine_db()
    with acting_as(ctx.actor()):
        report = grant_roles(db, prefix=prefix, execute=not print_only)
    doc = document("grant", 1, {
        "engine_db": db.display_url,
        "executed": report.executed,
        "roles": {"reader": report.roles.reader, "operator": report.roles.operator, "engine": report.roles.engine},
        "created": list(report.created),
        "views": list(report.views),
        "operator_functions": list(report.operator_functions),
        "statements": list(report.statements),
    })
    emit(output_format, doc, lambda: script(report) if print_only else _text(db.display_url, report))


def _text(url: str, report: GrantReport) -> str:
    roles = report.roles
    views = ", ".join(v.split(".", 1)[1].upper() for v in report.views) or "none yet (USAGE on the schema only)"
    lines = [f"Engine DB {url}"]
    lines += [f"  created    {role}" for role in report.created]
    lines += [
        f"  {roles.reader}: SELECT on the AUD_V_ views: {views}",
        f"  {roles.operator}: {roles.reader}'s grants, EXECUTE on {len(report.operator_functions)} functions, "
        "SELECT on CFG_PROJECTS, CFG_PIPELINES, CFG_TASKS",
        f"  {roles.engine}: EXECUTE on every function, SELECT on every table and view",
        f"grant a login one of them, for example: GRANT {roles.operator} TO alice",
    ]
    return "\n".join(lines)
