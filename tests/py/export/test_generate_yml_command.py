"""The real `etl-craft generate-yml` on the example project (etl-craft init), and the codes the database refuses to
store so that none can reach a generated command (B47, B64)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml

from etlcraft.core.errors import EngineDbError
from etlcraft.engine.db import EngineDB
from etlcraft.services.generate_yml import schema
from tests.py.support import rows
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

SHELL_CODES = ["load $(touch x); echo", "a;rm -rf b", "x`id`", "a|b", "a&&b", "a'b", "__init__", "__finalize__"]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("example")
    assert etl_craft("init", "demo", cwd=root).code == 0
    project = root / "demo"
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


def test_every_example_pipeline__one_file__valid_against_the_shipped_schema_and_equal_to_the_graph(
        example: Path, tmp_path: Path) -> None:
    done = etl_craft("generate-yml", "--output-dir", str(tmp_path), "--format", "json", cwd=example)
    assert done.code == 0, done.err
    written = json.loads(done.out)
    codes = [p["code"] for p in json.loads(etl_craft("list", "--format", "json", cwd=example).out)["pipelines"]]
    assert sorted(f["pipeline_code"] for f in written["files"]) == sorted(codes) == ["customer_orders", "shop_ingest"]
    for code in codes:
        doc = yaml.safe_load((tmp_path / f"{code}.yml").read_text(encoding="utf-8"))
        jsonschema.validate(doc, schema())
        assert doc["etl_craft_yaml_version"] == 1
        shown = json.loads(etl_craft("show", "--pipeline-code", code, "--format", "json", cwd=example).out)
        steps = {s["task_id"]: s for s in doc["steps"]}
        for task in shown["tasks"]:
            inner = {e["upstream_task"] for e in task["depends_on"] if not e["cross_pipeline"]}
            assert set(steps[task["code"]]["upstream"]) == (inner or {"__init__"})
            assert shlex.split(steps[task["code"]]["command"])[-2:] == ["--task-code", task["code"]]
        gates = {s["gate"]["pipeline"] for s in doc["steps"] if s["kind"] == "gate"}
        assert gates == {u["pipeline"] for u in shown["upstream_pipelines"]}


def test_a_pipeline_airflow_cannot_express__refused_with_the_reason__nothing_written(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("audit"), Task("report")]},
                            [("report", "load", "SUCCESS"), ("report", "audit", "FAILURE")])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("generate-yml", "--output-dir", str(tmp_path / "out"), cwd=project)
    assert done.code == 24, done.err
    assert ("task flow.report waits for audit (FAILURE), load (SUCCESS): Airflow gives a task one trigger rule"
            in done.err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_airflow_version__older_than_2_2__refused(example: Path, tmp_path: Path) -> None:
    done = etl_craft("generate-yml", "--output-dir", str(tmp_path), "--airflow-version", "2.1.0", cwd=example)
    assert done.code == 2
    assert "older than 2.2.0" in done.err


def _insert_code(db: EngineDB, column: str, code: str) -> None:
    with db.write() as conn:
        if column == "PROJECT_CODE":
            rows.insert(db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE=code)
        elif column == "POOL_NAME":
            rows.insert(db, conn, "CFG_POOLS", "POOL_ID", POOL_NAME=code)
        else:
            project = rows.insert(db, conn, "CFG_PROJECTS", "PROJECT_ID", PROJECT_CODE="proj")
            pipeline = rows.insert(db, conn, "CFG_PIPELINES", "PIPELINE_ID", PROJECT_ID=project,
                                   PIPELINE_CODE=code if column == "PIPELINE_CODE" else "pipe")
            if column == "TASK_CODE":
                rows.insert(db, conn, "CFG_TASKS", "TASK_ID", PIPELINE_ID=pipeline, TASK_CODE=code, HANDLER="SQL",
                            ACTION="OVERWRITE_TABLE", SQL_FILE="t.sql", TARGET_OBJECT="main.t")


@pytest.mark.parametrize("column", ["PROJECT_CODE", "PIPELINE_CODE", "TASK_CODE", "POOL_NAME"])
@pytest.mark.parametrize("code", SHELL_CODES)
def test_b47_b64_a_code_with_shell_metacharacters_or_a_control_step_name_cannot_be_stored(
        engine_db: EngineDB, column: str, code: str) -> None:
    with pytest.raises(EngineDbError, match="is_identifier"):
        _insert_code(engine_db, column, code)


@pytest.mark.parametrize("column", ["PROJECT_CODE", "PIPELINE_CODE", "TASK_CODE", "POOL_NAME"])
def test_safe_codes__identifiers__stored(engine_db: EngineDB, column: str) -> None:
    _insert_code(engine_db, column, "Load_2")
