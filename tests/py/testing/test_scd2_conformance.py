"""Conformance of etl-craft test with a real run: the same SCD2 fixtures through `etl-craft test` (history as steps)
and through `etl-craft run` on the project's DuckDB warehouse give the same history table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from tests.py.support.cli import etl_craft
from tests.py.testing.conftest import make_project, write_jsonl

pytestmark = pytest.mark.process

#: Pipeline `history`: v1 then v2, each an SCD2_MERGE on id into main.t_hist, each reading its own source table.
MIGRATION = """
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, PIPELINE_NAME)
SELECT PROJECT_ID, 'history', 'History' FROM CFG_PROJECTS WHERE ACTIVE_FLAG = 'Y';
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
SELECT PIPELINE_ID, 'v1', 'SQL', 'SCD2_MERGE', 'hist_v1.sql', 'main.t_hist' FROM CFG_PIPELINES
 WHERE PIPELINE_CODE = 'history';
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
SELECT PIPELINE_ID, 'v2', 'SQL', 'SCD2_MERGE', 'hist_v2.sql', 'main.t_hist' FROM CFG_PIPELINES
 WHERE PIPELINE_CODE = 'history';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'MERGE_KEY', 'id' FROM CFG_TASKS WHERE TASK_CODE IN ('v1', 'v2');
INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT d.TASK_ID, u.TASK_ID, 'SUCCESS' FROM CFG_TASKS d JOIN CFG_TASKS u ON u.PIPELINE_ID = d.PIPELINE_ID
 WHERE d.TASK_CODE = 'v2' AND u.TASK_CODE = 'v1';
"""
#: Step 1 loads three keys; step 2 changes one, keeps one and drops one (an SCD2 merge keeps a dropped key's
#: version open: deletes are DELETE_ROWS' job), and adds one.
V1 = [{"id": 1, "name": "ann"}, {"id": 2, "name": "bea"}, {"id": 3, "name": "cy"}]
V2 = [{"id": 1, "name": "bob"}, {"id": 2, "name": "bea"}, {"id": 4, "name": "dee"}]
HISTORY = [
    {"id": 1, "name": "ann", "ACTIVE_FLAG": "N", "valid_from_step": 1, "valid_to_step": 2},
    {"id": 1, "name": "bob", "ACTIVE_FLAG": "Y", "valid_from_step": 2, "valid_to_step": None},
    {"id": 2, "name": "bea", "ACTIVE_FLAG": "Y", "valid_from_step": 1, "valid_to_step": None},
    {"id": 3, "name": "cy", "ACTIVE_FLAG": "Y", "valid_from_step": 1, "valid_to_step": None},
    {"id": 4, "name": "dee", "ACTIVE_FLAG": "Y", "valid_from_step": 2, "valid_to_step": None},
]


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path)
    (root / "migrations" / "0004_history.sql").write_text(MIGRATION, encoding="utf-8")
    for n, rows in ((1, V1), (2, V2)):
        (root / "sql_files" / f"hist_v{n}.sql").write_text(f"SELECT id, name FROM raw.src_v{n}\n", encoding="utf-8")
        write_jsonl(root / "tests" / "fixtures" / f"src_v{n}.jsonl", rows)
    return root


def _real_history(root: Path) -> list[dict[str, Any]]:
    """main.t_hist after a real run, each VALID_FROM and VALID_TO given as the step (1 for v1, 2 for v2) of the task
    run whose time it is: a task run stamps the versions it opens and closes with its own time."""
    engine = sqlite3.connect(root / ".etl-craft" / "engine.db")
    try:
        steps = dict(engine.execute(
            "SELECT r.TASK_RUN_ID, CASE t.TASK_CODE WHEN 'v1' THEN 1 WHEN 'v2' THEN 2 END FROM AUD_TASK_RUN_LOG r "
            "JOIN CFG_TASKS t ON t.TASK_ID = r.TASK_ID WHERE t.TASK_CODE IN ('v1', 'v2')").fetchall())
    finally:
        engine.close()
    warehouse = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
    try:
        rows = warehouse.execute('SELECT id, name, "ACTIVE_FLAG", "VALID_FROM", "VALID_TO", "TASK_RUN_ID" '
                                 "FROM main.t_hist").fetchall()
    finally:
        warehouse.close()
    opened = {valid_from: steps[task_run] for *_, valid_from, _, task_run in rows}
    assert len(opened) == len(set(steps.values())) == 2, (opened, steps)
    return [{"id": i, "name": name, "ACTIVE_FLAG": flag, "valid_from_step": opened[valid_from],
             "valid_to_step": None if valid_to is None else opened.get(valid_to, f"unknown time {valid_to}")}
            for i, name, flag, valid_from, valid_to, _ in rows]


def test_scd2_conformance__etl_craft_test_and_a_real_run__same_history(tmp_path: Path) -> None:
    root = _project(tmp_path)
    # The real run: the same JSONL fixtures loaded as the sources of the project's DuckDB warehouse.
    warehouse = duckdb.connect(str(root / "warehouse.duckdb"))
    try:
        warehouse.execute("CREATE SCHEMA IF NOT EXISTS raw")
        for n in (1, 2):
            fixture = root / "tests" / "fixtures" / f"src_v{n}.jsonl"
            warehouse.execute(f"CREATE TABLE raw.src_v{n} AS SELECT * FROM read_json(?, format = 'newline_delimited')",
                              [str(fixture)])
    finally:
        warehouse.close()
    for args in (("migrate",), ("run", "--pipeline-code", "history")):
        done = etl_craft(*args, cwd=root)
        assert done.code == 0, done.out + done.err
    real = _real_history(root)
    key = lambda row: (row["id"], row["valid_from_step"])  # noqa: E731
    assert sorted(real, key=key) == sorted(HISTORY, key=key)

    # etl-craft test: the same fixtures, the run's task runs as steps, the real run's history as the expectation.
    write_jsonl(root / "tests" / "fixtures" / "real_history.jsonl", real)
    manifest = {"kind": "etl-craft.test.v1", "pipeline": "history",
                "relations": {f"raw.src_v{n}": {"fixture": f"fixtures/src_v{n}.jsonl"} for n in (1, 2)},
                "steps": [{"task": "v1", "expect": {"rows": 3}},
                          {"task": "v2", "expect": {"rows": 5, "history": "fixtures/real_history.jsonl"}}]}
    (root / "tests" / "history.test.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    done = etl_craft("test", "tests/history.test.yaml", "--format", "json", cwd=root)
    report = json.loads(done.out)
    assert done.code == 0, report["tests"][0]
    assert [s["action"] for s in report["tests"][0]["steps"]] == ["SCD2_MERGE", "SCD2_MERGE"]
