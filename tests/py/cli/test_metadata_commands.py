"""validate, list and show through the real command line, on the example project and on broken copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from etlcraft.cli.validate import report_text
from etlcraft.core.actor import acting_as
from etlcraft.engine.db import EngineDB, format_timestamp
from etlcraft.services.validate import Problem, ValidationReport
from tests.py.conftest import TEST_ACTOR
from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process

REPORTS_MIGRATION = """-- 0003_reports: a third pipeline that waits for the example transforms.
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE, PIPELINE_NAME, RUN_SCHEDULE, SCHEDULE_TIMEZONE)
SELECT PROJECT_ID, 'reports', 'Reports', '@daily', 'Europe/London' FROM CFG_PROJECTS WHERE PROJECT_CODE = 'demo';

INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, ACTION, SQL_FILE, TARGET_OBJECT)
SELECT PIPELINE_ID, 'top_customers', 'SQL', 'OVERWRITE_TABLE', 'top_customers.sql', 'main.top_customers'
  FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'reports';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'RETRIES', '2' FROM CFG_TASKS WHERE TASK_CODE = 'top_customers';

INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT t.TASK_ID, u.TASK_ID, 'HAS_DATA' FROM CFG_TASKS t, CFG_TASKS u
 WHERE t.TASK_CODE = 'top_customers' AND u.TASK_CODE = 'customer_totals';

INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID)
SELECT p.PIPELINE_ID, u.PIPELINE_ID FROM CFG_PIPELINES p, CFG_PIPELINES u
 WHERE p.PIPELINE_CODE = 'reports' AND u.PIPELINE_CODE = 'customer_orders';
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    assert etl_craft("init", "demo", cwd=tmp_path).code == 0
    return tmp_path / "demo"


@pytest.fixture
def migrated(project: Path) -> Path:
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


def _two_pipelines(project: Path) -> Path:
    (project / "migrations" / "0003_reports.sql").write_text(REPORTS_MIGRATION, encoding="utf-8")
    (project / "sql_files" / "top_customers.sql").write_text(
        "SELECT customer_id, order_total FROM main.customer_totals ORDER BY order_total DESC LIMIT 10;\n")
    done = etl_craft("migrate", cwd=project)
    assert done.code == 0, done.err
    return project


@pytest.fixture
def two_pipelines(project: Path) -> Path:
    return _two_pipelines(project)


@pytest.fixture(scope="module")
def paused_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example pipeline and a second one, reports, paused; shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("shared")
    assert etl_craft("init", "demo", cwd=root).code == 0
    project = _two_pipelines(root / "demo")
    _pause(project, "reports")
    return project


def test_init_migrate_validate__the_example_project_is_valid(migrated: Path) -> None:
    done = etl_craft("validate", cwd=migrated)
    assert (done.code, done.err) == (0, "")
    assert done.out.splitlines() == ["pipeline customer_orders: ok", "pipeline shop_ingest: ok",
                                     "valid: 2 pipelines, 5 tasks, 5 files read"]
    doc = json.loads(etl_craft("validate", "--format", "json", cwd=migrated).out)
    assert doc == {"schema": "etl-craft/validation/1", "valid": True, "pipelines": ["customer_orders", "shop_ingest"],
                   "tasks": 5, "files": 5, "warehouse": "checked", "warnings": [], "notes": [], "problems": []}


def test_validate_reports_every_problem_and_exits_7(migrated: Path) -> None:
    (migrated / "sql_files" / "load_orders.sql").write_text("SELECT 1 AS order_id;\nDELETE FROM main.orders;\n")
    (migrated / "sql_files" / "customer_totals.sql").unlink()
    done = etl_craft("validate", cwd=migrated)
    assert done.code == 7, done.err
    lines = done.out.splitlines()
    assert lines[0] == "pipeline customer_orders: 2 problems"
    assert lines[1:3] == ["  task customer_totals",
                          "    SQL_FILE 'customer_totals.sql' does not exist; expected the file "
                          "sql_files/customer_totals.sql; create sql_files/customer_totals.sql, or correct SQL_FILE in "
                          "a new project migration (migrations/NNNN_name.sql)"]
    assert lines[3] == "  task load_orders"
    assert lines[4].startswith("    SQL_FILE 'load_orders.sql' holds 2 statements (the second starts on line 2); "
                               "expected exactly one read-only SELECT")
    assert lines[5:] == ["pipeline shop_ingest: ok", "2 problems (2 pipelines, 5 tasks, 4 files read)"]
    doc = json.loads(etl_craft("validate", "--format", "json", cwd=migrated).out)
    assert (doc["valid"], [p["check"] for p in doc["problems"]]) == (False, ["file-not-found", "sql-not-one-select"])
    assert set(doc["problems"][0]) == {"check", "object", "pipelines", "task", "value", "expected", "remedy",
                                       "message"}


def test_validate_a_broken_metadata_migration_and_one_pipeline(two_pipelines: Path) -> None:
    (two_pipelines / "migrations" / "0004_oops.sql").write_text(
        "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * MONDAY' WHERE PIPELINE_CODE = 'reports';\n")
    assert etl_craft("migrate", cwd=two_pipelines).code == 0
    assert etl_craft("validate", "--pipeline-code", "customer_orders", cwd=two_pipelines).code == 0
    done = etl_craft("validate", "--pipeline-code", "reports", cwd=two_pipelines)
    assert done.code == 7
    assert done.out.splitlines()[:2] == [
        "pipeline reports: 1 problem",
        "  RUN_SCHEDULE '0 6 * * MONDAY' is not a cron schedule: the day of week field has "
        "'MONDAY'; expected a number 0-7 or a name SUN..SAT; expected five cron fields (minute hour day-of-month "
        "month day-of-week) or a macro (@hourly, @daily, @weekly, @monthly, @yearly); correct RUN_SCHEDULE in a "
        "new project migration (migrations/NNNN_name.sql)"]
    unknown = etl_craft("validate", "--pipeline-code", "nope", cwd=two_pipelines)
    assert unknown.code == 22
    assert unknown.err == ("error: pipeline 'nope' is not an active pipeline of project demo in this Engine DB "
                           "(active: customer_orders, reports, shop_ingest); check the code with etl-craft "
                           "--project-code demo list\n")


def test_read_commands_before_migrate_create_nothing(project: Path) -> None:
    for command in (["validate"], ["list"], ["show", "--pipeline-code", "customer_orders"]):
        done = etl_craft(*command, cwd=project)
        assert done.code == 4, done
        assert done.err == (f"error: the Engine DB file {project / '.etl-craft' / 'engine.db'} does not exist yet; "
                            "run etl-craft migrate\n")
    assert not (project / ".etl-craft" / "engine.db").exists()


def _pause(project: Path, pipeline: str) -> None:
    db = EngineDB(f"sqlite:///{project / '.etl-craft' / 'engine.db'}")
    with acting_as(TEST_ACTOR), db.write() as conn:
        conn.execute(sa.text("INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND) "
                             "SELECT PIPELINE_ID, :now, 'tester@pytest', 'HUMAN' FROM CFG_PIPELINES "
                             "WHERE PIPELINE_CODE = :code"),
                     {"now": format_timestamp(db.clock.now()), "code": pipeline})
    db.dispose()


def test_list_text_and_json(paused_reports: Path) -> None:
    two_pipelines = paused_reports
    done = etl_craft("list", cwd=two_pipelines)
    assert (done.code, done.err) == (0, "")
    assert done.out.splitlines() == [
        "PIPELINE         NAME             SCHEDULE   TIMEZONE       TASKS  STATE",
        "customer_orders  Customer orders  0 6 * * *  UTC (project)  3      active",
        "reports          Reports          @daily     Europe/London  1      paused",
        "shop_ingest      Shop ingestion   0 * * * *  UTC (project)  2      active",
    ]
    doc = json.loads(etl_craft("list", "--format", "json", cwd=two_pipelines).out)
    assert doc == {"schema": "etl-craft/pipelines/1", "pipelines": [
        {"project": "demo", "code": "customer_orders", "name": "Customer orders", "schedule": "0 6 * * *",
         "timezone": None, "project_timezone": "UTC", "project_timezone_source": "default", "tasks": 3,
         "state": "active", "paused": False},
        {"project": "demo", "code": "reports", "name": "Reports", "schedule": "@daily", "timezone": "Europe/London",
         "project_timezone": "UTC", "project_timezone_source": "default", "tasks": 1, "state": "paused",
         "paused": True},
        {"project": "demo", "code": "shop_ingest", "name": "Shop ingestion", "schedule": "0 * * * *",
         "timezone": None, "project_timezone": "UTC", "project_timezone_source": "default", "tasks": 2,
         "state": "active", "paused": False},
    ]}


def test_show_text(paused_reports: Path) -> None:
    two_pipelines = paused_reports
    done = etl_craft("show", "--pipeline-code", "customer_orders", cwd=two_pipelines)
    assert (done.code, done.err) == (0, "")
    assert done.out.splitlines() == [
        "pipeline customer_orders (Customer orders): active",
        "  schedule: 0 6 * * * (project time zone)",
        "  project time zone: UTC (the default; set CFG_PROJECTS.TIMEZONE or Orchestration: Timezone to change it)",
        "  waits for pipelines: shop_ingest (SUCCESS)",
        "  pipelines waiting for it: reports",
        "",
        "tasks (3, in dependency order)",
        "  load_customers: SQL SCD2_MERGE -> main.customers from sql_files/load_customers.sql",
        "    MERGE_COMPARE_COLUMNS = customer_name, email, city, segment",
        "    MERGE_DEDUPE_ORDER = updated_at DESC",
        "    MERGE_KEY = customer_id",
        "  load_orders: SQL SCD1_MERGE -> main.orders from sql_files/load_orders.sql",
        "    MERGE_KEY = order_id",
        "  customer_totals: SQL SCD1_MERGE -> main.customer_totals from sql_files/customer_totals.sql",
        "    MERGE_KEY = customer_id",
        "    waits for (ALL): load_customers (SUCCESS), load_orders (SUCCESS)",
        "",
        "graph",
        "  level 1",
        "    load_customers",
        "    load_orders",
        "  level 2",
        "    customer_totals <- load_customers, load_orders",
        "",
        "tasks of other pipelines waiting for this one",
        "  reports.top_customers waits for customer_totals (HAS_DATA)",
    ]
    reports = etl_craft("show", "--pipeline-code", "reports", cwd=two_pipelines).out.splitlines()
    assert reports[:2] == ["pipeline reports (Reports): paused", "  schedule: @daily (Europe/London)"]
    assert reports[2] == ("  project time zone: UTC (the default; set CFG_PROJECTS.TIMEZONE or Orchestration: "
                          "Timezone to change it)")
    assert "  waits for pipelines: customer_orders (SUCCESS)" in reports
    assert "    waits for (ALL): customer_orders.customer_totals (HAS_DATA)" in reports


def test_show_json(paused_reports: Path) -> None:
    two_pipelines = paused_reports
    doc = json.loads(etl_craft("show", "--pipeline-code", "reports", "--format", "json", cwd=two_pipelines).out)
    assert doc["schema"] == "etl-craft/pipeline/1"
    assert doc["pipeline"]["code"] == "reports" and doc["pipeline"]["tasks"] == 1
    assert doc["upstream_pipelines"] == [{"pipeline": "customer_orders", "type": "SUCCESS"}]
    assert doc["levels"] == [["top_customers"]] and doc["unleveled"] == []
    (task,) = doc["tasks"]
    assert task == {
        "code": "top_customers", "name": None, "handler": "SQL", "action": "OVERWRITE_TABLE",
        "target": "main.top_customers", "sql_file": "top_customers.sql", "script_file": None, "run_condition": "ALL",
        "parameters": {"RETRIES": "2"}, "rules": [],
        "depends_on": [{"task": "top_customers", "pipeline": "reports", "upstream_task": "customer_totals",
                        "upstream_pipeline": "customer_orders", "type": "HAS_DATA", "consume_repairs": True,
                        "cross_pipeline": True, "upstream_active": True}],
    }
    upstream = json.loads(etl_craft("show", "--pipeline-code", "customer_orders", "--format", "json",
                                    cwd=two_pipelines).out)
    assert upstream["levels"] == [["load_customers", "load_orders"], ["customer_totals"]]
    assert [(t["upstream_task"], t["task"]) for t in upstream["downstream_tasks"]] == [
        ("customer_totals", "top_customers")]


def test_show_an_unknown_pipeline_exits_22(paused_reports: Path) -> None:
    done = etl_craft("show", "--pipeline-code", "nope", cwd=paused_reports)
    assert done.code == 22
    assert "pipeline 'nope' is not an active pipeline" in done.err


def test_validate_text_groups_by_pipeline_then_task_and_lists_cross_pipeline_problems_last() -> None:
    def problem(obj: str, task: str | None, *pipelines: str) -> Problem:
        return Problem("c", obj, f"{obj} is wrong", None, "right", "fix it", pipelines, task)

    report = ValidationReport((
        problem("pipeline a", None, "a"), problem("task a.t1", "t1", "a"), problem("task a.t1", "t1", "a"),
        problem("target main.x", None, "a"), problem("task a.t2", "t2", "a"),
        problem("pipelines a, b", None, "a", "b"),
    ), ("a", "b"), 3, 2)
    assert report_text(report).splitlines() == [
        "pipeline a: 5 problems",
        "  pipeline a is wrong; expected right; fix it",
        "  task t1",
        "    task a.t1 is wrong; expected right; fix it",
        "    task a.t1 is wrong; expected right; fix it",
        "  target main.x: target main.x is wrong; expected right; fix it",
        "  task t2",
        "    task a.t2 is wrong; expected right; fix it",
        "pipeline b: ok",
        "across pipelines: 1 problem",
        "  pipelines a, b: pipelines a, b is wrong; expected right; fix it",
        "6 problems (2 pipelines, 3 tasks, 2 files read)",
    ]
