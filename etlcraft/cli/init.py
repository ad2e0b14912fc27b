"""etl-craft init DIR: start a project."""

from __future__ import annotations

from pathlib import Path

import click

from etlcraft.cli.output import document, emit, format_option
from etlcraft.services.scaffold import scaffold


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--project-code", help="Code of the project row (default: from the directory name).")
@format_option
def command(directory: Path, project_code: str | None, output_format: str) -> None:
    """Create a project in DIRECTORY: craft-connector.yml (SQLite Engine DB, DuckDB warehouse), .env.example,
    migrations/ with an example (pipeline shop_ingest of two ingestion scripts, then customer_orders of three SQL
    transforms), sql_files/, ingestion_scripts/ and tests/.

    Running it again is safe: identical files are kept, and a file that differs is refused.
    """
    report = scaffold(directory, project_code)
    doc = document("scaffold", 1, {"directory": str(report.directory), "project_code": report.project_code,
                                   "created": report.created, "unchanged": report.unchanged})

    def text() -> str:
        lines = [f"project {report.project_code} in {report.directory}"]
        lines += [f"  created    {name}" for name in report.created]
        lines += [f"  unchanged  {name}" for name in report.unchanged]
        lines.append(f"next: cd {directory} && etl-craft migrate")
        return "\n".join(lines)

    emit(output_format, doc, text)
