"""Issue 23 through the real `etl-craft run`: a failed run raises RUN_FAILED in the transaction that ends it, and
the same command tries to deliver it before it exits; a channel that cannot be reached leaves the delivery PENDING
for the next process, recorded, and changes nothing about the run or its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.py.support.cli import etl_craft
from tests.py.support.engine_state import engine_db
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

RULE = """
INSERT INTO CFG_ALERT_RULES (PROJECT_ID, ALERT_KIND, CHANNELS) SELECT PROJECT_ID, 'RUN_FAILED', 'hooks'
  FROM CFG_PROJECTS;
"""
#: Nothing listens on port 9 of the loopback (discard): every delivery attempt is refused at once.
ALERTS = "Alerts:\n  channels:\n    hooks: {type: webhook, url: 'http://127.0.0.1:9/etl'}\n  retry_delay_seconds: 600\n"


def test_a_failed_run__raises_run_failed_and_tries_it_before_the_command_exits(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report", {"fail": True})]},
                            [("report", "load", "SUCCESS")])
    (project / "migrations" / "0002_alerts.sql").write_text(RULE)
    with (project / "craft-connector.yml").open("a", encoding="utf-8") as config:
        config.write(ALERTS)
    assert etl_craft("migrate", cwd=project).code == 0
    done = etl_craft("run", "--pipeline-code", "flow", cwd=project)
    assert done.code == 9, done.err  # the run's own outcome, whatever the channel did
    assert "load: SUCCESS" in done.out
    listed = json.loads(etl_craft("alerts", "list", "--format", "json", cwd=project).out)
    [alert] = listed["alerts"]
    assert (alert["kind"], alert["pipeline_code"], alert["task_code"], alert["status"]) == (
        "RUN_FAILED", "flow", "report", "FAILED")
    assert "report was told to fail" in alert["error"]
    [delivery] = alert["deliveries"]
    assert (delivery["channel"], delivery["status"], delivery["attempts"]) == ("hooks", "PENDING", 1)
    assert delivery["last_detail"] and delivery["next_attempt_at"]
    with engine_db(project) as db, db.read() as conn:
        owner = conn.exec_driver_sql("SELECT OWNER_ID FROM AUD_ALERT_DELIVERIES").scalar()
    assert owner is None  # recorded and released: the next process takes it when it is due
    text = etl_craft("alerts", "list", "--pipeline-code", "flow", "--status", "pending", cwd=project).out
    assert f"alert {alert['alert_id']} RUN_FAILED flow run 1" in text and "hooks: PENDING after 1 attempt(s)" in text
