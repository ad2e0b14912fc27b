"""etl-craft generate-yml: one versioned YAML file per pipeline, for an external orchestrator (Apache Airflow).

Each file describes one DAG: the control step `__init__` (creates or reopens the run keyed by the orchestrator's run
id, as of the date its data interval ends), one step per task running `etl-craft run --task-code T` in that run,
the control step `__finalize__` that ends the run, and a gate step per dependency on another pipeline (a sensor in
the DAG factory, integrations/airflow). Edge types become Airflow trigger rules; a pipeline whose graph Airflow's
trigger rules cannot express is refused here, with the reason, rather than run differently there.

Commands are built from argument lists joined with shlex.join, and every code is checked against the identifier
rule before it reaches a command, even on an Engine DB migrated without the database's check (B47, B64).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from etlcraft.config.keys import CODE_PATTERN
from etlcraft.core.errors import EtlCraftError, RefusedByPolicyError, UsageError
from etlcraft.core.graph import find_cycles
from etlcraft.core.parameters import IDENTIFIER_EXPECTED
from etlcraft.services.metadata import Metadata, PipelineView, TaskEdge, TaskView

YAML_VERSION = 1
INIT, FINALIZE = "__init__", "__finalize__"
#: The run key and run date an orchestrator's run gives etl-craft (seed S3.C): Airflow renders these templates.
RUN_KEY, RUN_DATE = "orchestrator:{{ run_id }}", "{{ data_interval_end | ds }}"
#: The oldest Airflow whose templates have both run_id and data_interval_end.
MIN_AIRFLOW = (2, 2, 0)
#: The oldest Airflow with the one_done trigger rule (a task with RUN_CONDITION ANY over ALWAYS edges).
ONE_DONE_AIRFLOW = (2, 5, 0)
#: How long a gate's sensor waits for the other pipeline, and how often it looks, unless told otherwise.
GATE_TIMEOUT_SECONDS, GATE_POKE_SECONDS = 6 * 3600, 60

#: Trigger rule of a task by its RUN_CONDITION and the type of its edges inside the pipeline. HAS_DATA waits for
#: success like SUCCESS: whether the upstream wrote rows is judged by etl-craft when the task's command runs.
TRIGGER_RULES = {
    ("ALL", "SUCCESS"): "all_success", ("ALL", "FAILURE"): "all_failed", ("ALL", "ALWAYS"): "all_done",
    ("ANY", "SUCCESS"): "one_success", ("ANY", "FAILURE"): "one_failed", ("ANY", "ALWAYS"): "one_done",
}
#: The states of the other pipeline's DAG run (whole-pipeline gate) or task (task gate) that meet a gate, and those
#: that can never meet it (the sensor then fails at once instead of waiting for its timeout).
GATE_STATES = {
    "SUCCESS": (["success"], ["failed", "upstream_failed", "skipped"]),
    "FAILURE": (["failed"], ["success", "skipped"]),
    "ALWAYS": (["success", "failed", "upstream_failed", "skipped"], []),
}
DAG_RUN_STATES = ("success", "failed")
_CODE = re.compile(CODE_PATTERN)


@dataclass(frozen=True)
class YmlOptions:
    """How the generated commands start etl-craft, and what Airflow they target."""

    executable: str = "etl-craft"
    project_dir: str = "."
    airflow_version: tuple[int, ...] = MIN_AIRFLOW
    gate_timeout_seconds: int = GATE_TIMEOUT_SECONDS
    configured_zone: str | None = None  # `Orchestration: Timezone`, after the project row's (etlcraft.core.zones)
    #: The retry rule of a task that sets none: `Orchestration: Retries, Retry_delay_seconds, Retry_backoff`.
    retries: int = 0
    retry_delay_seconds: int = 60
    retry_backoff: float = 2.0


def parse_airflow_version(text: str) -> tuple[int, ...]:
    """`--airflow-version`: a numeric release (2.2, 2.10.5, 3.0.0), the oldest Airflow the DAGs must run on."""
    if not re.fullmatch(r"\d+(\.\d+){0,2}", text):
        raise UsageError(f"--airflow-version {text!r} is not a numeric Airflow release; give one such as 2.10.5 or "
                         "3.0 (pre-releases and suffixes are not accepted)")
    version = tuple(int(part) for part in text.split("."))
    if version < MIN_AIRFLOW:
        raise UsageError(f"--airflow-version {text} is older than 2.2.0, the first Airflow whose templates give both "
                         "run_id and data_interval_end, which the generated commands pass as the run key and run "
                         "date; target Airflow 2.2.0 or newer")
    return version


def check_code(kind: str, code: str) -> str:
    """`code` when it is an identifier; refused otherwise, since it is placed in shell commands and DAG ids."""
    if not _CODE.fullmatch(code):
        raise RefusedByPolicyError(f"{kind} code {code!r} cannot be exported to Airflow: expected "
                                   f"{IDENTIFIER_EXPECTED}; rename it in a project migration and run etl-craft migrate")
    return code


def command(options: YmlOptions, pipeline: str, *step: str) -> str:
    """One `etl-craft run` in the orchestrator's run, as a shell-safe command line."""
    return shlex.join([options.executable, "--project", options.project_dir, "run", "--pipeline-code", pipeline,
                       "--run-key", RUN_KEY, "--run-date", RUN_DATE, *step])


def trigger_rule(task: TaskView, edges: Sequence[TaskEdge], options: YmlOptions) -> str:
    """The Airflow trigger rule that starts `task` when etl-craft would, from its edges inside the pipeline."""
    if not edges:
        return "all_success"
    types = {"SUCCESS" if e.type == "HAS_DATA" else e.type for e in edges}
    where = f"task {task.key}"
    if len(types) > 1:
        ordered = sorted(edges, key=lambda e: e.upstream_task_code)
        listed = ", ".join(f"{e.upstream_task_code} ({e.type})" for e in ordered)
        raise RefusedByPolicyError(
            f"{where} waits for {listed}: Airflow gives a task one trigger rule over all its upstream tasks, so it "
            "cannot mix these edge types; give the task's dependencies one type (SUCCESS and HAS_DATA may be mixed), "
            "or run this pipeline with etl-craft itself")
    rule = TRIGGER_RULES[(task.run_condition, types.pop())]
    if rule == "one_done" and options.airflow_version < ONE_DONE_AIRFLOW:
        raise RefusedByPolicyError(
            f"{where} has RUN_CONDITION ANY over ALWAYS edges, which needs Airflow's one_done trigger rule (Airflow "
            "2.5.0 and newer); the target is --airflow-version " + ".".join(map(str, options.airflow_version))
            + "; target 2.5.0 or newer")
    return rule


def _task_step(task: TaskView, edges: Sequence[TaskEdge], options: YmlOptions) -> dict[str, Any]:
    def number(name: str, default: float) -> float:
        value = task.parameter(name)
        return float(value) if value not in (None, "") else default

    return {"task_id": task.code, "kind": "task", "upstream": sorted(e.upstream_task_code for e in edges) or [INIT],
            "trigger_rule": trigger_rule(task, edges, options),
            "command": command(options, task.pipeline_code, "--task-code", task.code),
            "retries": int(number("RETRIES", options.retries)),
            "retry_delay_seconds": int(number("RETRY_DELAY_SECONDS", options.retry_delay_seconds)),
            "retry_backoff": number("RETRY_BACKOFF", options.retry_backoff),
            "timeout_seconds": int(number("TASK_TIMEOUT_SECONDS", 0))}


def _gates(pipeline: PipelineView, metadata: Metadata, options: YmlOptions) -> list[dict[str, Any]]:
    """One gate step per dependency of the pipeline on another pipeline, or of one of its tasks on another
    pipeline's task: each waits, before the run is created, for that pipeline's run (or task) of the same logical
    date."""
    found: dict[tuple[str, str | None], str] = {}
    for p in metadata.pipeline_edges:
        if p.pipeline_id == pipeline.pipeline_id and p.upstream_active:
            found[(check_code("pipeline", p.upstream_pipeline_code), None)] = p.type
    for e in metadata.task_edges:
        if e.pipeline_id == pipeline.pipeline_id and e.cross_pipeline and e.upstream_active:
            upstream = (check_code("pipeline", e.upstream_pipeline_code), check_code("task", e.upstream_task_code))
            if found.setdefault(upstream, e.type) != e.type:
                raise RefusedByPolicyError(
                    f"pipeline {pipeline.code} waits for {'.'.join(upstream)} with two edge types ({found[upstream]} "
                    f"and {e.type}); one gate step can wait for one of them: give those dependencies one type")
    gates = []
    for (upstream_pipeline, upstream_task), kind in sorted(found.items(), key=lambda i: (i[0][0], i[0][1] or "")):
        allowed, failed = GATE_STATES["SUCCESS" if kind == "HAS_DATA" else kind]
        if upstream_task is None:  # a whole pipeline: its DAG run ends success or failed, no other state
            allowed, failed = [s for s in allowed if s in DAG_RUN_STATES], [s for s in failed if s in DAG_RUN_STATES]
        gates.append({"task_id": f"__gate__{upstream_pipeline}" + (f"__{upstream_task}" if upstream_task else ""),
                      "kind": "gate", "upstream": [], "trigger_rule": "all_success",
                      "gate": {"pipeline": upstream_pipeline, "task": upstream_task, "type": kind,
                               "allowed_states": allowed, "failed_states": failed,
                               "timeout_seconds": options.gate_timeout_seconds,
                               "poke_interval_seconds": GATE_POKE_SECONDS}})
    return gates


def pipeline_dag(pipeline: PipelineView, metadata: Metadata, options: YmlOptions) -> dict[str, Any]:
    """The YAML document of one pipeline (etl_craft_yaml_version 1), checked before it is returned."""
    code = check_code("pipeline", pipeline.code)
    tasks = metadata.tasks_of(pipeline.pipeline_id)
    inner = [e for e in metadata.task_edges
             if e.pipeline_id == pipeline.pipeline_id and not e.cross_pipeline and e.upstream_active]
    for task in tasks:
        check_code("task", task.code)
    cycles = find_cycles([t.code for t in tasks], [(e.task_code, e.upstream_task_code) for e in inner])
    if cycles:
        raise RefusedByPolicyError(f"pipeline {code} has a dependency cycle ({' -> '.join(cycles[0])}), which no DAG "
                                   "can hold; break it in a project migration (etl-craft validate lists cycles)")
    gates = _gates(pipeline, metadata, options)
    steps = [_task_step(t, [e for e in inner if e.task_id == t.task_id], options) for t in tasks]
    has_downstream = {e.upstream_task_code for e in inner}
    init = {"task_id": INIT, "kind": "init", "upstream": [g["task_id"] for g in gates], "trigger_rule": "all_success",
            "command": command(options, code, "--init-only")}
    final = {"task_id": FINALIZE, "kind": "finalize", "trigger_rule": "all_done",
             "upstream": sorted(t.code for t in tasks if t.code not in has_downstream) or [INIT],
             "command": command(options, code, "--finalize-only")}
    zone = pipeline.timezone or pipeline.project_zone(options.configured_zone).name
    doc = {"etl_craft_yaml_version": YAML_VERSION,
           "pipeline": {"code": code, "project": pipeline.project_code, "name": pipeline.name,
                        "description": pipeline.description, "schedule": pipeline.schedule, "timezone": zone,
                        "catchup": pipeline.catchup},
           "airflow": {"min_version": ".".join(map(str, options.airflow_version))},
           "steps": [*gates, init, *steps, final]}
    check_dag(doc)
    return doc


def check_dag(doc: dict[str, Any]) -> None:
    """Refuse a DAG with a step depending on itself, a dangling upstream, or control steps other than exactly one
    `__init__` and one `__finalize__` (seed S2.H.2); then check the document against the shipped schema."""
    steps = doc["steps"]
    ids = [s["task_id"] for s in steps]
    where = f"the DAG of pipeline {doc['pipeline']['code']}"
    for control in (INIT, FINALIZE):
        if ids.count(control) != 1:
            raise EtlCraftError(f"{where} has {ids.count(control)} {control} steps, expected exactly one; this is a "
                                "bug in etl-craft generate-yml: please report it")
    if len(set(ids)) != len(ids):
        raise EtlCraftError(f"{where} repeats a step id ({sorted({i for i in ids if ids.count(i) > 1})}); expected "
                            "unique ids; this is a bug in etl-craft generate-yml: please report it")
    for s in steps:
        if s["task_id"] in s["upstream"] or not set(s["upstream"]) <= set(ids):
            raise EtlCraftError(f"{where}: step {s['task_id']} has upstream {s['upstream']}, expected other steps of "
                                "the DAG; this is a bug in etl-craft generate-yml: please report it")
    try:
        _validator().validate(doc)
    except jsonschema.ValidationError as exc:
        raise EtlCraftError(f"{where} does not match pipeline-yaml.schema.json at {list(exc.absolute_path)}: "
                            f"{exc.message}; this is a bug in etl-craft generate-yml: please report it") from None


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    found = schema()
    validator: jsonschema.protocols.Validator = jsonschema.validators.validator_for(found)(found)
    return validator


def schema() -> dict[str, Any]:
    """The JSON Schema of etl_craft_yaml_version 1 (etlcraft/services/pipeline-yaml.schema.json)."""
    text = resources.files("etlcraft.services").joinpath("pipeline-yaml.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@dataclass(frozen=True)
class Written:
    pipeline_code: str
    path: Path
    steps: int


def generate(metadata: Metadata, out_dir: Path, codes: Sequence[str], options: YmlOptions) -> list[Written]:
    """Write `<code>.yml` for each pipeline in `codes` (every active pipeline when empty) into `out_dir`. Every
    document is built and checked before the first file is written: a refused pipeline writes nothing."""
    pipelines = [metadata.pipeline(c) for c in codes] if codes else list(metadata.pipelines)
    docs = [pipeline_dag(p, metadata, options) for p in pipelines]
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for doc in docs:
        path = out_dir / f"{doc['pipeline']['code']}.yml"
        header = ("# Generated by etl-craft generate-yml from the Engine DB's metadata: regenerate it, do not edit "
                  "it.\n")
        path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=1000), encoding="utf-8")
        written.append(Written(doc["pipeline"]["code"], path, len(doc["steps"])))
    return written


def written_json(written: Sequence[Written]) -> dict[str, Any]:
    return {"schema": "etl-craft/generate-yml/1", "etl_craft_yaml_version": YAML_VERSION,
            "files": [{"pipeline_code": w.pipeline_code, "path": str(w.path), "steps": w.steps} for w in written]}
