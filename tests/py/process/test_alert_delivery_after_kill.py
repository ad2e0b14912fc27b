"""Issue 23: a process killed (kill -9) after it claimed an alert's delivery and before it sent it leaves the
delivery to the next process, which delivers it exactly once once the claim has expired (Alerts.claim_seconds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

from etlcraft.alerts.message import AlertMessage, Delivery
from etlcraft.alerts.outbox import Outbox
from etlcraft.config.alerts import AlertChannel
from etlcraft.config.loader import ProjectConfig, load_config
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.gates import execute, task_run
from tests.py.support.scenario import Project

CONFIG = """\
Engine:
  dialect: sqlite
  path: engine.db
Warehouse:
  dialect: duckdb
  path: warehouse.duckdb
Alerts:
  channels:
    hooks: {type: webhook, url: "https://hooks.example.com/etl"}
  claim_seconds: 10
"""

#: The sending process: it claims the due deliveries as "victim", and would append each alert it sends to a file.
SENDER = """
import sys
from pathlib import Path
from etlcraft.alerts.message import Delivery
from etlcraft.alerts.outbox import Outbox
from etlcraft.config.loader import load_config
from etlcraft.core.actor import SYSTEM, acting_as
from etlcraft.engine.db import EngineDB

def send(alert, channel, config):
    with open(sys.argv[3], "a", encoding="utf-8") as sent:
        sent.write(f"{alert.alert_id}\\n")
    return Delivery("DELIVERED", "200 OK")

with acting_as(SYSTEM):
    Outbox(EngineDB(sys.argv[1]), load_config(Path(sys.argv[2])), "victim", {"webhook": send}).deliver_due()
"""


def _kill_after_the_claim(url: str, project_dir: Path, sent: Path) -> None:
    env = {**os.environ, "ETL_CRAFT_FAULT": "alerts_claimed:pause"}
    child = subprocess.Popen([sys.executable, "-c", SENDER, url, str(project_dir), str(sent)], env=env,
                             stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    deadline = time.monotonic() + 60
    line = ""
    while "fault point alerts_claimed fired" not in line and time.monotonic() < deadline:
        line = child.stderr.readline()
    assert "fault point alerts_claimed fired" in line, "the sending process did not reach its claim"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    child.stderr.close()


def test_kill_9_between_claim_and_send__the_next_process_delivers_the_alert_exactly_once(
        engine_db: EngineDB, tmp_path: Path) -> None:
    (tmp_path / "craft-connector.yml").write_text(CONFIG, encoding="utf-8")
    config: ProjectConfig = load_config(tmp_path)
    project = Project(engine_db)
    project.pipeline("orders")
    project.task("orders", "extract")
    execute(project, f"INSERT INTO {engine_db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, ALERT_KIND, CHANNELS)"
            " VALUES (:p, 'RUN_FAILED', 'hooks')", p=project.project_id)
    run = project.run("orders")
    task_run(project, run, "extract", "FAILED")
    call(engine_db, "finalize_run", run_id=run)
    sent = tmp_path / "sent.txt"

    _kill_after_the_claim(engine_db.url.render_as_string(hide_password=False), tmp_path, sent)
    assert not sent.exists()
    delivered: list[AlertMessage] = []

    def send(alert: AlertMessage, channel: AlertChannel, _config: ProjectConfig) -> Delivery:
        delivered.append(alert)
        return Delivery("DELIVERED", "200 OK")

    successor = Outbox(engine_db, config, "successor", {"webhook": send})
    assert successor.deliver_due() == []  # the victim's claim is still live
    engine_db.clock.pin(engine_db.clock.now() + timedelta(seconds=11))
    [done] = successor.deliver_due()
    assert (done.status, [a.pipeline_run_id for a in delivered]) == ("DELIVERED", [run])
    assert successor.deliver_due() == [] and not sent.exists()
    assert execute(project, f"SELECT DELIVERY_STATUS, ATTEMPTS, OWNER_ID FROM"
                   f" {engine_db.qualify('AUD_ALERT_DELIVERIES')}") == [("DELIVERED", 1, None)]
