"""The alert outbox (etlcraft/alerts/outbox.py): claim, send through the channel, record with backoff; the same on
SQLite and PostgreSQL. The channels are fakes injected by type: the real ones have their own tests."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from etlcraft.alerts.message import AlertMessage, Delivery
from etlcraft.alerts.outbox import Outbox, retry_after
from etlcraft.config.alerts import AlertChannel, AlertsConfig
from etlcraft.config.loader import ProjectConfig, load_config
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.gates import T0, as_utc, execute, task_run
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
    hooks: {type: webhook, url: "https://hooks.example.com/etl", signing_key_variable: HOOK_KEY}
    chat: {type: slack, url_variable: SLACK_URL}
  max_attempts: 3
  retry_delay_seconds: 10
  retry_backoff: 3
"""


class Channel:
    """A fake channel: remembers each alert it was given and answers from a script of deliveries."""

    def __init__(self, *answers: Delivery | Exception) -> None:
        self.answers = list(answers)
        self.sent: list[tuple[AlertMessage, AlertChannel]] = []

    def __call__(self, alert: AlertMessage, channel: AlertChannel, config: ProjectConfig) -> Delivery:
        self.sent.append((alert, channel))
        answer = self.answers.pop(0) if self.answers else Delivery("DELIVERED", "200 OK")
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def config(tmp_path: Path) -> ProjectConfig:
    (tmp_path / "craft-connector.yml").write_text(CONFIG, encoding="utf-8")
    return load_config(tmp_path)


@pytest.fixture
def project(engine_db: EngineDB) -> Project:
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders")
    project.task("orders", "extract")
    return project


def failed_run(project: Project, channels: str) -> int:
    execute(project, f"INSERT INTO {project.db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, ALERT_KIND, CHANNELS)"
            " VALUES (:p, 'RUN_FAILED', :c)", p=project.project_id, c=channels)
    run = project.run("orders")
    tr = task_run(project, run, "extract", "FAILED")
    execute(project, f"UPDATE {project.db.qualify('AUD_TASK_RUN_LOG')} SET ERROR_MESSAGE = 'relation x does not"
            " exist' WHERE TASK_RUN_ID = :id", id=tr)
    call(project.db, "finalize_run", run_id=run)
    return run


def delivery(project: Project) -> list[tuple[Any, ...]]:
    return execute(project, f"SELECT CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT, LAST_DETAIL FROM"
                   f" {project.db.qualify('AUD_ALERT_DELIVERIES')} ORDER BY DELIVERY_ID")


def test_deliver_due__hands_the_alert_to_its_channel_and_records_it_delivered(project: Project,
                                                                               config: ProjectConfig) -> None:
    run = failed_run(project, "hooks")
    hooks = Channel()
    [done] = Outbox(project.db, config, "me", {"webhook": hooks}).deliver_due()
    assert (done.channel, done.outcome, done.status) == ("hooks", "DELIVERED", "DELIVERED")
    [(alert, channel)] = hooks.sent
    assert (alert.kind, alert.project, alert.pipeline, alert.pipeline_run_id, alert.task, alert.status,
            alert.error, alert.run_key) == ("RUN_FAILED", "proj", "orders", run, "extract", "FAILED",
                                            "relation x does not exist", "manual:1")
    assert alert.links == {"api": f"http://127.0.0.1:8730/api/v1/runs/{run}"}
    assert channel.url == "https://hooks.example.com/etl" and channel.signing_key_variable == "HOOK_KEY"
    assert alert.document()["run"]["run_date"] == "2026-01-01"
    assert [row[:3] for row in delivery(project)] == [("hooks", "DELIVERED", 1)]
    assert Outbox(project.db, config, "me", {"webhook": hooks}).deliver_due() == []


def test_deliver_due__a_failing_channel_is_retried_with_backoff_then_failed_for_good(project: Project,
                                                                                      config: ProjectConfig) -> None:
    failed_run(project, "hooks")
    down = Delivery("FAILED", "POST https://hooks.example.com/etl answered 500")
    hooks = Channel(down, down, down)
    outbox = Outbox(project.db, config, "me", {"webhook": hooks})
    outbox.deliver_due()
    [(_, status, attempts, due, detail)] = delivery(project)
    assert (status, attempts, as_utc(due), detail) == ("PENDING", 1, T0 + timedelta(seconds=10), down.detail)
    project.db.clock.pin(T0 + timedelta(seconds=9))
    assert outbox.deliver_due() == []
    project.db.clock.pin(T0 + timedelta(seconds=10))
    outbox.deliver_due()
    assert as_utc(delivery(project)[0][3]) == T0 + timedelta(seconds=40)  # 10 s after 30 s (10 x 3)
    project.db.clock.pin(T0 + timedelta(seconds=40))
    [last] = outbox.deliver_due()
    assert last.status == "FAILED" and delivery(project)[0][1:4] == ("FAILED", 3, None)
    assert len(hooks.sent) == 3


def test_deliver_due__a_refused_delivery_that_cannot_succeed_is_not_retried(project: Project,
                                                                             config: ProjectConfig) -> None:
    failed_run(project, "hooks")
    Outbox(project.db, config, "me", {"webhook": Channel(Delivery("FAILED", "410 Gone", retryable=False))}
           ).deliver_due()
    assert delivery(project)[0][1:3] == ("FAILED", 1)


def test_deliver_due__an_unknown_channel_or_a_broken_sender_is_recorded_not_raised(project: Project,
                                                                                    config: ProjectConfig) -> None:
    failed_run(project, "pager, chat")
    chat = Channel(RuntimeError("connection reset"))
    attempted = Outbox(project.db, config, "me", {"slack": chat}).deliver_due()
    assert sorted((a.channel, a.status) for a in attempted) == [("chat", "PENDING"), ("pager", "PENDING")]
    details = {row[0]: row[4] for row in delivery(project)}
    assert details["pager"] == ("channel pager is not in Alerts.channels of craft-connector.yml (configured: chat, "
                                "hooks); add it, or change the alert rule's CHANNELS")
    assert details["chat"] == "channel chat: RuntimeError: connection reset"


def test_alerts_config__retry_after_is_exponential_capped_and_ends_at_max_attempts() -> None:
    settings = AlertsConfig(max_attempts=5, retry_delay_seconds=30, retry_backoff=2.0, retry_max_delay_seconds=100)
    assert [retry_after(settings, n) for n in range(1, 6)] == [30, 60, 100, 100, None]


def test_deliver_due__a_secret_quoted_in_an_error_is_masked_before_it_is_recorded(
        project: Project, config: ProjectConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_URL", "https://hooks.slack.example/services/T0/B0/tok3n")
    failed_run(project, "chat")
    chat = Channel(RuntimeError("POST https://hooks.slack.example/services/T0/B0/tok3n: connection refused"))
    Outbox(project.db, config, "me", {"slack": chat}).deliver_due()
    [(_, _, _, _, detail)] = delivery(project)
    assert detail == "channel chat: RuntimeError: POST [chat: secret]: connection refused"
