"""EMAIL_ALERT tasks through the real command line, sending to a real relay on loopback (aiosmtpd, certificates from
trustme): a data task's multi-line error reaches the recipients in one subject line (B20) with the full error in
the body; a refused recipient is a WARNING in the task's log and the task succeeds; a relay that is down fails the
alert task with the relay's address while the run, judged by its data tasks, succeeds (B61); SUBJECT's $$ tokens
are filled; validate and doctor know the Email section."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.py.alerts.relay import Relay, free_port, relay, server_context, write_ca
from tests.py.support.cli import etl_craft

pytestmark = pytest.mark.process

LOAD = '''
from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    raise RuntimeError('relation "sales.orders" does not exist\\nLINE 1: SELECT order_id FROM sales.orders\\n'
                       '                              ^')
'''
OK = '''
from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    return ScriptResult(row_count=3)
'''


def _task(pipeline: str, code: str, handler: str, script: str | None = None) -> str:
    return (f"INSERT INTO CFG_TASKS (PIPELINE_ID, TASK_CODE, HANDLER, SCRIPT_FILE) SELECT PIPELINE_ID, '{code}', "
            f"'{handler}', {repr(script) if script else 'NULL'} FROM CFG_PIPELINES WHERE PIPELINE_CODE = '{pipeline}';")


def _parameter(task: str, name: str, value: str) -> str:
    return (f"INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, '{name}', "
            f"'{value}' FROM CFG_TASKS WHERE TASK_CODE = '{task}';")


def _edge(task: str, upstream: str, kind: str) -> str:
    return ("INSERT INTO CFG_TASK_DEPENDENCY (TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) SELECT t.TASK_ID, "
            f"u.TASK_ID, '{kind}' FROM CFG_TASKS t, CFG_TASKS u WHERE t.TASK_CODE = '{task}' AND u.TASK_CODE = "
            f"'{upstream}';")


METADATA = "\n".join([
    "INSERT INTO CFG_PROJECTS (PROJECT_CODE) VALUES ('sales');",
    "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'orders' FROM CFG_PROJECTS;",
    "INSERT INTO CFG_PIPELINES (PROJECT_ID, PIPELINE_CODE) SELECT PROJECT_ID, 'quiet' FROM CFG_PROJECTS;",
    _task("orders", "load", "PYTHON", "load.py"),
    _task("orders", "alert", "EMAIL_ALERT"),
    _parameter("alert", "RECIPIENTS", "ops@example.com, nobody@example.com"),
    _edge("alert", "load", "FAILURE"),
    _task("quiet", "fetch", "PYTHON", "ok.py"),
    _task("quiet", "notify", "EMAIL_ALERT"),
    _parameter("notify", "RECIPIENTS", "team@example.com"),
    _parameter("notify", "SUBJECT", "Run $$pipeline_run_id of $$pipeline_code for $$RUN_DATE: done"),
    _edge("notify", "fetch", "SUCCESS"),
]) + "\n"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def mail_relay(ca: trustme.CA) -> Iterator[Relay]:
    with relay(server_context(ca, "127.0.0.1")) as running:
        yield running


def write_config(project: Path, port: int) -> None:
    (project / "craft-connector.yml").write_text(
        "Engine:\n  dialect: sqlite\n  path: .etl-craft/engine.db\n"
        "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
        f"Email:\n  host: 127.0.0.1\n  port: {port}\n  tls_mode: starttls\n  ca_file: certs/relay-ca.pem\n"
        "  from_address: etl@example.com\n  to: [ops@example.com]\n  subject_prefix: '[etl test]'\n")


@pytest.fixture
def project(tmp_path: Path, ca: trustme.CA, mail_relay: Relay) -> Path:
    root = tmp_path / "sales"
    (root / "certs").mkdir(parents=True)
    write_ca(ca, root / "certs" / "relay-ca.pem")
    write_config(root, mail_relay.port)
    (root / "ingestion_scripts").mkdir()
    (root / "ingestion_scripts" / "load.py").write_text(LOAD)
    (root / "ingestion_scripts" / "ok.py").write_text(OK)
    (root / "migrations").mkdir()
    (root / "migrations" / "0001_pipelines.sql").write_text(METADATA)
    done = etl_craft("migrate", cwd=root)
    assert done.code == 0, done.err
    mail_relay.recorder.received.clear()
    return root


def tasks_of(project: Path, pipeline: str) -> dict[str, dict[str, object]]:
    status = json.loads(etl_craft("status", "--pipeline-code", pipeline, "--run-id", "1" if pipeline == "orders"
                                  else "2", "--format", "json", cwd=project).out)
    return {str(t["task_code"]): t for t in status["tasks"]}


def test_b20_b61_a_failure_alert_reaches_the_accepted_recipients_in_one_line_and_warns_of_the_refused(
        project: Path, mail_relay: Relay) -> None:
    done = etl_craft("run", "--pipeline-code", "orders", "--run-date", "2026-12-05", cwd=project)
    assert "alert: SUCCESS" in done.out, done.out + done.err
    tasks = tasks_of(project, "orders")
    assert tasks["load"]["status"] == "FAILED" and tasks["alert"]["status"] == "SUCCESS"
    [received] = mail_relay.recorder.received
    assert received.recipients == ["ops@example.com"]
    subject = received.message["Subject"]
    assert subject.startswith("[etl test] orders run 1 (2026-12-05): 1 failed (load): ")
    assert 'relation "sales.orders" does not exist LINE 1: SELECT order_id FROM sales.orders ^' in subject
    body = received.message.get_content().replace("\r\n", "\n")
    assert ('    LINE 1: SELECT order_id FROM sales.orders\n'
            '                                  ^\n') in body
    assert "- load: FAILED\n" in body and "Sent by task alert (task run" in body
    log = etl_craft("logs", "--attempt-id", str(tasks["alert"]["attempt_id"]), cwd=project).out
    assert "etl-craft: WARNING: task alert: the relay 127.0.0.1:" in log
    assert "refused 1 of 2 recipients: nobody@example.com (550 5.1.1 no mailbox here by that name)" in log
    assert "accepted the message for ops@example.com" in log


def test_b61_a_relay_that_is_down_fails_the_alert_task_and_the_run_still_succeeds(
        project: Path, mail_relay: Relay) -> None:
    assert etl_craft("run", "--pipeline-code", "orders", "--run-date", "2026-12-05", cwd=project).code != 0
    down = free_port()
    write_config(project, down)
    done = etl_craft("run", "--pipeline-code", "quiet", "--run-date", "2026-12-05", cwd=project)
    assert done.code == 0, done.out + done.err  # an alert task's outcome does not decide the run's status
    assert "notify: FAILED" in done.out
    tasks = tasks_of(project, "quiet")
    assert tasks["fetch"]["status"] == "SUCCESS"
    assert tasks["notify"]["status"] == "FAILED"
    assert str(tasks["notify"]["note"]).startswith(
        f"EmailNotSentError: task notify: the alert e-mail was not sent: the relay 127.0.0.1:{down} cannot be "
        "reached (ConnectionRefusedError")
    assert len(mail_relay.recorder.received) == 1  # the orders alert only


def test_subject_tokens_are_filled_with_the_run_values(project: Path, mail_relay: Relay) -> None:
    assert etl_craft("run", "--pipeline-code", "orders", "--run-date", "2026-12-05", cwd=project).code != 0
    done = etl_craft("run", "--pipeline-code", "quiet", "--run-date", "2026-12-06", cwd=project)
    assert done.code == 0, done.out + done.err
    received = mail_relay.recorder.received[-1]
    assert received.recipients == ["team@example.com"]
    assert received.message["Subject"] == "[etl test] Run 2 of quiet for 2026-12-06: done"
    assert "- fetch: SUCCESS\n" in received.message.get_content().replace("\r\n", "\n")


def test_validate_accepts_the_alert_tasks_and_names_each_one_when_the_email_section_is_missing(
        project: Path) -> None:
    clean = etl_craft("validate", cwd=project)
    assert clean.code == 0, clean.out + clean.err
    text = (project / "craft-connector.yml").read_text()
    (project / "craft-connector.yml").write_text(text[:text.index("Email:")])
    done = etl_craft("validate", "--format", "json", cwd=project)
    problems = [p for p in json.loads(done.out)["problems"] if p["check"] == "email-not-configured"]
    assert [p["task"] for p in problems] == ["alert", "notify"]
    assert problems[0]["message"] == (
        "task orders.alert: it is an EMAIL_ALERT task, but craft-connector.yml has no Email section; expected the "
        "SMTP relay in the Email section (host, from_address, to); add the Email section "
        "(docs/guides/alerts-email.md), or switch the task off in a new project migration "
        "(migrations/NNNN_name.sql)")


def test_doctor_shows_the_email_mode_and_greets_the_relay(project: Path, mail_relay: Relay) -> None:
    done = etl_craft("doctor", "--format", "json", cwd=project)
    checks = {c["name"]: c for c in json.loads(done.out)["checks"]}
    assert checks["email"]["status"] == "ok"
    assert checks["email"]["detail"].startswith(f"relay 127.0.0.1:{mail_relay.port}, tls_mode starttls, no login")
    assert checks["email relay"]["status"] == "ok"
    relay_detail = checks["email relay"]["detail"]
    assert "over TLS" in relay_detail and "its certificate verified" in relay_detail
    assert mail_relay.recorder.received == []
