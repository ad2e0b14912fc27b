"""etl-craft generate-yml: one YAML file per pipeline for an external orchestrator's DAG factory (Apache Airflow)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.services.generate_yml import (
    GATE_TIMEOUT_SECONDS,
    YmlOptions,
    generate,
    parse_airflow_version,
    written_json,
)
from etlcraft.services.metadata import load_metadata


@click.command("generate-yml")
@click.option("--output-dir", "output_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The folder to write <pipeline code>.yml into (created when missing; files are replaced).")
@click.option("--pipeline-code", "pipeline_codes", multiple=True, metavar="P",
              help="Only pipeline P (repeatable); default: every active pipeline.")
@click.option("--executable", default="etl-craft", show_default=True,
              help="How the orchestrator's workers start etl-craft (a path when it is not on their PATH).")
@click.option("--project-dir", "project_dir", metavar="DIR",
              help="The project directory as the orchestrator's workers see it [default: this project's absolute "
                   "path].")
@click.option("--airflow-version", default="2.2.0", show_default=True, metavar="X.Y.Z",
              help="The oldest Airflow the DAGs must run on (a numeric release, 2.2.0 or newer).")
@click.option("--gate-timeout-seconds", type=click.IntRange(min=1), default=GATE_TIMEOUT_SECONDS, show_default=True,
              help="How long a gate's sensor waits for the other pipeline before it fails.")
@format_option
@click.pass_obj
def command(ctx: CliContext, output_dir: Path, pipeline_codes: tuple[str, ...], executable: str,
            project_dir: str | None, airflow_version: str, gate_timeout_seconds: int, output_format: str) -> None:
    """Write one YAML file per pipeline (etl_craft_yaml_version 1, checked against the JSON Schema that ships with
    etl-craft) for the Airflow DAG factory of integrations/airflow: a control step __init__ that creates the run
    keyed orchestrator:<Airflow run_id> as of the date its data interval ends, one step per task running it with
    etl-craft run --task-code, a control step __finalize__ that ends the run, and a gate step (a sensor) per
    dependency on another pipeline. Edge types become trigger rules; a pipeline that Airflow cannot express is
    refused with the reason, and then no file is written (exit 24)."""
    version = parse_airflow_version(airflow_version)
    defaults = YmlOptions()
    if ctx.has_project:  # a task that sets no retry rule gets the project's (Orchestration: Retries, ...)
        o = ctx.config().orchestration
        defaults = YmlOptions(retries=o.retries, retry_delay_seconds=o.retry_delay_seconds,
                              retry_backoff=o.retry_backoff)
    options = dataclasses.replace(defaults, executable=executable, project_dir=project_dir or str(ctx.project_dir),
                                  airflow_version=version, gate_timeout_seconds=gate_timeout_seconds,
                                  configured_zone=ctx.configured_timezone())
    written = generate(load_metadata(ctx.existing_engine_db()), output_dir, pipeline_codes, options)
    emit_document(output_format, written_json(written), _text)


def _text(doc: dict[str, Any]) -> str:
    if not doc["files"]:
        return "no active pipelines: nothing written"
    return "\n".join(f"{f['pipeline_code']}: {f['path']} ({f['steps']} steps)" for f in doc["files"])
