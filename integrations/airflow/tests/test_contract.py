"""The Airflow DAGs built from generate-yml's files equal etl-craft's graph, for every example pipeline; one DAG runs
end to end under `airflow dags test` and ends with the same statuses as `etl-craft run`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ETL_CRAFT, etl_craft, new_project
from etl_craft_airflow import PipelineYamlError, attempts_budget, build_dags, load_pipeline_yaml

#: etl-craft's edge types and run conditions, and the Airflow trigger rule each pair means (written here again,
#: independently of generate-yml, as the contract).
RULES = {("ALL", "SUCCESS"): "all_success", ("ALL", "HAS_DATA"): "all_success", ("ALL", "FAILURE"): "all_failed",
         ("ALL", "ALWAYS"): "all_done", ("ANY", "SUCCESS"): "one_success", ("ANY", "HAS_DATA"): "one_success",
         ("ANY", "FAILURE"): "one_failed", ("ANY", "ALWAYS"): "one_done"}


def _pipelines(project: Path) -> list[str]:
    return [p["code"] for p in json.loads(etl_craft(project, "list", "--format", "json").stdout)["pipelines"]]


def _expected(project: Path, shown: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each step of the DAG etl-craft's graph calls for: upstream step ids, trigger rule, command."""
    code = shown["pipeline"]["code"]
    base = [ETL_CRAFT, "--project", str(project), "run", "--pipeline-code", code, "--run-key",
            "orchestrator:{{ run_id }}", "--run-date", "{{ data_interval_end | ds }}"]
    gates = [f"__gate__{u['pipeline']}" for u in shown["upstream_pipelines"]]
    gates += [f"__gate__{e['upstream_pipeline']}__{e['upstream_task']}" for t in shown["tasks"]
              for e in t["depends_on"] if e["cross_pipeline"]]
    steps: dict[str, dict[str, Any]] = {g: {"upstream": set(), "rule": "all_success", "command": None} for g in gates}
    steps["__init__"] = {"upstream": set(gates), "rule": "all_success", "command": [*base, "--init-only"]}
    upstream_of_something = set()
    for task in shown["tasks"]:
        inner = [e for e in task["depends_on"] if not e["cross_pipeline"] and e["upstream_active"]]
        upstream_of_something |= {e["upstream_task"] for e in inner}
        kinds = {e["type"] for e in inner}
        rule = RULES[(task["run_condition"], kinds.pop())] if inner else "all_success"
        steps[task["code"]] = {"upstream": {e["upstream_task"] for e in inner} or {"__init__"}, "rule": rule,
                               "command": [*base, "--task-code", task["code"]]}
    leaves = {t["code"] for t in shown["tasks"]} - upstream_of_something
    steps["__finalize__"] = {"upstream": leaves or {"__init__"}, "rule": "all_done",
                             "command": [*base, "--finalize-only"]}
    return steps


def test_every_example_pipeline__dag_tasks_edges_rules_and_commands__equal_etl_crafts_graph(
        example: tuple[Path, Path], shown: Callable[[str], dict[str, Any]]) -> None:
    project, folder = example
    dags = build_dags(folder)
    codes = _pipelines(project)
    assert sorted(dags) == sorted(codes) and len(codes) == 2
    for code in codes:
        expected, dag = _expected(project, shown(code)), dags[code]
        assert set(dag.task_dict) == set(expected), code
        for task_id, want in expected.items():
            task = dag.task_dict[task_id]
            assert set(task.upstream_task_ids) == want["upstream"], f"{code}.{task_id}"
            assert str(task.trigger_rule) == want["rule"] or task.trigger_rule.value == want["rule"]
            if want["command"] is not None:
                assert shlex.split(task.bash_command) == want["command"], f"{code}.{task_id}"
                assert task.retries == 0


def test_gate__pipeline_dependency__sensor_on_the_upstream_dag(example: tuple[Path, Path]) -> None:
    dag = build_dags(example[1], dag_id_prefix="etl_")["etl_customer_orders"]
    sensor = dag.task_dict["__gate__shop_ingest"]
    assert type(sensor).__name__ == "ExternalTaskSensor"
    assert (sensor.external_dag_id, sensor.external_task_id) == ("etl_shop_ingest", None)
    assert list(sensor.allowed_states) == ["success"] and list(sensor.failed_states) == ["failed"]
    assert sensor.mode == "reschedule"


def test_factory__unknown_version__refused_naming_the_file(example: tuple[Path, Path], tmp_path: Path) -> None:
    doc = yaml.safe_load((example[1] / "shop_ingest.yml").read_text())
    doc["etl_craft_yaml_version"] = 2
    (tmp_path / "shop_ingest.yml").write_text(yaml.safe_dump(doc))
    with pytest.raises(PipelineYamlError, match=r"shop_ingest\.yml: etl_craft_yaml_version 2 is not one this "
                                                r"factory reads \(1\)"):
        build_dags(tmp_path)


@pytest.mark.parametrize("damage", ["second_init", "self_dependency", "no_finalize"])
def test_factory__damaged_steps__refused(example: tuple[Path, Path], tmp_path: Path, damage: str) -> None:
    doc = yaml.safe_load((example[1] / "shop_ingest.yml").read_text())
    steps = doc["steps"]
    if damage == "second_init":
        steps.append(dict(steps[0]))
    elif damage == "self_dependency":
        steps[1]["upstream"] = [steps[1]["task_id"]]
    else:
        doc["steps"] = [s for s in steps if s["task_id"] != "__finalize__"]
    path = tmp_path / "p.yml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(PipelineYamlError, match="regenerate the file"):
        load_pipeline_yaml(path)


def test_timeouts__budget_covers_every_attempt_and_its_delay() -> None:
    step = {"timeout_seconds": 600, "retries": 2, "retry_delay_seconds": 60, "retry_backoff": 2.0}
    assert attempts_budget(step) == timedelta(seconds=3 * 600 + 60 + 120 + 300)
    assert attempts_budget({**step, "timeout_seconds": 0}) is None


def _statuses(project: Path, pipeline: str, key: str) -> tuple[str, dict[str, str]]:
    doc = json.loads(etl_craft(project, "status", "--pipeline-code", pipeline, "--run-key", key, "--format",
                               "json").stdout)
    return doc["run"]["status"], {t["task_code"]: t["status"] for t in doc["tasks"]}


#: A metadata migration that makes the example's first task fail: its script raises.
BREAK = ("UPDATE CFG_TASKS SET SCRIPT_FILE = 'broken.py' WHERE TASK_CODE = 'ingest_customers' AND ACTIVE_FLAG = 'Y';"
         "\n")
OUTCOMES = {"succeeds": ("SUCCESS", {"ingest_customers": "SUCCESS", "ingest_orders": "SUCCESS"}),
            "fails": ("FAILED", {"ingest_customers": "FAILED", "ingest_orders": "SKIPPED"})}


def _example(root: Path, outcome: str) -> Path:
    project = new_project(root)
    if outcome == "fails":
        (project / "ingestion_scripts" / "broken.py").write_text(
            "def run(task):\n    raise RuntimeError('the source is down')\n")
        (project / "migrations" / "0003_break.sql").write_text(BREAK)
        etl_craft(project, "migrate")
    return project


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_airflow_dags_test__shop_ingest__ends_with_the_statuses_of_etl_craft_run(tmp_path: Path,
                                                                                 outcome: str) -> None:
    by_airflow, by_etl_craft = _example(tmp_path / "a", outcome), _example(tmp_path / "b", outcome)
    etl_craft(by_airflow, "generate-yml", "--output-dir", str(tmp_path / "yml"), "--executable", ETL_CRAFT)
    dags = tmp_path / "airflow" / "dags"
    dags.mkdir(parents=True)
    (dags / "etl_craft_dags.py").write_text(
        f"from etl_craft_airflow import build_dags\n\nglobals().update(build_dags({str(tmp_path / 'yml')!r}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "ETL_CRAFT_"))}
    env.update(AIRFLOW_HOME=str(tmp_path / "airflow"), AIRFLOW__CORE__DAGS_FOLDER=str(dags),
               AIRFLOW__CORE__LOAD_EXAMPLES="False", ETL_CRAFT_ACTOR="tester@airflow")
    airflow = str(Path(sys.executable).with_name("airflow"))
    for args in (["db", "migrate"], ["dags", "test", "shop_ingest", "2026-12-01"]):
        done = subprocess.run([airflow, *args], env=env, capture_output=True, text=True, timeout=600, check=False)
        failed_as_expected = outcome == "fails" and args[0] == "dags" and "DagRun Finished" in done.stdout + done.stderr
        assert done.returncode == 0 or failed_as_expected, \
            f"airflow {' '.join(args)}: {done.stdout[-4000:]}{done.stderr[-4000:]}"
    runs = json.loads(etl_craft(by_airflow, "history", "--pipeline-code", "shop_ingest", "--format", "json").stdout)
    keys = [r["run_key"] for r in runs["runs"]]
    assert len(keys) == 1 and keys[0].startswith("orchestrator:manual__"), keys
    assert [r["run_date"] for r in runs["runs"]] == ["2026-12-01"]

    ran = etl_craft(by_etl_craft, "run", "--pipeline-code", "shop_ingest", "--run-key", "reference", check=False)
    assert ran.returncode == (0 if outcome == "succeeds" else 9), ran.stderr
    airflow_statuses = _statuses(by_airflow, "shop_ingest", keys[0])
    assert airflow_statuses == _statuses(by_etl_craft, "shop_ingest", "reference")
    assert airflow_statuses == OUTCOMES[outcome]
