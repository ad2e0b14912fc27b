"""A scaffolded example project with one more pipeline, `actions`, whose tasks cover every SQL action and a
business rule over raw.src, for the hermetic tests of etl-craft test."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from etlcraft.cli import cli

ACTIONS_MIGRATION = """
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, PIPELINE_NAME)
SELECT PROJECT_ID, 'actions', 'Actions' FROM CFG_PROJECTS WHERE ACTIVE_FLAG = 'Y';
{tasks}
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'MERGE_KEY', 'id' FROM CFG_TASKS WHERE TASK_CODE IN ('scd1', 'scd2', 'delete_rows');
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, TARGET_OBJECT)
SELECT PIPELINE_ID, 'check', 'BUSINESS_RULES', 'main.t_scd1' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'actions';
INSERT INTO CFG_BUSINESS_RULES (TASK_ID, RULE_CODE, RULE_TYPE, KEY_COLUMN, RULE_SQL, DESCRIPTION)
SELECT TASK_ID, 'name_set', 'REJECT', 'id', 'name IS NOT NULL AND name <> ''''', 'A name is set'
  FROM CFG_TASKS WHERE TASK_CODE = 'check';
"""
TASKS = {"create_table": "CREATE_TABLE", "setup_table": "SETUP_TABLE", "overwrite": "OVERWRITE_TABLE",
         "append": "APPEND_TABLE", "scd1": "SCD1_MERGE", "scd2": "SCD2_MERGE", "delete_rows": "DELETE_ROWS"}


def task_target(code: str) -> str:
    return "main.t_scd1" if code in ("delete_rows",) else f"main.t_{code}"


def invoke(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--project", str(root), "test", *args], catch_exceptions=False)
    return result.exit_code, result.output


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def make_project(parent: Path, name: str = "shop") -> Path:
    result = CliRunner().invoke(cli, ["init", str(parent / name)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    root = parent / name
    shutil.rmtree(root / "tests")  # the example's own test is run by test_the_example_project_ships_a_passing_test
    tasks = "".join(
        f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)\n"
        f"SELECT PIPELINE_ID, '{code}', 'SQL', '{action}', 'actions_src.sql', '{task_target(code)}' "
        f"FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'actions';\n" for code, action in TASKS.items())
    (root / "migrations" / "0003_actions.sql").write_text(ACTIONS_MIGRATION.format(tasks=tasks), encoding="utf-8")
    (root / "sql_files" / "actions_src.sql").write_text("SELECT id, name FROM raw.src\n", encoding="utf-8")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)
