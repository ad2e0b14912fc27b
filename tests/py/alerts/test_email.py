"""The e-mail channel against a real SMTP relay on loopback (aiosmtpd) with certificates made here (trustme):
the relay's certificate verified against its name and authority (B50), implicit TLS, one safe subject line (B20),
partial and total recipient refusal and a relay that is down (B61), no password in any detail, and doctor."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from etlcraft.alerts.email import SUBJECT_MAX, safe_subject, send_alert, send_email
from etlcraft.alerts.message import AlertMessage
from etlcraft.config.loader import CONFIG_FILE, EmailConfig, load_config
from etlcraft.services.doctor import FAIL, OK, WARN, email_checks
from tests.py.alerts.relay import PASSWORD, Relay, free_port, relay, server_context, write_ca

DB_ERROR = ('psycopg.errors.UndefinedTable: relation "sales.orders" does not exist\r\n'
            "LINE 1: SELECT order_id FROM sales.orders\n"
            "                              ^\n\tHINT:  check the search_path")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ca(ca, tmp_path_factory.mktemp("ca") / "relay-ca.pem")


@pytest.fixture(scope="module")
def starttls_relay(ca: trustme.CA) -> Iterator[Relay]:
    """STARTTLS, with a certificate for 127.0.0.1 signed by the test's authority."""
    with relay(server_context(ca, "127.0.0.1")) as running:
        yield running


@pytest.fixture(scope="module")
def elsewhere_relay(ca: trustme.CA) -> Iterator[Relay]:
    """STARTTLS, with a certificate of the same authority for another host name."""
    with relay(server_context(ca, "relay.elsewhere.test")) as running:
        yield running


@pytest.fixture(scope="module")
def implicit_relay(ca: trustme.CA) -> Iterator[Relay]:
    """TLS from the first byte (tls_mode ssl), on a port of its own."""
    with relay(server_context(ca, "127.0.0.1"), implicit=True) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_mailboxes(starttls_relay: Relay, elsewhere_relay: Relay, implicit_relay: Relay) -> None:
    for running in (starttls_relay, elsewhere_relay, implicit_relay):
        running.recorder.received.clear()


def settings(running: Relay | None, ca_file: Path | None, *, port: int | None = None, tls_mode: str = "starttls",
             username: str | None = None, prefix: str | None = None) -> EmailConfig:
    return EmailConfig(host="127.0.0.1", port=port or (running.port if running else 25), tls_mode=tls_mode,
                       ca_file=ca_file, username=username, secret="SMTP_PASSWORD" if username else None,
                       from_address="etl@example.com", to=("ops@example.com",), subject_prefix=prefix)


def alert(error: str | None) -> AlertMessage:
    return AlertMessage(alert_id=7, kind="RUN_FAILED", project="sales", pipeline="orders", pipeline_run_id=42,
                        run_date="2026-12-05", run_key="schedule:2026-12-05", task="load_orders", task_run_id=420,
                        attempt_id=4200, status="FAILED", error=error, raised_at="2026-12-06T03:00:00+00:00",
                        links={"api": "http://127.0.0.1:8730/api/v1/runs/42"})


# -- TLS that verifies the relay (B50) ---------------------------------------------------------------------------

def test_b50_a_relay_certificate_for_another_host_name_is_refused(elsewhere_relay: Relay, ca_file: Path) -> None:
    delivery = send_email("test", "body", settings(elsewhere_relay, ca_file), ("ops@example.com",), None)
    assert delivery.outcome == "FAILED" and delivery.retryable
    assert f"the relay 127.0.0.1:{elsewhere_relay.port} presented a certificate that was refused" in delivery.detail
    assert "mismatch" in delivery.detail and f"Email.ca_file {ca_file}" in delivery.detail
    assert elsewhere_relay.recorder.received == []


def test_b50_a_certificate_of_an_authority_the_system_does_not_know_is_refused_without_ca_file(
        starttls_relay: Relay) -> None:
    delivery = send_email("test", "body", settings(starttls_relay, None), ("ops@example.com",), None)
    assert delivery.outcome == "FAILED"
    assert "presented a certificate that was refused" in delivery.detail
    assert "signed by the system's authorities" in delivery.detail
    assert starttls_relay.recorder.received == []


def test_b50_with_ca_file_naming_the_relays_authority_the_message_is_delivered(
        starttls_relay: Relay, ca_file: Path) -> None:
    delivery = send_email("Nightly load", "All done.\n", settings(starttls_relay, ca_file, prefix="[etl prod]"),
                          ("ops@example.com",), None)
    assert delivery.outcome == "DELIVERED" and delivery.warning is None, delivery.detail
    assert delivery.detail == f"the relay 127.0.0.1:{starttls_relay.port} accepted the message for ops@example.com"
    [received] = starttls_relay.recorder.received
    assert received.recipients == ["ops@example.com"]
    assert received.message["Subject"] == "[etl prod] Nightly load"
    assert received.message["From"] == "etl@example.com"
    assert received.message.get_content().replace("\r\n", "\n") == "All done.\n"


def test_implicit_tls_on_a_second_port_with_a_login(implicit_relay: Relay, starttls_relay: Relay,
                                                    ca_file: Path) -> None:
    assert implicit_relay.port != starttls_relay.port
    config = settings(implicit_relay, ca_file, tls_mode="ssl", username="etl")
    delivery = send_email("over TLS", "body", config, ("ops@example.com",), PASSWORD)
    assert delivery.outcome == "DELIVERED", delivery.detail
    assert [r.recipients for r in implicit_relay.recorder.received] == [["ops@example.com"]]
    assert PASSWORD not in repr(delivery)


def test_implicit_tls_refuses_a_certificate_it_cannot_verify(implicit_relay: Relay) -> None:
    delivery = send_email("over TLS", "body", settings(implicit_relay, None, tls_mode="ssl"), ("ops@example.com",),
                          None)
    assert delivery.outcome == "FAILED" and "presented a certificate that was refused" in delivery.detail
    assert implicit_relay.recorder.received == []


def test_a_refused_login_names_the_user_and_never_the_password(starttls_relay: Relay, ca_file: Path) -> None:
    config = dataclasses.replace(settings(starttls_relay, ca_file, username="etl"), username="intruder")
    delivery = send_email("test", "body", config, ("ops@example.com",), PASSWORD)
    assert delivery.outcome == "FAILED"
    assert f"the relay 127.0.0.1:{starttls_relay.port} refused the login of intruder (535" in delivery.detail
    assert "variable SMTP_PASSWORD" in delivery.detail and PASSWORD not in repr(delivery)


def test_tls_mode_none_sends_without_encryption_when_there_is_no_login(starttls_relay: Relay) -> None:
    delivery = send_email("plain", "body", settings(starttls_relay, None, tls_mode="none"), ("ops@example.com",),
                          None)
    assert delivery.outcome == "DELIVERED", delivery.detail
    assert len(starttls_relay.recorder.received) == 1


# -- one safe subject line (B20) ---------------------------------------------------------------------------------

def test_b20_a_multi_line_database_error_in_the_subject_arrives_as_one_line(
        starttls_relay: Relay, ca_file: Path) -> None:
    delivery = send_alert(alert(DB_ERROR), settings(starttls_relay, ca_file), ("ops@example.com",), None)
    assert delivery.outcome == "DELIVERED", delivery.detail
    [received] = starttls_relay.recorder.received
    subject = received.message["Subject"]
    assert subject == safe_subject(
        'RUN_FAILED sales.orders schedule:2026-12-05 task load_orders FAILED: psycopg.errors.UndefinedTable: '
        'relation "sales.orders" does not exist LINE 1: SELECT order_id FROM sales.orders ^ HINT: check the '
        "search_path")
    assert subject.endswith('does not exist LINE 1: SELECT order_id FROM sales.orders ^ HINT: check the\u2026')
    body = received.message.get_content().replace("\r\n", "\n")
    assert DB_ERROR.replace("\r\n", "\n") in body  # the full error, its lines kept, stays in the body
    assert "Run: 42 / schedule:2026-12-05" in body and "API: http://127.0.0.1:8730/api/v1/runs/42" in body


def test_a_long_subject_is_capped_with_an_ellipsis_and_delivered(starttls_relay: Relay, ca_file: Path) -> None:
    delivery = send_alert(alert("x" * 5000 + "\nsecond line"), settings(starttls_relay, ca_file),
                          ("ops@example.com",), None)
    assert delivery.outcome == "DELIVERED", delivery.detail
    subject = starttls_relay.recorder.received[0].message["Subject"]
    assert len(subject) == SUBJECT_MAX and subject.endswith("x\u2026")
    body = starttls_relay.recorder.received[0].message.get_content().replace("\r\n", "\n")
    assert "x" * 5000 + "\nsecond line" in body


@pytest.mark.parametrize(("text", "line"), [
    ("a\r\nb\n\nc", "a b c"),
    ("tab\tand  spaces", "tab and spaces"),
    ("bell\x07 escape\x1b[31m red\x7f", "bell escape[31m red"),
    ("  line separator\u2028here  ", "line separator here"),
    ("\n\r\t", ""),
    ("y" * 199, "y" * 199),
    ("y" * 200, "y" * 200),
    ("y" * 201, "y" * 199 + "\u2026"),
])
def test_safe_subject_makes_one_line(text: str, line: str) -> None:
    assert safe_subject(text) == line


def test_a_header_problem_is_reported_like_a_send_problem(starttls_relay: Relay, ca_file: Path) -> None:
    delivery = send_email("test", "body", settings(starttls_relay, ca_file), ("ops@example.com\r\nBcc: x@y.z",), None)
    assert delivery.outcome == "FAILED" and not delivery.retryable
    assert "could not be built or sent through 127.0.0.1:" in delivery.detail
    assert starttls_relay.recorder.received == []


# -- refusals and outages (B61) ----------------------------------------------------------------------------------

def test_b61_a_partial_refusal_is_delivered_with_a_warning_naming_the_refused(
        starttls_relay: Relay, ca_file: Path) -> None:
    to = ("ops@example.com", "nobody@example.com", "team@example.com")
    delivery = send_email("test", "body", settings(starttls_relay, ca_file), to, None)
    assert delivery.outcome == "DELIVERED"
    assert delivery.warning == (
        f"the relay 127.0.0.1:{starttls_relay.port} refused 1 of 3 recipients: nobody@example.com (550 5.1.1 no "
        "mailbox here by that name); the others got the message; correct or remove the refused addresses")
    assert [r.recipients for r in starttls_relay.recorder.received] == [["ops@example.com", "team@example.com"]]


def test_b61_a_total_refusal_fails_and_may_be_retried(starttls_relay: Relay, ca_file: Path) -> None:
    delivery = send_email("test", "body", settings(starttls_relay, ca_file),
                          ("nobody@example.com", "nobody.else@example.com"), None)
    assert delivery.outcome == "FAILED" and delivery.retryable
    assert delivery.detail.startswith(f"the relay 127.0.0.1:{starttls_relay.port} refused every recipient: "
                                      "nobody.else@example.com (550 ")
    assert "nothing was sent" in delivery.detail
    assert starttls_relay.recorder.received == []


def test_b61_a_relay_that_is_down_fails_naming_host_and_port_and_may_be_retried(ca_file: Path) -> None:
    port = free_port()
    delivery = send_alert(alert("boom"), settings(None, ca_file, port=port, username="etl"), ("ops@example.com",),
                          PASSWORD)
    assert delivery.outcome == "FAILED" and delivery.retryable
    assert delivery.detail.startswith(f"the relay 127.0.0.1:{port} cannot be reached (ConnectionRefusedError")
    assert "check that it runs and that Email.host and Email.port name it" in delivery.detail


# -- doctor ------------------------------------------------------------------------------------------------------

def project(tmp_path: Path, email: str, env: str = "") -> Path:
    (tmp_path / CONFIG_FILE).write_text(
        "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: w.duckdb\n"
        "Email:\n  host: 127.0.0.1\n  from_address: etl@example.com\n  to: [ops@example.com]\n" + email)
    (tmp_path / ".env").write_text(env)
    return tmp_path


def test_doctor_shows_the_mode_and_greets_the_relay_over_verified_tls(
        tmp_path: Path, starttls_relay: Relay, ca_file: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(ca_file.read_bytes())
    config = load_config(project(tmp_path, f"  port: {starttls_relay.port}\n  ca_file: certs/ca.pem\n"
                                           "  username: etl\n  secret: SMTP_PASSWORD\n", f"SMTP_PASSWORD={PASSWORD}\n"))
    checks = email_checks(config)
    assert [(c.name, c.status) for c in checks] == [("email", OK), ("email relay", OK)]
    assert checks[0].detail == (
        f"relay 127.0.0.1:{starttls_relay.port}, tls_mode starttls, login as etl (password in the variable "
        f"SMTP_PASSWORD), from etl@example.com to ops@example.com; the relay's certificate is verified against the "
        f"authorities in {tmp_path / 'certs' / 'ca.pem'} and the name 127.0.0.1")
    assert checks[1].detail.startswith(f"the relay 127.0.0.1:{starttls_relay.port} answered EHLO with 250 over TLS")
    assert starttls_relay.recorder.received == []
    assert PASSWORD not in repr(checks)


def test_doctor_fails_on_a_certificate_for_another_name_and_warns_when_the_relay_is_down(
        tmp_path: Path, elsewhere_relay: Relay, ca_file: Path) -> None:
    config = load_config(project(tmp_path, f"  port: {elsewhere_relay.port}\n  ca_file: {ca_file}\n"))
    assert [(c.name, c.status) for c in email_checks(config)] == [("email", OK), ("email relay", FAIL)]
    assert config.email is not None
    down = dataclasses.replace(config, email=dataclasses.replace(config.email, port=free_port()))
    relay_check = email_checks(down)[-1]
    assert relay_check.status == WARN and "cannot be reached" in relay_check.detail


def test_doctor_refuses_tls_mode_none_with_a_login_and_a_missing_ca_file(tmp_path: Path) -> None:
    config = load_config(project(tmp_path, "  tls_mode: none\n"))
    assert email_checks(config)[0].status == WARN
    assert config.email is not None
    with_login = dataclasses.replace(config, email=dataclasses.replace(config.email, username="etl", secret="PW"))
    [check] = email_checks(with_login)
    assert check.status == FAIL and "the password would cross the network unencrypted" in check.detail
    missing = load_config(project(tmp_path, "  ca_file: certs/missing.pem\n"))
    assert ("email ca_file", FAIL) in [(c.name, c.status) for c in email_checks(missing)]


def test_a_relay_without_starttls_or_without_a_login_is_refused_saying_which(
        starttls_relay: Relay, ca_file: Path) -> None:
    with relay(None) as plain_relay:
        refused = send_email("t", "b", settings(plain_relay, ca_file), ("ops@example.com",), None)
    assert refused.outcome == "FAILED" and refused.detail.startswith(
        f"the relay 127.0.0.1:{plain_relay.port} does not offer STARTTLS (tls_mode starttls)")
    assert plain_relay.recorder.received == []
    # aiosmtpd offers a login only after STARTTLS: without it, the relay has no AUTH to offer.
    plain = send_email("t", "b", settings(starttls_relay, None, tls_mode="none", username="etl"),
                       ("ops@example.com",), PASSWORD)
    assert plain.outcome == "FAILED"
    assert plain.detail.startswith(f"the relay 127.0.0.1:{starttls_relay.port} does not offer a login (no AUTH)")
    assert PASSWORD not in repr(plain) and starttls_relay.recorder.received == []
