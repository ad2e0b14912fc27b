"""etl-craft bundle publish and list: pinned project bundles, each one call of etlcraft.services.bundles."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services import bundles
from etlcraft.services.values import as_time


@click.group("bundle")
def command() -> None:
    """Pinned project bundles: the project's sql_files/, ingestion_scripts/ and craft-connector.yml (as written:
    secrets stay the names of their variables) uploaded to Artifacts.Store. Each new run pins its project's latest
    bundle, and every attempt of the run runs its files, whatever changes in the working folder meanwhile."""


@command.command("publish")
@format_option
@click.pass_obj
def publish(ctx: CliContext, output_format: str) -> None:
    """Upload the project's files to the artifact store (each file once, by its SHA-256) and record a bundle that
    new runs pin. Publishing files that equal the latest bundle's records nothing and shows that bundle."""
    config = ctx.config()
    doc = bundles.published_json(bundles.publish(ctx.engine_db(), config, ctx.actor()))
    emit_document(output_format, doc, _published_text)


def _published_text(doc: dict[str, Any]) -> str:
    b = doc["bundle"]
    if not doc["created"]:
        return (f"bundle {b['bundle_id']} of project {doc['project']} already holds these files "
                f"({b['file_count']} files, manifest {b['manifest_sha256'][:12]}); nothing was recorded")
    return (f"published bundle {b['bundle_id']} of project {doc['project']}: {b['file_count']} files, "
            f"{b['total_bytes']} bytes ({doc['uploaded']} uploaded to {b['store_url']}); new runs pin it")


@command.command("list")
@format_option
@click.pass_obj
def list_bundles(ctx: CliContext, output_format: str) -> None:
    """List the project's bundles, newest first (the first is the one new runs pin), with the runs that pinned each."""
    db = ctx.existing_engine_db()
    project = bundles.chosen_project(db)
    doc = bundles.list_json(project, bundles.list_bundles(db, project))
    emit_document(output_format, doc, _table)


def _table(doc: dict[str, Any]) -> str:
    found = doc["bundles"]
    if not found:
        return f"project {doc['project']} has no bundle; publish one with etl-craft bundle publish"
    header = ["BUNDLE", "CREATED", "BY", "FILES", "BYTES", "MANIFEST", "RUNS"]
    rows = [[str(b["bundle_id"]), f"{as_time(b['created_at']):%Y-%m-%d %H:%M}", b["created_by"],
             str(b["file_count"]), str(b["total_bytes"]), b["manifest_sha256"][:12], str(b["run_count"])]
            for b in found]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
