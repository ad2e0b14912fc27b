"""The etl-craft command line: one module per command, each a thin adapter over engine and service calls."""

from __future__ import annotations

import importlib
import os
import re
import sys
import tempfile
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from etlcraft import __version__
from etlcraft.core.errors import EtlCraftError, UsageError

# Each command's module, imported only when the command runs (or help lists it): a command then loads only what it
# uses, and `etl-craft status` does not pay for the SQL handler, sqlglot or DuckDB.
COMMANDS = {
    "alerts": "etlcraft.cli.alerts:command",
    "api": "etlcraft.cli.api:command",
    "audit": "etlcraft.cli.audit:command",
    "bundle": "etlcraft.cli.bundle:command",
    "cancel": "etlcraft.cli.control:cancel",
    "doctor": "etlcraft.cli.doctor:command",
    "engine": "etlcraft.cli.engine:group",
    "explain": "etlcraft.cli.explain:command",
    "generate-docs": "etlcraft.cli.generate_docs:command",
    "generate-yml": "etlcraft.cli.generate_yml:command",
    "grant": "etlcraft.cli.grant:command",
    "history": "etlcraft.cli.status:history",
    "init": "etlcraft.cli.init:command",
    "init-db": "etlcraft.cli.init_db:command",
    "list": "etlcraft.cli.list_pipelines:command",
    "logs": "etlcraft.cli.status:logs",
    "mark": "etlcraft.cli.control:mark",
    "migrate": "etlcraft.cli.migrate:command",
    "pause": "etlcraft.cli.control:pause",
    "publish-docs": "etlcraft.cli.publish_docs:command",
    "reconcile": "etlcraft.cli.reconcile:command",
    "rehash": "etlcraft.cli.rehash:command",
    "reopen": "etlcraft.cli.control:reopen",
    "resume": "etlcraft.cli.control:resume",
    "run": "etlcraft.cli.run:command",
    "schedule": "etlcraft.cli.schedule:command",
    "server": "etlcraft.cli.server:command",
    "show": "etlcraft.cli.show:command",
    "status": "etlcraft.cli.status:status",
    "test": "etlcraft.cli.test:command",
    "token": "etlcraft.cli.token:command",
    "validate": "etlcraft.cli.validate:command",
    "worker": "etlcraft.cli.worker:command",
    "workers": "etlcraft.cli.worker:workers",
}


#: Option spellings accepted but not shown: the underscore forms of earlier releases, so scripts keep working.
OPTION_ALIASES = {"--pipeline_code": "--pipeline-code", "--task_code": "--task-code"}

#: The environment variable prefix, and the one earlier releases read (still accepted, with a warning).
ENV_PREFIX, DEPRECATED_ENV_PREFIX = "ETL_CRAFT_", "ETLCRAFT_"


def spell_options(args: list[str]) -> list[str]:
    """`args` with every hidden alias (also in its `--name=value` form) replaced by the documented spelling; the
    tokens after a `--` are left alone."""
    spelled: list[str] = []
    for position, arg in enumerate(args):
        if arg == "--":
            return spelled + args[position:]
        name, equals, value = arg.partition("=")
        spelled.append(OPTION_ALIASES[name] + equals + value if name in OPTION_ALIASES else arg)
    return spelled


def adopt_deprecated_variables(environ: Any = os.environ) -> list[str]:
    """Copy each ETLCRAFT_X variable to ETL_CRAFT_X unless that is set already, for this process and the task
    processes it starts; one warning per variable says what to rename. Returns the warnings."""
    warnings = []
    for old in sorted(k for k in environ if k.startswith(DEPRECATED_ENV_PREFIX)):
        new = ENV_PREFIX + old[len(DEPRECATED_ENV_PREFIX):]
        if new in environ:
            warnings.append(f"warning: {old} is ignored because {new} is set; remove {old}")
        else:
            environ[new] = environ[old]
            warnings.append(f"warning: {old} is deprecated and will stop working in 1.0.0; rename it {new}")
    return warnings


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (the pattern of click's documentation)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        for warning in adopt_deprecated_variables():
            click.echo(warning, err=True)
        return super().make_context(info_name, spell_options(list(args)), parent, **extra)

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
@click.option("--project", "project", type=click.Path(file_okay=False, path_type=str), envvar="ETL_CRAFT_PROJECT",
              default=".", show_default=True,
              help="The project directory (holding craft-connector.yml); the project's code is --project-code.")
@click.option("--project-code", "project_code", envvar="ETL_CRAFT_PROJECT_CODE", metavar="CODE",
              help="The project (CFG_PROJECTS.PROJECT_CODE) whose pipelines the command acts on, when the Engine DB "
                   "serves several [default: Orchestration: Project, else the Engine DB's only project].")
@click.option("--engine-url", envvar="ETL_CRAFT_ENGINE_URL",
              help="Use this Engine DB instead of the project's Engine section (postgresql://... or sqlite:///...).")
@click.option("--engine-schema", envvar="ETL_CRAFT_ENGINE_SCHEMA", default=None,
              help="PostgreSQL schema of the Engine DB with --engine-url [default: etl_craft].")
@click.option("--server", envvar="ETL_CRAFT_SERVER", metavar="URL",
              help="Ask the HTTP API of etl-craft server at URL (http://host:8730) instead of the Engine DB, with the "
                   "token in ETL_CRAFT_TOKEN; for list, show, status, history, logs, explain, audit, mark, cancel, "
                   "pause, resume, run --init-only and token.")
@click.pass_context
def cli(ctx: click.Context, project: str, project_code: str | None, engine_url: str | None,
        engine_schema: str | None, server: str | None) -> None:
    """etl-craft runs a team's ETL from metadata; its Engine DB holds the state machine."""
    from etlcraft.cli.context import CliContext

    if server:
        from etlcraft.cli.remote import COMMANDS as REMOTE_COMMANDS
        from etlcraft.cli.remote import refuse

        if ctx.invoked_subcommand not in REMOTE_COMMANDS:
            raise refuse(str(ctx.invoked_subcommand))
    if server and engine_url:
        raise UsageError("--server and --engine-url both say where to work; give one of them (--server asks the "
                         "HTTP API, --engine-url opens the Engine DB)")
    ctx.obj = CliContext.create(project, engine_url, engine_schema, server, project_code)
    ctx.obj.choose_project()
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
    except Exception as exc:  # the last line of defence: one line for the user, the trace in a file
        where = write_crash_report(exc)
        click.echo(f"error: etl-craft failed unexpectedly ({type(exc).__name__}: {exc}); the full trace is in "
                   f"{where}; please attach it to a bug report", err=True)
        sys.exit(EtlCraftError().exit_code)


def write_crash_report(exc: BaseException) -> Path:
    """Write the trace of an unexpected error to a new file in the system's temporary folder and return its path."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    fd, name = tempfile.mkstemp(prefix=f"etl-craft-crash-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        command = re.sub(r"://([^:/@\s]+):[^@\s]+@", r"://\1:***@", " ".join(sys.argv[1:]))
        out.write(f"etl-craft {__version__}: {command}\n\n")
        out.write("".join(traceback.format_exception(exc)))
    return Path(name)
