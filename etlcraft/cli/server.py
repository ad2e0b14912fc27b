"""etl-craft server: run every pipeline on its schedule; `server status` shows who leads and what is queued."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.core.errors import EngineDbError
from etlcraft.services.server import DEFAULT_SLOTS, serve, server_status, status_json, status_text


@click.group("server", invoke_without_command=True)
@click.option("--slots", type=click.IntRange(1, 1024), default=DEFAULT_SLOTS, show_default=True,
              help="Task processes at once, over every pipeline (each pipeline also keeps to its "
                   "MAX_PARALLEL_TASKS, else Orchestration: Max_parallel_tasks).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="One line per decision, as text or as JSON.")
@click.pass_context
def command(click_ctx: click.Context, slots: int, log_format: str) -> None:
    """Run every pipeline on its schedule, by itself, until stopped (SIGTERM or Ctrl-C). One server leads an Engine
    DB at a time: a second one exits at once naming the first. The server creates the runs of due schedule ticks,
    admits them through their gates, drives every active run (those started with etl-craft run --init-only or the
    SQL API too), retries, times out and finalizes, and hands over to its successor after a crash. It also serves
    the HTTP API at Orchestration: Api_address (default 127.0.0.1:8730); see etl-craft api. On PostgreSQL it keeps
    a fixed pool of Orchestration: Db_pool_size connections to the Engine DB (default 10), never more; workers size
    theirs from their slots."""
    if click_ctx.invoked_subcommand is not None:
        return
    ctx: CliContext = click_ctx.obj

    def write(line: str) -> None:
        click.echo(line, file=sys.stderr)

    config = ctx.config()
    db = ctx.engine_db(pool_size=config.orchestration.db_pool_size)

    def api() -> AbstractContextManager[object]:
        from etlcraft.api.serve import api_in_thread

        return api_in_thread(db, config, config.orchestration.api_address, write)

    with acting_as(ctx.actor()):
        code = serve(db, config, slots, log_format == "json", write, alongside=api)
    if code:
        raise EngineDbError("the server lost its lock on the Engine DB and stopped; its runs go to the next server "
                            "once their leases expire: start etl-craft server again")


@command.command("status")
@format_option
@click.pass_obj
def status(ctx: CliContext, output_format: str) -> None:
    """The server leading the Engine DB (host, pid, uptime, last heartbeat), the runs in progress and queued, the
    attempts waiting for a slot and the next schedule ticks."""
    db = ctx.existing_engine_db()
    found = server_status(db, ctx.config())
    now = db.clock.now()
    emit(output_format, status_json(found, now), lambda: status_text(found, now))
