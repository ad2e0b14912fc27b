"""etl-craft rehash --target S.T [--dry-run]: recompute a merge target's HASH_KEY with hash version 2."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit, format_option
from etlcraft.core.actor import acting_as
from etlcraft.core.errors import UsageError
from etlcraft.handlers.sql.rehash import MergeContract, RehashResult, one_contract, rehash_target, target_name
from etlcraft.services.metadata import load_metadata


@click.command("rehash")
@click.option("--target", "target", metavar="S.T", required=True,
              help="The target table (TARGET_OBJECT of its merge tasks), as schema.table or table.")
@click.option("--dry-run", is_flag=True, help="Count the rows whose HASH_KEY would change; change nothing.")
@format_option
@click.pass_obj
def command(ctx: CliContext, target: str, dry_run: bool, output_format: str) -> None:
    """Recompute HASH_KEY for every row of a merge target (every version of an SCD2 target) with the change hash
    of this version (version 2), in one statement in one warehouse transaction, then record version 2 in
    AUD_TARGET_HASH_VERSION. A merge refuses a target whose hashes may come from an older version until it is
    rehashed. MERGE_KEY and MERGE_COMPARE_COLUMNS come from the active merge tasks writing the target."""
    config = ctx.config()
    db = ctx.existing_engine_db()
    name = target_name(target, config.warehouse.dialect)
    contracts = [MergeContract.of(t.key, t.parameter("MERGE_KEY"), t.parameter("MERGE_COMPARE_COLUMNS"))
                 for t in load_metadata(db).tasks
                 if t.handler == "SQL" and t.action in ("SCD1_MERGE", "SCD2_MERGE") and t.target
                 and _same(t.target, name.key, config.warehouse.dialect)]
    with acting_as(ctx.actor()):
        result = rehash_target(config, db, name, one_contract(str(name), contracts), dry_run=dry_run)
    emit(output_format, result_document(result), lambda: result_text(result))


def _same(task_target: str, key: str, dialect: str) -> bool:
    try:
        return target_name(task_target, dialect).key == key
    except UsageError:
        return False


def result_document(result: RehashResult) -> dict[str, Any]:
    return document("rehash", 1, {"target": result.target, "hash_version": 2, "rows": result.rows,
                                  "changed": result.changed, "compare_columns": list(result.compare),
                                  "dry_run": result.dry_run})


def result_text(result: RehashResult) -> str:
    verb = "would change" if result.dry_run else "changed"
    done = "nothing recorded (--dry-run)" if result.dry_run else "hash version 2 recorded"
    return (f"{result.target}: {result.rows:,} row(s), HASH_KEY {verb} on {result.changed:,}; compare columns "
            f"{', '.join(result.compare) or '(none)'}; {done}")
