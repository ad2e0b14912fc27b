"""The etl-craft command line: one module per command, each a thin adapter over engine and service calls."""

from __future__ import annotations

import importlib
import sys

import click

from etlcraft import __version__
from etlcraft.core.errors import EtlCraftError

# Each command's module, imported only when the command runs (or help lists it): a command then loads only what it
# uses, and `etl-craft status` does not pay for the SQL handler, sqlglot or DuckDB.
COMMANDS = {
    "audit": "etlcraft.cli.audit:command",
    "cancel": "etlcraft.cli.control:cancel",
    "doctor": "etlcraft.cli.doctor:command",
    "explain": "etlcraft.cli.explain:command",
    "grant": "etlcraft.cli.grant:command",
    "history": "etlcraft.cli.status:history",
    "init": "etlcraft.cli.init:command",
    "init-db": "etlcraft.cli.init_db:command",
    "list": "etlcraft.cli.list_pipelines:command",
    "logs": "etlcraft.cli.status:logs",
    "mark": "etlcraft.cli.control:mark",
    "migrate": "etlcraft.cli.migrate:command",
    "pause": "etlcraft.cli.control:pause",
    "reconcile": "etlcraft.cli.reconcile:command",
    "rehash": "etlcraft.cli.rehash:command",
    "reopen": "etlcraft.cli.control:reopen",
    "resume": "etlcraft.cli.control:resume",
    "run": "etlcraft.cli.run:command",
    "show": "etlcraft.cli.show:command",
    "status": "etlcraft.cli.status:status",
    "validate": "etlcraft.cli.validate:command",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (the pattern of click's documentation)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and command.name == cmd_name, COMMANDS[cmd_name]
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
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
    from etlcraft.cli.context import CliContext

    ctx.obj = CliContext.create(project, engine_url, engine_schema)
    ctx.call_on_close(ctx.obj.close)


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
