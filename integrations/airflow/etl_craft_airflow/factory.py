"""Airflow DAGs from the YAML files of `etl-craft generate-yml`.

Each file (etl_craft_yaml_version 1) becomes one DAG: a BashOperator per control step and task, running the
etl-craft command the file gives, and an ExternalTaskSensor per gate on another pipeline. Airflow schedules and
triggers; etl-craft executes each task, records every attempt in its Engine DB, and retries a failed task itself
as the task's RETRIES, RETRY_DELAY_SECONDS and RETRY_BACKOFF say, so Airflow does not retry on top of it: the
Airflow task's time limit covers all of the task's attempts and the delays between them.

This module imports nothing from etl-craft: the YAML files are the whole contract.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pendulum
import yaml

try:  # Airflow 3, and Airflow 2 with the standard provider
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.providers.standard.sensors.external_task import ExternalTaskSensor
except ImportError:  # Airflow 2 without it
    from airflow.operators.bash import BashOperator  # type: ignore[no-redef]
    from airflow.sensors.external_task import ExternalTaskSensor  # type: ignore[no-redef]
try:
    from airflow.sdk import DAG
except ImportError:
    from airflow import DAG  # type: ignore[no-redef,attr-defined]

#: The versions of the YAML files this factory reads.
SUPPORTED_VERSIONS = (1,)
INIT, FINALIZE = "__init__", "__finalize__"
#: Added to a task's time limit for starting etl-craft and recording the outcome.
MARGIN_SECONDS = 300
#: etl-craft waits at most this long between two attempts of a task, whatever its backoff says.
MAX_RETRY_DELAY_SECONDS = 3600
#: The start date of a DAG whose caller gives none: the schedule then begins with its first tick after it.
DEFAULT_START = (2024, 1, 1)


class PipelineYamlError(ValueError):
    """A file the factory refuses: unknown version, or a shape no DAG can be built from."""


def load_pipeline_yaml(path: Path) -> dict[str, Any]:
    """The document of one generated file, refused unless its version is one this factory reads."""
    doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or "etl_craft_yaml_version" not in doc:
        raise PipelineYamlError(f"{path}: not an etl-craft pipeline file (no etl_craft_yaml_version); expected a file "
                                "written by etl-craft generate-yml")
    version = doc["etl_craft_yaml_version"]
    if version not in SUPPORTED_VERSIONS:
        raise PipelineYamlError(
            f"{path}: etl_craft_yaml_version {version!r} is not one this factory reads "
            f"({', '.join(map(str, SUPPORTED_VERSIONS))}); upgrade etl-craft-airflow to a release that reads it, or "
            "regenerate the file with an etl-craft release that writes a version listed here")
    _check_steps(path, doc.get("steps"))
    return doc


def _check_steps(path: Path, steps: Any) -> None:
    if not isinstance(steps, list) or not all(isinstance(s, dict) and "task_id" in s for s in steps):
        raise PipelineYamlError(f"{path}: steps is not a list of steps with a task_id; regenerate the file")
    ids = [s["task_id"] for s in steps]
    for control in (INIT, FINALIZE):
        if ids.count(control) != 1:
            raise PipelineYamlError(f"{path}: {ids.count(control)} {control} steps, expected exactly one; regenerate "
                                    "the file with etl-craft generate-yml")
    for step in steps:
        upstream = step.get("upstream", [])
        if step["task_id"] in upstream or not set(upstream) <= set(ids):
            raise PipelineYamlError(f"{path}: step {step['task_id']} has upstream {upstream}, expected other steps "
                                    "of the file; regenerate the file with etl-craft generate-yml")


def attempts_budget(step: dict[str, Any]) -> timedelta | None:
    """The Airflow time limit of a task step: every attempt etl-craft may make at the task's time limit, the
    delays between them, and a margin; None when the task has no time limit."""
    timeout = int(step.get("timeout_seconds", 0))
    if timeout <= 0:
        return None
    retries, delay, backoff = int(step["retries"]), int(step["retry_delay_seconds"]), float(step["retry_backoff"])
    waits = sum(min(MAX_RETRY_DELAY_SECONDS, delay * backoff ** (n - 1)) for n in range(1, retries + 1))
    return timedelta(seconds=(retries + 1) * timeout + waits + MARGIN_SECONDS)


def _operator(step: dict[str, Any], dag_id_prefix: str) -> Any:
    task_id, rule = step["task_id"], step["trigger_rule"]
    if step["kind"] == "gate":
        gate = step["gate"]
        return ExternalTaskSensor(
            task_id=task_id, external_dag_id=dag_id_prefix + gate["pipeline"], external_task_id=gate["task"],
            allowed_states=gate["allowed_states"], failed_states=gate["failed_states"] or None, mode="reschedule",
            timeout=gate["timeout_seconds"], poke_interval=gate["poke_interval_seconds"], trigger_rule=rule)
    budget = attempts_budget(step) if step["kind"] == "task" else None
    return BashOperator(task_id=task_id, bash_command=step["command"], trigger_rule=rule, retries=0,
                        execution_timeout=budget)


def build_dag(doc: dict[str, Any], *, dag_id_prefix: str = "", start_date: datetime | None = None,
              default_args: dict[str, Any] | None = None) -> Any:
    """One DAG from a loaded document (load_pipeline_yaml)."""
    pipeline = doc["pipeline"]
    zone = pendulum.timezone(pipeline["timezone"])
    start = start_date or pendulum.datetime(*DEFAULT_START, tz=zone)
    dag = DAG(dag_id=dag_id_prefix + pipeline["code"], schedule=pipeline["schedule"], start_date=start,
              catchup=bool(pipeline["catchup"]), description=pipeline.get("name") or None,
              doc_md=pipeline.get("description") or None, tags=["etl-craft", pipeline["project"]],
              default_args=default_args or {})
    with dag:
        operators = {step["task_id"]: _operator(step, dag_id_prefix) for step in doc["steps"]}
    for step in doc["steps"]:
        for upstream in step["upstream"]:
            operators[upstream] >> operators[step["task_id"]]
    return dag


def build_dags(folder: str | Path, *, dag_id_prefix: str = "", start_date: datetime | None = None,
               default_args: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every DAG of a folder of generated files (*.yml and *.yaml), by DAG id. In a DAG file:
    `globals().update(build_dags("/path/to/folder"))`."""
    dags = {}
    for path in _files(Path(folder)):
        dag = build_dag(load_pipeline_yaml(path), dag_id_prefix=dag_id_prefix, start_date=start_date,
                        default_args=default_args)
        dags[dag.dag_id] = dag
    return dags


def _files(folder: Path) -> Iterable[Path]:
    if not folder.is_dir():
        raise PipelineYamlError(f"{folder}: not a folder; expected the --output-dir of etl-craft generate-yml")
    return sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
