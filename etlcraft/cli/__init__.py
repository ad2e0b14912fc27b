"""The etl-craft command line: one module per command, each a thin adapter over engine and service calls."""

from __future__ import annotations

import sys

import click

from etlcraft import __version__
from etlcraft.cli import (
    audit,
    doctor,
    explain,
    init,
    init_db,
    list_pipelines,
    migrate,
    reconcile,
    rehash,
    run,
    show,
    status,
    validate,
)
from etlcraft.cli import control as control_commands
from etlcraft.cli.context import CliContext
from etlcraft.core.errors import EtlCraftError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="etl-craft")
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=str), envvar="ETLCRAFT_PROJECT",
              default=".", show_default=True, help="The project directory (holding craft-connector.yml).")
@click.option("--engine-url", envvar="ETLCRAFT_ENGINE_URL",
              help="Use this Engine DB instead of the project's Engine section (postgresql://... or sqlite:///...).")
@click.option("--engine-schema", envvar="ETLCRAFT_ENGINE_SCHEMA", default=None,
              help="PostgreSQL schema of the Engine DB with --engine-url [default: etl_craft].")
@click.pass_context
def cli(ctx: click.Context, project: str, engine_url: str | None, engine_schema: str | None) -> None:
    """etl-craft runs a team's ETL from metadata; its Engine DB holds the state machine."""
    ctx.obj = CliContext.create(project, engine_url, engine_schema)
    ctx.call_on_close(ctx.obj.close)


for module in (init, init_db, migrate, doctor, validate, list_pipelines, show, run, reconcile, rehash, explain, audit):
    cli.add_command(module.command)
for read_command in (status.status, status.history, status.logs):
    cli.add_command(read_command)
for control_command in control_commands.COMMANDS:
    cli.add_command(control_command)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except EtlCraftError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
