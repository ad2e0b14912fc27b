"""etl-craft api: serve the HTTP API alone against the Engine DB, with no scheduling (for read replicas, scripts
and tests); etl-craft server serves the same API beside its schedules."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext


@click.command("api")
@click.option("--address", metavar="HOST:PORT", help="Where to listen [default: Orchestration: Api_address, "
              "else 127.0.0.1:8730].")
@click.pass_obj
def command(ctx: CliContext, address: str | None) -> None:
    """Serve the HTTP API v1 (/api/v1/...) until stopped (SIGTERM or Ctrl-C). Every request needs a bearer token
    from etl-craft token create; each endpoint calls what the matching command calls and returns its JSON."""
    from etlcraft.api.serve import serve_api

    config = ctx.config()
    where = address or config.orchestration.api_address
    click.echo(f"etl-craft API on http://{where}/api/v1 (Ctrl-C stops it)", err=True)
    serve_api(ctx.existing_engine_db(), config, where)
