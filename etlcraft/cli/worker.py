"""etl-craft worker: serve a QUEUE pool of a PostgreSQL Engine DB; `workers list`: the workers and the queue.
Each one call of etlcraft.services.workers."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services import workers as service


@click.command("worker")
@click.option("--pool", required=True, envvar="ETL_CRAFT_WORKER_POOL", metavar="P",
              help="The pool to serve: its CFG_POOLS row has PROVIDER 'QUEUE'.")
@click.option("--ingestion-slots", type=click.IntRange(0, 1024), default=4, show_default=True,
              help="PYTHON task processes at once.")
@click.option("--warehouse-slots", type=click.IntRange(0, 1024), default=4, show_default=True,
              help="SQL, BUSINESS_RULES and EMAIL_ALERT task processes at once.")
@click.option("--drain-seconds", type=click.FloatRange(0), default=300.0, show_default=True,
              help="After SIGTERM, how long running attempts get to end before they are stopped and recorded "
                   "FAILED \"worker drained\".")
@click.option("--name", envvar="ETL_CRAFT_WORKER_NAME", metavar="NAME",
              help="The worker's name in workers list and in what it records [default: <host>-worker].")
@click.option("--heartbeat-seconds", type=click.IntRange(1, 3600), default=10, show_default=True,
              help="How often the worker renews its leases, reads cancellations and reaps workers gone silent; "
                   "one silent for 3 heartbeats is declared GONE by the others.")
@click.option("--lease-seconds", type=click.IntRange(2, 86400), default=None,
              help="The lease of each attempt it claims [default: 6 heartbeats].")
@click.pass_obj
def command(ctx: CliContext, pool: str, ingestion_slots: int, warehouse_slots: int, drain_seconds: float,
            name: str | None, heartbeat_seconds: int, lease_seconds: int | None) -> None:
    """Serve a QUEUE pool until stopped: claim its queued attempts for the free slots of each kind, run each in a
    task process of its own, heartbeat, and acknowledge cancellations within one heartbeat. PostgreSQL Engine DB
    only; refused when the Engine DB's migrations differ from this etl-craft's. SIGTERM or Ctrl-C drains (no new
    claim; running attempts get --drain-seconds to end); a second signal stops at once."""
    options = service.WorkerOptions(pool, ingestion_slots, warehouse_slots, drain_seconds, name, heartbeat_seconds,
                                    lease_seconds)

    def log(line: str) -> None:
        click.echo(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC {line}", file=sys.stderr)

    db = ctx.engine_db(pool_size=service.pool_size(options.slots))
    code = service.run_worker(db, ctx.config(), options, ctx.actor(), log)
    if code:
        sys.exit(code)


@click.group("workers")
def workers() -> None:
    """Workers: the etl-craft worker processes serving QUEUE pools, and the queue they serve."""


@workers.command("list")
@format_option
@click.pass_obj
def list_command(ctx: CliContext, output_format: str) -> None:
    """List the workers (those stopped in the last day too), newest first: pool, status (ACTIVE, DRAINING or
    GONE), host and pid, slots in use per kind as a bar, seconds since the last heartbeat; then the queue depth
    (queued and due) per pool and slot kind. Changes nothing."""
    doc = ctx.remote.get("/workers") if ctx.remote else service.list_workers(ctx.existing_engine_db())
    emit_document(output_format, doc, service.render)
