"""etl-craft generate-docs: build the catalog site (static HTML) from the Engine DB, the SQL files and the warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import document, emit_document, format_option

DEFAULT_FOLDER = "site"


@click.command("generate-docs")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), envvar="ETL_CRAFT_DOCS_DIR",
              help=f"Folder to build the site in (default: {DEFAULT_FOLDER}/ in the project folder). Only pages whose "
                   "input changed since the last build are written again.")
@click.option("--runs", type=click.IntRange(min=1), default=50, show_default=True,
              help="Runs of history shown per pipeline (the newest).")
@click.option("--offline", is_flag=True, help="Do not read the warehouse schema; lineage then traces only the "
                                                "tables the project's tasks make.")
@click.option("--title", default="etl-craft catalog", show_default=True, help="The site's title.")
@format_option
@click.pass_obj
def command(ctx: CliContext, out: Path | None, runs: int, offline: bool, title: str, output_format: str) -> None:
    """Build the catalog: a static site (no JavaScript, opens from file://) of the pipelines with their schedule,
    owner, last status and health; each pipeline's task graph coloured by its latest run, run history, key figures
    (scheduled runs apart from backfills and repairs) and interventions; each task's SQL, action, parameters
    (secret ones masked) and tables; each table's columns and column lineage. Serve it with publish-docs."""
    from etlcraft.catalog_site.generate import generate_docs

    config = ctx.config() if ctx.has_project else None
    folder = (out if out is not None else ctx.project_dir / DEFAULT_FOLDER).absolute()
    done = generate_docs(ctx.existing_engine_db(), config, folder, runs, offline=offline, title=title)
    b = done.build
    doc = document("catalog-build", 1, {"folder": str(b.folder), "pages": b.pages, "rendered": b.rendered,
                                        "written": b.written, "removed": b.removed,
                                        "unresolved_columns": b.unresolved_columns, "warning": done.warning})
    emit_document(output_format, doc, _text)


def _text(doc: dict[str, Any]) -> str:
    lines = [f"catalog built in {doc['folder']}: {doc['pages']} pages, {doc['rendered']} rendered, "
             f"{doc['written']} files written, {doc['removed']} removed",
             f"open {doc['folder']}/index.html, or serve it with etl-craft publish-docs"]
    if doc["unresolved_columns"]:
        lines.append(f"{doc['unresolved_columns']} output columns have sources that could not be traced; their task "
                     "pages say why")
    if doc["warning"]:
        lines.append(f"warning: {doc['warning']}")
    return "\n".join(lines)
