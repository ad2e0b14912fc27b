"""Issue 23 under the server: a run the server drives to FAILED raises RUN_FAILED as it is finalized, and the
server's alert sender delivers it on its own thread while the loop goes on (the channel here is a fake injected by
type; the real channels have their own tests)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from etlcraft.alerts.message import AlertMessage, Delivery
from etlcraft.alerts.outbox import alert_sender
from etlcraft.cli.context import CliContext
from etlcraft.config.alerts import AlertChannel
from etlcraft.config.loader import ProjectConfig
from etlcraft.core.actor import acting_as
from etlcraft.overseer.server import SERVER_ACTOR, ServerLog
from etlcraft.services.server import build_server
from tests.py.conftest import TEST_ACTOR
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process


def test_the_server__finalizes_a_failed_run_and_its_sender_delivers_run_failed(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", None, {"flow": [Task("load", {"fail": True})]}, [], lease_seconds=10)
    (root / "migrations" / "0002_alerts.sql").write_text(
        "INSERT INTO CFG_ALERT_RULES (PROJECT_ID, ALERT_KIND, CHANNELS) SELECT PROJECT_ID, 'RUN_FAILED', 'hooks'"
        " FROM CFG_PROJECTS;\n")
    with (root / "craft-connector.yml").open("a", encoding="utf-8") as config:
        config.write("Alerts:\n  channels:\n    hooks: {type: webhook, url: 'https://hooks.example.com/etl'}\n")
    assert etl_craft("migrate", cwd=root).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--init-only", "--run-key", "k1", cwd=root).code == 0
    delivered: list[AlertMessage] = []

    def hooks(alert: AlertMessage, channel: AlertChannel, _config: ProjectConfig) -> Delivery:
        delivered.append(alert)
        return Delivery("DELIVERED", "200 OK")

    context = CliContext.create(str(root), None, None)
    db = context.engine_db()
    server = build_server(db, context.config(), 2, ServerLog(lambda _: None, False))
    server.alerts = alert_sender(db, context.config(), server.settings.owner_id, SERVER_ACTOR, sweep=False,
                                 senders={"webhook": hooks})
    with acting_as(TEST_ACTOR), server.leading():
        deadline = time.monotonic() + 60
        server.turn(most_seconds=0.05)
        while (not server.idle() or not delivered) and time.monotonic() < deadline:
            server.turn(most_seconds=0.2)
            server.last_reconcile = 0.0  # every turn is a heartbeat's: the sender is woken each time
    assert [(a.kind, a.pipeline, a.task, a.status) for a in delivered] == [("RUN_FAILED", "flow", "load", "FAILED")]
    listed = etl_craft("alerts", "list", "--status", "DELIVERED", cwd=root)
    assert "hooks: DELIVERED after 1 attempt(s)" in listed.out, listed.out
