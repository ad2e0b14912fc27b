"""etl-craft reconcile: settle attempts whose owners stopped renewing their leases."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.services.runs import reconcile


@click.command("reconcile")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_format: str) -> None:
    """Mark LOST every CLAIMED or RUNNING attempt whose lease expired: on this host at once (a process still
    running it is stopped), on other hosts after two lease periods. Runs left with no live attempt lose their
    owner, so etl-craft run can resume them. `etl-craft run` does this itself before every run."""
    with acting_as(ctx.actor()):
        lost = reconcile(ctx.engine_db(), ctx.config().orchestration.lease_seconds)
    rows = [{"attempt_id": r.attempt_id, "owner_id": r.owner_id, "task_run_status": r.task_run_status} for r in lost]

    def text() -> str:
        if not rows:
            return "no attempt had an expired lease"
        return "\n".join(f"attempt {r['attempt_id']} of {r['owner_id']}: LOST" for r in rows)

    emit(output_format, document("reconcile", 1, {"lost": rows}), text)
