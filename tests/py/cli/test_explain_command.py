"""etl-craft explain through the real command line on a SQLite Engine DB: a pipeline whose first task fails and
whose dependent is skipped, explained as text and as JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC")


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run 1 (key day-1) of flow ended FAILED: load failed, report (SUCCESS on load) was skipped."""
    project = write_project(tmp_path_factory.mktemp("explain"), None,
                            {"flow": [Task("load", {"fail": True}), Task("report")]}, [("report", "load", "SUCCESS")])
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", "--run-key", "day-1", "--run-date", "2026-03-14", cwd=project)
    assert done.code != 0 and "report: SKIPPED" in done.out, (done.out, done.err)
    return project


def test_explain__skipped_dependent__text_names_the_failed_upstream_and_the_rerun(failed_run: Path) -> None:
    done = etl_craft("explain", "--pipeline-code", "flow", "--task-code", "report", "--run-key", "day-1",
                     cwd=failed_run)
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        "task report of pipeline flow in run 1 (key day-1, run date 2026-03-14)",
        "run: FAILED",
        "pause: none",
        "task: SKIPPED, 0 attempt(s): load ended FAILED; its SUCCESS dependency can never be met",
        "run condition: ALL (every dependency must be met)",
        "dependencies:",
        "  load (SUCCESS): upstream FAILED, never met",
        "cross-pipeline decisions: none",
        "retries: 0 (delay 60 s, backoff 2); none scheduled",
        "=> Nothing will run report: run 1 ended FAILED and load FAILED; etl-craft run --pipeline-code flow --run-id 1 "
        "--rerun load --with-downstream would run load again and then report once its dependencies are met.",
    ]


def test_explain__failed_task__text_lists_its_attempt_and_error(failed_run: Path) -> None:
    done = etl_craft("explain", "--pipeline-code", "flow", "--task-code", "load", "--run-id", "1", cwd=failed_run)
    assert done.code == 0, done.err
    lines = [TIME.sub("<time>", line) for line in done.out.splitlines()]
    assert lines[3:5] == [
        "task: FAILED, 1 attempt(s): RuntimeError: load was told to fail",
        "  attempt 1 (try 1): FAILED, queued <time>, started <time>, ended <time>; "
        "error: RuntimeError: load was told to fail",
    ]
    assert lines[-1] == ("=> Nothing will run load: run 1 ended FAILED; etl-craft run --pipeline-code flow --run-id 1 "
                         "--rerun load would reopen the run and run load again.")


def test_explain__json__explanation_document(failed_run: Path) -> None:
    done = etl_craft("explain", "--pipeline-code", "flow", "--task-code", "report", "--run-id", "1", "--format",
                     "json", cwd=failed_run)
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["schema"] == "etl-craft/explanation/1"
    assert (doc["run_id"], doc["run_key"], doc["run_status"], doc["task_status"]) == (1, "day-1", "FAILED", "SKIPPED")
    assert doc["dependencies"] == [{"upstream": "load", "dependency_type": "SUCCESS", "upstream_status": "FAILED",
                                    "met": False, "settled": True}]
    assert doc["attempts"] == [] and doc["decisions"] == [] and doc["pause"] is None
    assert doc["retry"]["scheduled_attempt"] is None
    assert "--rerun load --with-downstream" in doc["verdict"]


def test_explain__unknown_task__refused_with_the_pipeline_tasks(failed_run: Path) -> None:
    done = etl_craft("explain", "--pipeline-code", "flow", "--task-code", "nope", "--run-id", "1", cwd=failed_run)
    assert done.code != 0
    assert "task nope is not an active task of pipeline flow; its tasks are load, report" in done.err


def test_explain__no_run_named_and_none_open__refused(failed_run: Path) -> None:
    done = etl_craft("explain", "--pipeline-code", "flow", "--task-code", "load", cwd=failed_run)
    assert done.code != 0
    assert "pipeline flow has no run that has not ended" in done.err and "--run-id or --run-key" in done.err
