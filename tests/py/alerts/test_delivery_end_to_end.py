"""Issue 23 end to end: alerts raised by the Engine DB and delivered by the real outbox through the real channels
(no injected sender), to a real HTTP receiver and a real SMTP relay on loopback.

- A webhook receiver answering 500 three times, then 200: the outbox retries on the Engine DB's clock (moved by the
  test, no sleeping through backoff), every attempt is recorded, the receiver verifies the signature of every
  try, accepts the alert once, and the delivery ends DELIVERED after 4 attempts (SQLite and PostgreSQL).
- The relay down while a real `etl-craft run` fails: the data tasks end as they should, the alert is recorded
  PENDING after one attempt naming the relay's host:port; the relay comes back on the same port and the next
  process (`etl-craft run` of another pipeline) delivers it once, its subject one line. An EMAIL_ALERT task while
  the relay is down does not fail its run.
- No secret (webhook signing key, Slack URL, SMTP password, all from variables) in AUD_ALERT_DELIVERIES, in
  `etl-craft alerts list`, in a log line or anywhere in the project's files, the Engine DB's included.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme

from etlcraft.alerts.outbox import Outbox
from etlcraft.alerts.webhook import ALERT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify_signature
from etlcraft.config.loader import load_config
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.alerts.relay import PASSWORD, free_port, relay, server_context, write_ca
from tests.py.support.cli import Result, etl_craft
from tests.py.support.engine_state import engine_db as project_engine_db
from tests.py.support.gates import T0, as_utc, execute, task_run
from tests.py.support.project import Task, write_project
from tests.py.support.scenario import Project

HOOK_KEY = "whsec-e2e-5b0d9c2a7f3e4b1c8d6a0e9f2c4b7a13"
SLACK_PATH = "/services/T0E2E/B0E2E/xoxb-e2e-slack-token-4c9a1f"
WRONG_PASSWORD = "Sentinel-wrong-smtp-pw-0b3d-never-shown"
#: A database error of three lines, as a failing task reports it: the alert's subject must stay one line.
BROKEN = '''
from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    raise RuntimeError('relation "sales.orders" does not exist\\nLINE 1: SELECT order_id FROM sales.orders\\n'
                       '                              ^')
'''


# ------------------------------------------------------------------------------------------ the HTTP receiver


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool


@dataclass
class Receiver:
    """A webhook and Slack receiver on loopback. Every request to a webhook path has its signature verified with
    HOOK_KEY before anything else; then the scripted statuses are answered in turn (a refusal echoes the request's
    path, as careless receivers do, so a detail quoting it would leak a Slack URL's token), then 200. A webhook
    request is accepted only when its signature verifies."""

    url: str = ""
    script: list[int] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
        slack = path.startswith("/services/")
        verified = slack or verify_signature(body, headers.get(TIMESTAMP_HEADER.lower(), ""),
                                             headers.get(SIGNATURE_HEADER.lower(), ""), HOOK_KEY)
        with self.lock:
            self.requests.append(Request(path, headers, body, verified))
            if self.script:
                return self.script.pop(0), f"cannot take {path} now, try later"
            if not verified:
                return 401, f"bad signature for {path}"
            self.accepted.append(0 if slack else int(json.loads(body)["alert_id"]))
        return 200, "ok"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, text = state.answer(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(text.encode())

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# ------------------------------------------------------------ 1. retries through the real outbox and webhook


def deliveries(project: Project) -> list[tuple[Any, ...]]:
    return execute(project, "SELECT CHANNEL, DELIVERY_STATUS, ATTEMPTS, NEXT_ATTEMPT_AT, LAST_DETAIL, DELIVERED_AT,"
                   f" OWNER_ID FROM {project.db.qualify('AUD_ALERT_DELIVERIES')} ORDER BY DELIVERY_ID")


def test_a_receiver_answering_500_three_times_then_200_gets_the_alert_once_after_4_recorded_attempts(
        engine_db: EngineDB, receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("E2E_HOOK_KEY", HOOK_KEY)
    (tmp_path / "craft-connector.yml").write_text(
        "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        "Alerts:\n  channels:\n"
        f"    hooks: {{type: webhook, url: '{receiver.url}/hooks/etl', signing_key_variable: E2E_HOOK_KEY}}\n"
        "  max_attempts: 6\n  retry_delay_seconds: 10\n  retry_backoff: 2\n", encoding="utf-8")
    config = load_config(tmp_path)
    engine_db.clock.pin(T0)
    project = Project(engine_db)
    project.pipeline("orders")
    project.task("orders", "extract")
    execute(project, f"INSERT INTO {engine_db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, ALERT_KIND, CHANNELS)"
            " VALUES (:p, 'RUN_FAILED', 'hooks')", p=project.project_id)
    run = project.run("orders")
    task_run(project, run, "extract", "FAILED")
    call(engine_db, "finalize_run", run_id=run)  # raises RUN_FAILED with one delivery on hooks
    receiver.script = [500, 500, 500]
    outbox = Outbox(engine_db, config, "e2e-outbox")  # the real senders

    now = T0
    for attempt, wait in enumerate([10, 20, 40], start=1):
        [done] = outbox.deliver_due()
        assert (done.outcome, done.status) == ("FAILED", "PENDING"), done
        [(channel, status, attempts, due, detail, delivered_at, owner)] = deliveries(project)
        assert (channel, status, attempts, delivered_at, owner) == ("hooks", "PENDING", attempt, None, None)
        assert detail.startswith(f"webhook {receiver.url}: answered HTTP 500"), detail
        assert as_utc(due) == now + timedelta(seconds=wait)  # 10 s, then doubled
        engine_db.clock.pin(now + timedelta(seconds=wait - 1))
        assert outbox.deliver_due() == []  # not due yet: nothing is sent
        assert len(receiver.requests) == attempt
        now += timedelta(seconds=wait)
        engine_db.clock.pin(now)

    [done] = outbox.deliver_due()
    assert (done.outcome, done.status) == ("DELIVERED", "DELIVERED"), done
    [(_, status, attempts, due, detail, delivered_at, owner)] = deliveries(project)
    assert (status, attempts, due, owner) == ("DELIVERED", 4, None, None)
    assert as_utc(delivered_at) == now and detail == f"webhook {receiver.url}: answered HTTP 200 OK"
    assert receiver.accepted == [done.alert_id]
    assert [r.verified for r in receiver.requests] == [True] * 4  # a signature on every try, and a good one
    assert len({r.body for r in receiver.requests}) == 1  # the same document each time
    assert {r.headers[ALERT_ID_HEADER.lower()] for r in receiver.requests} == {str(done.alert_id)}
    engine_db.clock.pin(now + timedelta(days=1))
    assert outbox.deliver_due() == [] and len(receiver.requests) == 4  # delivered once, never again


# ------------------------------------------------------------------------ the projects of the process tests


def rule_sql(channels: str) -> str:
    return ("INSERT INTO CFG_ALERT_RULES (PROJECT_ID, ALERT_KIND, CHANNELS) SELECT PROJECT_ID, 'RUN_FAILED', "
            f"'{channels}' FROM CFG_PROJECTS;\n")


EMAIL_TASK = """
INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER) SELECT PIPELINE_ID, 'notify', 'EMAIL_ALERT'
  FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'quiet';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'RECIPIENTS',
  'team@example.com' FROM CFG_TASKS WHERE TASK_CODE = 'notify';
INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT t.TASK_ID, u.TASK_ID,
  'SUCCESS' FROM CFG_TASKS t, CFG_TASKS u WHERE t.TASK_CODE = 'notify' AND u.TASK_CODE = 'fetch';
"""


def email_section(port: int) -> str:
    return (f"Email:\n  host: 127.0.0.1\n  port: {port}\n  tls_mode: starttls\n  ca_file: certs/relay-ca.pem\n"
            "  username: etl\n  secret: E2E_SMTP_PASSWORD\n  from_address: etl@example.com\n"
            "  to: [ops@example.com]\n")


def make_project(root: Path, engine_url: str | None, ca: trustme.CA, config_tail: str, sql: str) -> Path:
    """Pipelines flow (load, then report, which fails with a three-line error), quiet (fetch) and other (tick);
    `sql` adds the alert rule (and tasks); `config_tail` the Email and Alerts sections."""
    project = write_project(root, engine_url, {"flow": [Task("load"), Task("report", script="broken.py")],
                                               "quiet": [Task("fetch")], "other": [Task("tick")]},
                            [("report", "load", "SUCCESS")], scripts={"broken.py": BROKEN})
    (project / "certs").mkdir()
    write_ca(ca, project / "certs" / "relay-ca.pem")
    (project / "migrations" / "0002_alerts.sql").write_text(sql)
    with (project / "craft-connector.yml").open("a", encoding="utf-8") as config:
        config.write(config_tail)
    migrated = etl_craft("migrate", cwd=project)
    assert migrated.code == 0, migrated.out + migrated.err
    return project


def alerts(project: Path) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(etl_craft("alerts", "list", "--format", "json", cwd=project).out)[
        "alerts"]
    return listed


def wait_until_due(deliveries: list[dict[str, Any]]) -> None:
    """Sleep until every listed delivery's next attempt is due (the Engine DB of a real run keeps real time)."""
    due = [datetime.fromisoformat(d["next_attempt_at"]) for d in deliveries]
    last = max(d if d.tzinfo else d.replace(tzinfo=UTC) for d in due)
    time.sleep(max(0.0, (last - datetime.now(UTC)).total_seconds()) + 0.3)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


# ------------------------------------------------------------------- 2. the relay stopped during a real run


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    return None if request.param == "sqlite" else str(request.getfixturevalue("empty_pg_url"))


@pytest.mark.process
def test_the_relay_down_during_a_run__data_tasks_finish__the_alert_waits__the_next_process_delivers_it_once(
        tmp_path: Path, ca: trustme.CA, engine_url: str | None) -> None:
    port = free_port()  # nothing listens there until the relay comes back
    project = make_project(
        tmp_path / "p", engine_url, ca,
        email_section(port) + "Alerts:\n  channels:\n    ops: {type: email, to: [oncall@example.com]}\n"
        "  retry_delay_seconds: 2\n", rule_sql("ops") + EMAIL_TASK)
    env = {"E2E_SMTP_PASSWORD": PASSWORD}

    quiet = etl_craft("run", "--pipeline-code", "quiet", cwd=project, env=env)
    assert quiet.code == 0, quiet.out + quiet.err  # an EMAIL_ALERT task's outcome does not decide the run
    assert "fetch: SUCCESS" in quiet.out and "notify: FAILED" in quiet.out, quiet.out
    assert alerts(project) == []  # a run that succeeded raises nothing

    failed = etl_craft("run", "--pipeline-code", "flow", cwd=project, env=env)
    assert failed.code == 9, failed.out + failed.err  # the run's own outcome, whatever the relay did
    assert "load: SUCCESS" in failed.out and "report: FAILED" in failed.out, failed.out
    [alert] = alerts(project)
    assert (alert["kind"], alert["pipeline_code"], alert["task_code"]) == ("RUN_FAILED", "flow", "report")
    [delivery] = alert["deliveries"]
    assert (delivery["channel"], delivery["status"], delivery["attempts"]) == ("ops", "PENDING", 1), delivery
    assert f"the relay 127.0.0.1:{port} cannot be reached" in delivery["last_detail"], delivery

    with relay(server_context(ca, "127.0.0.1"), port=port) as back:
        wait_until_due([delivery])
        other = etl_craft("run", "--pipeline-code", "other", cwd=project, env=env)
        assert other.code == 0, other.out + other.err
        [alert] = alerts(project)
        [delivery] = alert["deliveries"]
        assert (delivery["status"], delivery["attempts"]) == ("DELIVERED", 2), delivery
        assert delivery["last_detail"] == f"the relay 127.0.0.1:{port} accepted the message for oncall@example.com"
        again = etl_craft("run", "--pipeline-code", "other", "--run-date", "2030-01-02", cwd=project, env=env)
        assert again.code == 0, again.out + again.err
        [received] = back.recorder.received  # once: the next process does not send it again
    assert received.recipients == ["oncall@example.com"]
    subject = str(received.message["Subject"])
    header = [line for line in received.raw.split(b"\r\n") if line.startswith(b"Subject:")]
    assert header == [b"Subject: " + subject.encode()], received.raw  # one physical line, never folded
    assert "\n" not in subject and "\r" not in subject
    assert subject.startswith("RUN_FAILED proc.flow ") and "task report FAILED" in subject, subject
    assert 'relation "sales.orders" does not exist LINE 1: SELECT order_id FROM sales.orders ^' in subject, subject


# ------------------------------------------------------------------------------------ 3. no secret recorded


def everything_recorded(project: Path, results: list[Result]) -> dict[str, str]:
    """Every place a secret could leak to: the delivery rows, `alerts list` in both formats, every command's
    output and log lines, and every file of the project (the Engine DB and its logs) except its configuration."""
    with project_engine_db(project) as db, db.read() as conn:
        rows = conn.exec_driver_sql("SELECT * FROM AUD_ALERT_DELIVERIES").all()
    places = {"AUD_ALERT_DELIVERIES": repr(rows),
              "alerts list": etl_craft("alerts", "list", cwd=project).out,
              "alerts list --format json": etl_craft("alerts", "list", "--format", "json", cwd=project).out}
    for number, result in enumerate(results):
        places[f"command {number} output"] = result.out + result.err
    for path in project.rglob("*"):
        if path.is_file() and path.name != "craft-connector.yml":
            places[str(path.relative_to(project))] = path.read_bytes().decode("latin-1")
    return places


@pytest.mark.process
def test_no_signing_key_slack_url_or_smtp_password_is_recorded_logged_or_listed(
        tmp_path: Path, ca: trustme.CA, receiver: Receiver) -> None:
    slack_url = receiver.url + SLACK_PATH
    with relay(server_context(ca, "127.0.0.1")) as mail:
        project = make_project(
            tmp_path / "p", None, ca,
            email_section(mail.port) + "Alerts:\n  channels:\n    ops: {type: email, to: [oncall@example.com]}\n"
            f"    hooks: {{type: webhook, url: '{receiver.url}/hooks/etl', signing_key_variable: E2E_HOOK_KEY}}\n"
            "    chat: {type: slack, url_variable: E2E_SLACK_URL}\n  retry_delay_seconds: 2\n",
            rule_sql("ops, hooks, chat"))
        receiver.script = [500, 500]  # the first attempt on hooks and on chat is refused, echoing the path
        first = etl_craft("run", "--pipeline-code", "flow", cwd=project,
                          env={"E2E_SMTP_PASSWORD": WRONG_PASSWORD, "E2E_HOOK_KEY": HOOK_KEY,
                               "E2E_SLACK_URL": slack_url})
        assert first.code == 9, first.out + first.err
        assert "could not be delivered on channel chat" in first.err, first.err  # the log lines are read below
        [alert] = alerts(project)
        pending = {d["channel"]: d for d in alert["deliveries"]}
        assert {c: (d["status"], d["attempts"]) for c, d in pending.items()} == {
            "ops": ("PENDING", 1), "hooks": ("PENDING", 1), "chat": ("PENDING", 1)}
        assert "refused the login of etl (535" in pending["ops"]["last_detail"], pending["ops"]
        assert "answered HTTP 500" in pending["chat"]["last_detail"], pending["chat"]
        wait_until_due(alert["deliveries"])
        second = etl_craft("run", "--pipeline-code", "other", cwd=project,
                           env={"E2E_SMTP_PASSWORD": PASSWORD, "E2E_HOOK_KEY": HOOK_KEY, "E2E_SLACK_URL": slack_url})
        assert second.code == 0, second.out + second.err
        [alert] = alerts(project)
        assert {d["channel"]: (d["status"], d["attempts"]) for d in alert["deliveries"]} == {
            "ops": ("DELIVERED", 2), "hooks": ("DELIVERED", 2), "chat": ("DELIVERED", 2)}
        assert len(mail.recorder.received) == 1
    assert sorted(r.path for r in receiver.requests) == sorted(["/hooks/etl"] * 2 + [SLACK_PATH] * 2)
    assert all(r.verified for r in receiver.requests)

    secrets = {"signing key": HOOK_KEY, "Slack URL": slack_url, "Slack URL's path": SLACK_PATH,
               "Slack token": SLACK_PATH.rsplit("/", 1)[1], "SMTP password": PASSWORD,
               "wrong SMTP password": WRONG_PASSWORD}
    places = everything_recorded(project, [first, second])
    assert any(name.startswith(".etl-craft") for name in places)  # the Engine DB and the logs were read
    leaks = [(secret, place) for secret, value in secrets.items() for place, text in places.items() if value in text]
    assert leaks == [], f"secrets found where they must never be: {leaks}"


def test_no_secret_in_the_outbox_log_lines(engine_db: EngineDB, receiver: Receiver, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The in-process outbox's log lines (what the server logs) for a refused Slack post and a refused login."""
    slack_url = receiver.url + SLACK_PATH
    monkeypatch.setenv("E2E_SLACK_URL", slack_url)
    monkeypatch.setenv("E2E_SMTP_PASSWORD", WRONG_PASSWORD)
    (tmp_path / "certs").mkdir()
    trust = trustme.CA()
    write_ca(trust, tmp_path / "certs" / "relay-ca.pem")
    with relay(server_context(trust, "127.0.0.1")) as mail:
        (tmp_path / "craft-connector.yml").write_text(
            "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: wh.duckdb\n"
            + email_section(mail.port) + "Alerts:\n  channels:\n    ops: {type: email, to: [oncall@example.com]}\n"
            "    chat: {type: slack, url_variable: E2E_SLACK_URL}\n", encoding="utf-8")
        config = load_config(tmp_path)
        engine_db.clock.pin(T0)
        project = Project(engine_db)
        project.pipeline("orders")
        project.task("orders", "extract")
        execute(project, f"INSERT INTO {engine_db.qualify('CFG_ALERT_RULES')} (PROJECT_ID, ALERT_KIND, CHANNELS)"
                " VALUES (:p, 'RUN_FAILED', 'ops, chat')", p=project.project_id)
        run = project.run("orders")
        task_run(project, run, "extract", "FAILED")
        call(engine_db, "finalize_run", run_id=run)
        receiver.script = [500]
        with caplog.at_level(logging.DEBUG):
            attempted = Outbox(engine_db, config, "e2e-outbox").deliver_due()
    assert sorted((a.channel, a.status) for a in attempted) == [("chat", "PENDING"), ("ops", "PENDING")]
    lines = [record.getMessage() for record in caplog.records]
    assert any("could not be delivered on channel chat" in line for line in lines), lines
    assert any("could not be delivered on channel ops" in line for line in lines), lines
    recorded = repr(deliveries(project)) + "\n".join(lines)
    for secret in (slack_url, SLACK_PATH, WRONG_PASSWORD):
        assert secret not in recorded, f"{secret!r} leaked into {recorded}"
