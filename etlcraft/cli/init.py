"""etl-craft init DIR: start a project."""

from __future__ import annotations

from pathlib import Path

import click

from etlcraft.cli.output import document, emit, format_option
from etlcraft.services.scaffold import scaffold


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--project-code", help="Code of the project row (default: from the directory name).")
@click.option("--blank", is_flag=True, help="A project without example pipelines: the configuration and empty "
              "migrations/, sql_files/ and ingestion_scripts/ folders.")
@format_option
def command(directory: Path, project_code: str | None, blank: bool, output_format: str) -> None:
    """Create a project in DIRECTORY: craft-connector.yml (SQLite Engine DB, DuckDB warehouse), .env.example,
    .gitignore, migrations/ with an example (pipeline shop_ingest of two ingestion scripts, then customer_orders of
    three SQL transforms), sql_files/, ingestion_scripts/ and tests/. With --blank, the folders are empty but for
    a note of what goes in them.

    init overwrites nothing: a directory that already has craft-connector.yml, or any file init would write, is
    refused (exit code 24) and nothing is written.
    """
    report = scaffold(directory, project_code, blank=blank)
    doc = document("scaffold", 1, {"directory": str(report.directory), "project_code": report.project_code,
                                   "created": report.created, "unchanged": report.unchanged})

    def text() -> str:
        lines = [f"project {report.project_code} in {report.directory}"]
        lines += [f"  created    {name}" for name in report.created]
        if report.blank:
            lines.append(f"next: write migrations/0001_<name>.sql (the CFG_PROJECTS row of {report.project_code}, "
                         f"then your pipelines), then cd {directory} && etl-craft migrate")
        else:
            lines.append(f"next: cd {directory} && etl-craft migrate")
        return "\n".join(lines)

    emit(output_format, doc, text)
