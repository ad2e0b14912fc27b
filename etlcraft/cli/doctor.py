"""etl-craft doctor: is the Engine DB reachable, current, and written by etl-craft alone?"""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.errors import error_specs
from etlcraft.services.doctor import doctor


@click.command("doctor")
@click.option("--worker", is_flag=True, help="Also list the imports of the ingestion scripts (of the project's "
              "latest bundle, else of the working folder) that this interpreter cannot find: run it on each worker "
              "host.")
@format_option
@click.pass_obj
def command(ctx: CliContext, worker: bool, output_format: str) -> None:
    """Check the Engine DB: the connection, the schema version, and (PostgreSQL) logins other than
    etl-craft's that hold INSERT, UPDATE, DELETE or TRUNCATE on its tables, PUBLIC's EXECUTE on its functions
    (which run as their owner), and the grants of the roles of etl-craft grant, explaining any other grant on the
    schema; or (SQLite) a database file that group or others can write. With an Email section: its TLS mode (none
    with a login fails), its CA file and password variable, and whether the relay answers a greeting over verified
    TLS (nothing is sent). On PostgreSQL, the connection budget: the server's pool, each active worker's
    (2 + slots/8) and the task attempts claimed or running, against max_connections (a warning above 80%).
    Exits non-zero when a check fails."""
    report = doctor(ctx.engine_db(), ctx.sqlite_path(), ctx.config() if ctx.has_project else None, worker=worker)
    doc = document("doctor", 1, {
        "healthy": report.healthy,
        "checks": [{"name": c.name, "status": c.status, "detail": c.detail, "remedy": c.remedy}
                   for c in report.checks],
    })

    def text() -> str:
        lines = []
        for check in report.checks:
            lines.append(f"{check.status:<4}  {check.name}: {check.detail}")
            if check.remedy and check.status != "ok":
                lines.append(f"      remedy: {check.remedy}")
        return "\n".join(lines)

    emit(output_format, doc, text)
    if not report.healthy:
        raise SystemExit(error_specs()["DOCTOR"].exit)
