"""etl-craft run through the real command line: task processes, outcomes, skips, exit codes, status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process

ALERTS = """
INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('ops');
INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'alerts' FROM CFG_PROJECTS;
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER) SELECT PIPELINE_ID, 'notify', 'EMAIL_ALERT' FROM CFG_PIPELINES;
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER) SELECT PIPELINE_ID, 'after', 'EMAIL_ALERT' FROM CFG_PIPELINES;
INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID)
  SELECT a.TASK_ID, n.TASK_ID FROM CFG_TASKS a, CFG_TASKS n WHERE a.TASK_CODE = 'after' AND n.TASK_CODE = 'notify';
"""


@pytest.fixture
def alerts(tmp_path: Path) -> Path:
    project = tmp_path / "ops"
    assert etl_craft("init", str(project), cwd=tmp_path).code == 0
    for example in (project / "migrations").glob("*.sql"):
        example.unlink()
    (project / "migrations" / "0001_alerts.sql").write_text(ALERTS)
    assert etl_craft("migrate", cwd=project).code == 0
    return project


def test_a_task_that_cannot_run_fails_with_its_reason_and_skips_its_dependents(alerts: Path) -> None:
    """notify is an EMAIL_ALERT task in a project without an Email section: it fails saying so."""
    done = etl_craft("run", "--pipeline-code", "alerts", "--run-key", "manual:one", cwd=alerts)
    assert done.code == 9, done.err
    assert "notify: FAILED" in done.out
    assert "after: SKIPPED (notify ended FAILED; its SUCCESS dependency can never be met)" in done.out
    assert done.err.startswith("error: run 1 of alerts ended FAILED (failed: notify); see etl-craft status")
    status = json.loads(etl_craft("status", "--pipeline-code", "alerts", "--run-id", "1", "--format", "json",
                                  cwd=alerts).out)
    assert status["schema"] == "etl-craft/run-status/1"
    assert status["run"]["status"] == "FAILED" and status["run"]["ended_by"] == "etl-craft"
    tasks = {t["task_code"]: t for t in status["tasks"]}
    assert tasks["notify"]["status"] == "FAILED"
    assert tasks["notify"]["note"].startswith("ConfigurationError: task notify is an EMAIL_ALERT task, but ")
    assert "has no Email section" in tasks["notify"]["note"]
    assert tasks["after"]["status"] == "SKIPPED"
    log = etl_craft("logs", "--attempt-id", str(tasks["notify"]["attempt_id"]), cwd=alerts)
    assert "attempt 1 of task notify (run 1) started" in log.out


def test_the_same_key_resumes_its_run_and_an_ended_run_is_not_run_again(alerts: Path) -> None:
    assert etl_craft("run", "--pipeline-code", "alerts", "--run-key", "manual:one", cwd=alerts).code == 9
    again = etl_craft("run", "--pipeline-code", "alerts", "--run-key", "manual:one", cwd=alerts)
    assert again.code == 24
    assert "run 1 is FAILED, so there is nothing to run; start a new run (another --run-key)" in again.err
    history = json.loads(etl_craft("history", "--pipeline-code", "alerts", "--format", "json", cwd=alerts).out)
    assert [r["run_key"] for r in history["runs"]] == ["manual:one"]


def test_status_without_a_run_id_refuses_to_guess(alerts: Path) -> None:
    etl_craft("run", "--pipeline-code", "alerts", cwd=alerts)
    done = etl_craft("status", "--pipeline-code", "alerts", cwd=alerts)
    assert done.code == 22
    assert "pipeline alerts has 0 active runs; name one with --run-id (recent runs: 1 (FAILED)" in done.err
