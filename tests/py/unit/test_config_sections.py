"""craft-connector.yml's Email and Orchestration sections, the key table (etlcraft/config/keys.py) that drives the
loader and docs/reference/configuration.md, whole numbers (S2.G.8), the fingerprint, and B48, B55, B56 and B58
extended to Email. Secrets never leak into repr(), messages or logs.

No setting is silently ignored: every key of the table is read by the code. Orchestration.Db_pool_size sizes
etl-craft server's pool, at least what the server's threads and its HTTP API hold at once."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import logging
import os
import re
from pathlib import Path

import pytest

from etlcraft.api.app import REQUEST_CONNECTIONS, REQUEST_THREADS
from etlcraft.config.keys import KEYS, RULES, SECTIONS, SERVER_POOL_MINIMUM, WHOLE_NUMBER_MAX, Key, KeyType, keys_of
from etlcraft.config.loader import (
    CONFIG_FILE,
    EmailConfig,
    OrchestrationConfig,
    ProjectConfig,
    _check,
    load_config,
)
from etlcraft.core.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[3]
BASE = "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
EMAIL = (
    "Email:\n"
    "  host: smtp.example.com\n"
    "  from_address: etl@example.com\n"
    "  to: [ops@example.com]\n"
)
EMAIL_AUTH = EMAIL + "  username: etl\n  secret: ETL_CRAFT_SMTP_PASSWORD\n"
ORCHESTRATION_KEYS = (
    "Project, Timezone, Max_parallel_tasks, Gate_wait_minutes, Retries, Retry_delay_seconds, Retry_backoff, "
    "Lease_seconds, Heartbeat_seconds, Shutdown_grace_seconds, Api_address, Full_check_day, Db_pool_size"
)
EMAIL_KEYS = "host, port, tls_mode, ca_file, username, secret, from_address, to, subject_prefix"
SENTINEL = "Sentinel-s3cr3t-9f1c-never-shown"


@pytest.fixture(autouse=True)
def _hermetic_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test here sees the real environment's variables (they would change near-miss hints and lookups)."""
    for name in list(os.environ):
        if name != "PYTEST_CURRENT_TEST":
            monkeypatch.delenv(name)



def write_project(directory: Path, text: str, env: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_FILE).write_text(text, encoding="utf-8")
    if env is not None:
        (directory / ".env").write_text(env, encoding="utf-8")
    return directory


def load_error(directory: Path) -> str:
    with pytest.raises(ConfigurationError) as info:
        load_config(directory)
    assert info.value.exit_code == 3
    return str(info.value)


def orchestration(body: str) -> str:
    return BASE + "Orchestration:\n" + body


def email(extra: str = "", base: str = EMAIL) -> str:
    return BASE + base + extra


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference_docs", ROOT / "scripts" / "gen_reference_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------- broken configurations

BROKEN = [
    # Orchestration: whole numbers are plain ASCII digits, in range (S2.G.8)
    pytest.param(
        orchestration("  Max_parallel_tasks: 0\n"),
        "craft-connector.yml: Orchestration.Max_parallel_tasks is 0; expected a whole number of at least 1",
        id="max-parallel-zero",
    ),
    pytest.param(
        orchestration("  Max_parallel_tasks: '²'\n"),
        "craft-connector.yml: Orchestration.Max_parallel_tasks is '²'; expected a whole number of at least 1",
        id="superscript-two",
    ),
    pytest.param(
        orchestration("  Max_parallel_tasks: '٣'\n"),
        "craft-connector.yml: Orchestration.Max_parallel_tasks is '٣'; expected a whole number of at least 1",
        id="arabic-indic-digit",
    ),
    pytest.param(
        orchestration("  Retries: 1e3\n"),
        "craft-connector.yml: Orchestration.Retries is '1e3'; expected a whole number of at least 0",
        id="exponent-text",
    ),
    pytest.param(
        orchestration("  Retries: 1.0e+3\n"),
        "craft-connector.yml: Orchestration.Retries is 1.0e+3; expected a whole number of at least 0",
        id="exponent-float",
    ),
    pytest.param(
        orchestration("  Gate_wait_minutes: 2.0\n"),
        "craft-connector.yml: Orchestration.Gate_wait_minutes is 2.0; expected a whole number of at least 0",
        id="float-for-integer",
    ),
    pytest.param(
        orchestration("  Gate_wait_minutes: true\n"),
        "craft-connector.yml: Orchestration.Gate_wait_minutes is true; expected a whole number of at least 0",
        id="boolean-for-integer",
    ),
    pytest.param(
        orchestration("  Retry_delay_seconds: 0x10\n"),
        "craft-connector.yml: Orchestration.Retry_delay_seconds is 0x10; expected a whole number of at least 0",
        id="hexadecimal",
    ),
    pytest.param(
        orchestration("  Retry_delay_seconds: 1_000\n"),
        "craft-connector.yml: Orchestration.Retry_delay_seconds is 1_000; expected a whole number of at least 0",
        id="underscore",
    ),
    pytest.param(
        orchestration("  Retry_delay_seconds: 1:30\n"),
        "craft-connector.yml: Orchestration.Retry_delay_seconds is 1:30; expected a whole number of at least 0",
        id="sexagesimal",
    ),
    pytest.param(
        orchestration("  Shutdown_grace_seconds: -1\n"),
        "craft-connector.yml: Orchestration.Shutdown_grace_seconds is -1; expected a whole number of at least 0",
        id="negative",
    ),
    pytest.param(
        orchestration("  Shutdown_grace_seconds: '+5'\n"),
        "craft-connector.yml: Orchestration.Shutdown_grace_seconds is '+5'; expected a whole number of at least 0",
        id="signed-text",
    ),
    pytest.param(
        orchestration("  Shutdown_grace_seconds:\n"),
        "craft-connector.yml: Orchestration.Shutdown_grace_seconds is None; expected a whole number of at least 0",
        id="integer-null",
    ),
    pytest.param(
        orchestration("  Shutdown_grace_seconds: ''\n"),
        "craft-connector.yml: Orchestration.Shutdown_grace_seconds is ''; expected a whole number of at least 0",
        id="integer-empty-text",
    ),
    pytest.param(
        orchestration("  Shutdown_grace_seconds: [60]\n"),
        "craft-connector.yml: Orchestration.Shutdown_grace_seconds is [60]; expected a whole number of at least 0",
        id="integer-list",
    ),
    pytest.param(
        orchestration("  Lease_seconds: 4\n"),
        "craft-connector.yml: Orchestration.Lease_seconds is 4; expected a whole number of at least 5",
        id="lease-too-short",
    ),
    pytest.param(
        orchestration("  Heartbeat_seconds: 0\n"),
        "craft-connector.yml: Orchestration.Heartbeat_seconds is 0; expected a whole number of at least 1",
        id="heartbeat-zero",
    ),
    pytest.param(
        orchestration(f"  Max_parallel_tasks: {WHOLE_NUMBER_MAX + 1}\n"),
        f"craft-connector.yml: Orchestration.Max_parallel_tasks is {WHOLE_NUMBER_MAX + 1}; "
        f"expected a whole number from 1 to {WHOLE_NUMBER_MAX}",
        id="above-the-largest-whole-number",
    ),
    pytest.param(
        orchestration("  Retries: '" + "9" * 5000 + "'\n"),
        "craft-connector.yml: Orchestration.Retries is '" + "9" * 5000 + "'; "
        f"expected a whole number from 0 to {WHOLE_NUMBER_MAX}",
        id="five-thousand-digits",
    ),
    # Orchestration: numbers, codes, time zones
    pytest.param(
        orchestration("  Retry_backoff: 0.5\n"),
        "craft-connector.yml: Orchestration.Retry_backoff is 0.5; expected a number of at least 1.0",
        id="backoff-below-one",
    ),
    pytest.param(
        orchestration("  Retry_backoff: .inf\n"),
        "craft-connector.yml: Orchestration.Retry_backoff is .inf; expected a number of at least 1.0",
        id="backoff-infinite",
    ),
    pytest.param(
        orchestration("  Retry_backoff: .nan\n"),
        "craft-connector.yml: Orchestration.Retry_backoff is .nan; expected a number of at least 1.0",
        id="backoff-nan",
    ),
    pytest.param(
        orchestration("  Retry_backoff: 2e0\n"),
        "craft-connector.yml: Orchestration.Retry_backoff is '2e0'; expected a number of at least 1.0",
        id="backoff-exponent",
    ),
    pytest.param(
        orchestration("  Timezone: Europe/Pariss\n"),
        "craft-connector.yml: Orchestration.Timezone is 'Europe/Pariss'; "
        "expected an IANA time zone name such as Europe/Paris or UTC; did you mean Europe/Paris?",
        id="timezone-typo",
    ),
    pytest.param(
        orchestration("  Timezone: europe/paris\n"),
        "craft-connector.yml: Orchestration.Timezone is 'europe/paris'; "
        "expected an IANA time zone name such as Europe/Paris or UTC; "
        "did you mean Europe/Paris? (names are case-sensitive)",
        id="timezone-case",
    ),
    pytest.param(
        orchestration("  Timezone: ../../etc/passwd\n"),
        "craft-connector.yml: Orchestration.Timezone is '../../etc/passwd'; "
        "expected an IANA time zone name such as Europe/Paris or UTC",
        id="timezone-path-traversal",
    ),
    pytest.param(
        orchestration("  Timezone: localtime\n"),
        "craft-connector.yml: Orchestration.Timezone is 'localtime'; "
        "expected an IANA time zone name such as Europe/Paris or UTC",
        id="timezone-of-the-machine",
    ),
    pytest.param(
        orchestration("  Timezone: +02:00\n"),
        "craft-connector.yml: Orchestration.Timezone is '+02:00'; "
        "expected an IANA time zone name such as Europe/Paris or UTC",
        id="timezone-offset",
    ),
    # Orchestration: cross-key rule, layout, names
    pytest.param(
        orchestration("  Heartbeat_seconds: 30\n"),
        "craft-connector.yml: Orchestration.Heartbeat_seconds is 30 with Lease_seconds 60; expected less than half "
        "of Lease_seconds, so one late heartbeat does not lose the lease: lower Heartbeat_seconds or raise "
        "Lease_seconds",
        id="heartbeat-half-the-lease",
    ),
    pytest.param(
        orchestration("  Lease_seconds: 20\n"),
        "craft-connector.yml: Orchestration.Heartbeat_seconds is 15 (the default) with Lease_seconds 20; expected "
        "less than half of Lease_seconds, so one late heartbeat does not lose the lease: lower Heartbeat_seconds "
        "or raise Lease_seconds",
        id="short-lease-against-default-heartbeat",
    ),
    pytest.param(
        orchestration("  max_parallel_tasks: 8\n"),
        "craft-connector.yml: unknown key Orchestration.max_parallel_tasks; the keys of Orchestration are "
        f"{ORCHESTRATION_KEYS}; did you mean Max_parallel_tasks? (names are case-sensitive)",
        id="key-name-is-case-sensitive",
    ),
    pytest.param(
        orchestration("  Max_paralel_tasks: 8\n"),
        "craft-connector.yml: unknown key Orchestration.Max_paralel_tasks; the keys of Orchestration are "
        f"{ORCHESTRATION_KEYS}; did you mean Max_parallel_tasks?",
        id="key-typo",
    ),
    pytest.param(
        orchestration("  Pools: 3\n"),
        f"craft-connector.yml: unknown key Orchestration.Pools; the keys of Orchestration are {ORCHESTRATION_KEYS}",
        id="unknown-key",
    ),
    pytest.param(
        BASE + "Orchestration:\n",
        f"craft-connector.yml: Orchestration must be a mapping of {ORCHESTRATION_KEYS}",
        id="orchestration-null",
    ),
    pytest.param(
        BASE + "Orchestration: [4]\n",
        f"craft-connector.yml: Orchestration must be a mapping of {ORCHESTRATION_KEYS}",
        id="orchestration-list",
    ),
    pytest.param(
        BASE + "orchestration: {}\n",
        "craft-connector.yml: unknown section 'orchestration'; the sections are Engine, Warehouse, Email, "
        "Orchestration, Alerts, Artifacts; did you mean Orchestration? (names are case-sensitive)",
        id="section-name-is-case-sensitive",
    ),
    pytest.param(
        BASE + "Emails: {}\n",
        "craft-connector.yml: unknown section 'Emails'; the sections are Engine, Warehouse, Email, Orchestration, "
        "Alerts, Artifacts; "
        "did you mean Email?",
        id="section-typo",
    ),
    # Email
    pytest.param(
        BASE + "Email:\n  port: 25\n",
        "craft-connector.yml: Email.host is missing; expected a host name or IP address such as smtp.example.com",
        id="host-missing",
    ),
    pytest.param(
        email(base="Email:\n  host: smtp.example.com\n  to: [ops@example.com]\n"),
        "craft-connector.yml: Email.from_address is missing; expected an e-mail address such as etl@example.com",
        id="from-missing",
    ),
    pytest.param(
        email(base="Email:\n  host: smtp.example.com\n  from_address: etl@example.com\n"),
        "craft-connector.yml: Email.to is missing; "
        "expected a list of at least one item, each an e-mail address such as ops@example.com",
        id="to-missing",
    ),
    pytest.param(
        BASE + "Email:\n",
        f"craft-connector.yml: Email must be a mapping of {EMAIL_KEYS}",
        id="email-null",
    ),
    pytest.param(
        email("  port: 587587\n"),
        "craft-connector.yml: Email.port is 587587; expected a whole number from 1 to 65535",
        id="port-too-large",
    ),
    pytest.param(
        email("  port: 0\n"),
        "craft-connector.yml: Email.port is 0; expected a whole number from 1 to 65535",
        id="port-zero",
    ),
    pytest.param(
        email("  port: '²'\n"),
        "craft-connector.yml: Email.port is '²'; expected a whole number from 1 to 65535",
        id="port-superscript",
    ),
    pytest.param(
        email("  port: smtp\n"),
        "craft-connector.yml: Email.port is 'smtp'; expected a whole number from 1 to 65535",
        id="port-name",
    ),
    pytest.param(
        email("  tls_mode: TLS\n"),
        "craft-connector.yml: Email.tls_mode is 'TLS'; supported: starttls, ssl, none",
        id="tls-mode-unknown",
    ),
    pytest.param(
        email("  tls_mode: STARTTLS\n"),
        "craft-connector.yml: Email.tls_mode is 'STARTTLS'; supported: starttls, ssl, none",
        id="tls-mode-is-case-sensitive",
    ),
    pytest.param(
        email("  tls_mode: off\n"),
        "craft-connector.yml: Email.tls_mode is off; supported: starttls, ssl, none",
        id="tls-mode-yaml-boolean",
    ),
    pytest.param(
        email("  use_tls: true\n"),
        f"craft-connector.yml: unknown key Email.use_tls; the keys of Email are {EMAIL_KEYS}",
        id="use-tls-is-gone",
    ),
    pytest.param(
        email("  Host: smtp2.example.com\n"),
        f"craft-connector.yml: unknown key Email.Host; the keys of Email are {EMAIL_KEYS}; "
        "did you mean host? (names are case-sensitive)",
        id="email-key-is-case-sensitive",
    ),
    pytest.param(
        email("  password: hunter2\n"),
        f"craft-connector.yml: unknown key Email.password; the keys of Email are {EMAIL_KEYS}",
        id="password-key-is-unknown",
    ),
    pytest.param(
        email(base=EMAIL.replace("smtp.example.com", "smtp.example.com/relay")),
        "craft-connector.yml: Email.host is 'smtp.example.com/relay'; "
        "expected a host name or IP address such as smtp.example.com",
        id="host-with-path",
    ),
    pytest.param(
        email(base=EMAIL.replace("smtp.example.com", "smtp .example.com")),
        "craft-connector.yml: Email.host is 'smtp .example.com'; "
        "expected a host name or IP address such as smtp.example.com",
        id="host-with-space",
    ),
    pytest.param(
        email(base=EMAIL.replace("etl@example.com", "etl at example.com")),
        "craft-connector.yml: Email.from_address is 'etl at example.com'; "
        "expected an e-mail address such as etl@example.com",
        id="from-not-an-address",
    ),
    pytest.param(
        email(base=EMAIL.replace("[ops@example.com]", "ops@example.com")),
        "craft-connector.yml: Email.to is 'ops@example.com'; "
        "expected a list of at least one item, each an e-mail address such as ops@example.com",
        id="to-not-a-list",
    ),
    pytest.param(
        email(base=EMAIL.replace("[ops@example.com]", "[]")),
        "craft-connector.yml: Email.to is []; "
        "expected a list of at least one item, each an e-mail address such as ops@example.com",
        id="to-empty",
    ),
    pytest.param(
        email(base=EMAIL.replace("[ops@example.com]", "[ops@example.com, bob]")),
        "craft-connector.yml: Email.to[1] is 'bob'; expected an e-mail address such as ops@example.com",
        id="to-item-not-an-address",
    ),
    pytest.param(
        email(base=EMAIL.replace("[ops@example.com]", "['ops@example.com, dev@example.com']")),
        "craft-connector.yml: Email.to[0] is 'ops@example.com, dev@example.com'; "
        "expected an e-mail address such as ops@example.com",
        id="to-item-two-addresses",
    ),
    pytest.param(
        email(base=EMAIL.replace("[ops@example.com]", "[ops@example.com, 42]")),
        "craft-connector.yml: Email.to[1] is 42; expected an e-mail address such as ops@example.com",
        id="to-item-number",
    ),
    pytest.param(
        email("  subject_prefix: \"[etl]\\r\\nBcc: victim@example.com\"\n"),
        "craft-connector.yml: Email.subject_prefix is '[etl]\\r\\nBcc: victim@example.com'; expected one line of text",
        id="subject-prefix-header-injection",
    ),
    pytest.param(
        email("  ca_file: ''\n"),
        "craft-connector.yml: Email.ca_file must be a non-empty text, found ''",
        id="ca-file-empty",
    ),
    pytest.param(
        email("  secret: ETL_CRAFT_SMTP_PASSWORD\n"),
        "craft-connector.yml: Email.secret is set but Email.username is not; "
        "set the user to authenticate as, or remove Email.secret",
        id="secret-without-username",
    ),
    pytest.param(
        email("  username: etl\n"),
        "craft-connector.yml: Email.username is set but Email.secret is not; name the variable that holds the SMTP "
        "password in Email.secret, or remove Email.username",
        id="username-without-secret",
    ),
    pytest.param(
        email("  tls_mode: none\n", base=EMAIL_AUTH),
        "craft-connector.yml: Email.tls_mode is 'none' with Email.username set; the password would cross the "
        "network unencrypted: use tls_mode starttls or ssl, or remove username and secret",
        id="password-in-clear",
    ),
    pytest.param(
        email("  tls_mode: none\n  ca_file: certs/relay-ca.pem\n"),
        "craft-connector.yml: Email.ca_file does not apply when Email.tls_mode is 'none'; "
        "remove it or use starttls or ssl",
        id="ca-file-without-tls",
    ),
    pytest.param(
        email("  username: etl\n  secret: hunter2!\n"),
        "craft-connector.yml: Email.secret must be the name of a variable (letters, digits, _), not a password; "
        "put the password in that variable (environment or .env)",
        id="email-secret-is-a-password",
    ),
    pytest.param(
        email("  username: \"etl\\nRCPT TO:<x@example.com>\"\n  secret: ETL_CRAFT_SMTP_PASSWORD\n"),
        "craft-connector.yml: Email.username is 'etl\\nRCPT TO:<x@example.com>'; expected one line of text",
        id="username-two-lines",
    ),
    # Warehouses etl-craft does not support are refused naming the supported ones (S4.I.5)
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: snowflake\n  url: snowflake://acct\n",
        "craft-connector.yml: Warehouse.dialect is 'snowflake'; supported: duckdb, postgresql",
        id="warehouse-snowflake",
    ),
    pytest.param(
        "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: generic\n  url: mysql://db/dw\n",
        "craft-connector.yml: Warehouse.dialect is 'generic'; supported: duckdb, postgresql",
        id="warehouse-generic",
    ),
]


BROKEN_EMAIL = [p for p in BROKEN if "\nEmail:" in str(p.values[0])]
BROKEN = [p for p in BROKEN if p not in BROKEN_EMAIL]


@pytest.mark.parametrize(("text", "message"), BROKEN)
def test_broken_section_is_refused_with_its_message(tmp_path: Path, text: str, message: str) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path) == message


@pytest.mark.parametrize(("text", "message"), BROKEN_EMAIL)
def test_broken_email_section_is_refused_with_its_message(tmp_path: Path, text: str, message: str) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path) == message


def test_there_are_at_least_25_broken_configurations_for_the_new_sections() -> None:
    assert len([p for p in BROKEN if not p.id.startswith("warehouse-")]) >= 25
    assert len(BROKEN_EMAIL) >= 25


# ------------------------------------------------------------------------------ the server's connection pool

SERVER_POOL = [
    pytest.param("  Db_pool_size: 20\n", 20, id="twenty"),
    pytest.param("  Db_pool_size: 9\n", 9, id="the-minimum"),
    pytest.param("  Db_pool_size: 100\n", 100, id="the-maximum"),
    pytest.param("  Max_parallel_tasks: 4\n", 10, id="the-default"),
]


@pytest.mark.parametrize(("body", "size"), SERVER_POOL)
def test_db_pool_size_is_read__within_its_range(tmp_path: Path, body: str, size: int) -> None:
    assert load_config(write_project(tmp_path, orchestration(body))).orchestration.db_pool_size == size


@pytest.mark.parametrize("written", ["8", "0", "101"])
def test_db_pool_size_outside_its_range_is_refused_saying_what_the_server_holds(tmp_path: Path, written: str) -> None:
    write_project(tmp_path, orchestration(f"  Db_pool_size: {written}\n"))
    assert load_error(tmp_path) == (
        f"craft-connector.yml: Orchestration.Db_pool_size is {written}; expected a whole number from 9 to 100 (the "
        "server's loop, heartbeat and alert sender hold 3 connections and its HTTP API up to 6)")


def test_db_pool_size_minimum_is_what_the_server_and_its_api_hold_at_once() -> None:
    """The server's loop, heartbeat and alert sender, and the API's request threads with one spare: the minimum
    the key takes, so no thread of the server waits for a connection another holds."""
    from etlcraft.overseer.server import SERVER_CONNECTIONS

    key = next(k for k in KEYS if k.path == "Orchestration.Db_pool_size")
    assert REQUEST_CONNECTIONS == REQUEST_THREADS + 1
    assert key.minimum == SERVER_POOL_MINIMUM == SERVER_CONNECTIONS + REQUEST_CONNECTIONS
    assert isinstance(key.default, int) and key.default >= SERVER_POOL_MINIMUM
    assert key.range_reason == (f"the server's loop, heartbeat and alert sender hold {SERVER_CONNECTIONS} connections "
                                f"and its HTTP API up to {REQUEST_CONNECTIONS}")


def test_the_email_section_is_read_now_that_alerts_send_e_mail(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, BASE + EMAIL))
    assert config.email is not None and config.email.host == "smtp.example.com"
    assert config.email.tls_mode == "starttls" and config.email.port == 587


def test_every_key_is_read_by_the_code() -> None:
    """No setting is silently ignored: each key is read (as an attribute of its section's config object) somewhere
    in etlcraft/ outside the loader."""
    read: set[str] = set()
    for path in (ROOT / "etlcraft").rglob("*.py"):
        if "config" not in path.relative_to(ROOT / "etlcraft").parts[:1]:
            read |= {n.attr for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(n, ast.Attribute)}
    unread = [k.path for k in KEYS if k.field not in read]
    assert unread == [], "read these keys, or remove them from etlcraft/config/keys.py"


# -------------------------------------------------------------------------------------------------- defaults


def test_without_the_optional_sections_orchestration_has_its_defaults_and_there_is_no_email(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, BASE))
    assert config.email is None
    assert config.orchestration == OrchestrationConfig(
        project=None,
        timezone=None,
        max_parallel_tasks=4,
        gate_wait_minutes=60,
        retries=0,
        retry_delay_seconds=60,
        retry_backoff=2.0,
        lease_seconds=60,
        heartbeat_seconds=15,
        shutdown_grace_seconds=60,
        api_address="127.0.0.1:8730",
        full_check_day="sunday",
        db_pool_size=10,
    )


def test_an_empty_orchestration_mapping_means_every_default(tmp_path: Path) -> None:
    empty = load_config(write_project(tmp_path / "a", BASE + "Orchestration: {}\n"))
    absent = load_config(write_project(tmp_path / "b", BASE))
    assert empty.orchestration == absent.orchestration
    assert empty.sha256 == absent.sha256


def test_every_orchestration_key_is_optional_with_a_default__but_the_time_zone_and_the_project() -> None:
    """Timezone has no default: when it is not set, the project's row or UTC decides (etlcraft.core.zones). Project
    has none either: when it is not set, the Engine DB's only project is used (etlcraft.services.projects)."""
    for key in KEYS:
        if key.section == "Orchestration":
            assert not key.required, key.path
            assert (key.default is None) == (key.name in ("Timezone", "Project")), key.path


def test_email_defaults(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, email()))
    assert config.email == EmailConfig(
        host="smtp.example.com",
        port=587,
        tls_mode="starttls",
        ca_file=None,
        username=None,
        secret=None,
        from_address="etl@example.com",
        to=("ops@example.com",),
        subject_prefix=None,
    )
    assert config.secret_value(config.email) is None


def test_every_orchestration_key_is_read(tmp_path: Path) -> None:
    text = orchestration(
        "  Project: sales_eu\n"
        "  Timezone: America/New_York\n"
        "  Max_parallel_tasks: 16\n"
        "  Gate_wait_minutes: 0\n"
        "  Retries: 3\n"
        "  Retry_delay_seconds: 0\n"
        "  Retry_backoff: 1.5\n"
        "  Lease_seconds: 5\n"
        "  Heartbeat_seconds: 2\n"
        "  Shutdown_grace_seconds: 0\n"
        "  Api_address: 0.0.0.0:9000\n"
        "  Full_check_day: wednesday\n"
        "  Db_pool_size: 24\n"
    )
    settings = load_config(write_project(tmp_path, text)).orchestration
    assert dataclasses.astuple(settings) == ("sales_eu", "America/New_York", 16, 0, 3, 0, 1.5, 5, 2, 0, "0.0.0.0:9000",
                                             "wednesday", 24)


def test_every_email_key_is_read(tmp_path: Path) -> None:
    text = email(
        "  port: 465\n"
        "  tls_mode: ssl\n"
        "  ca_file: certs/relay-ca.pem\n"
        "  subject_prefix: ' [etl-craft prod] '\n"
        "  to:\n"
        "    - ' ops@example.com '\n"
        "    - data-team@example.com\n",
        base=EMAIL_AUTH.replace("  to: [ops@example.com]\n", ""),
    )
    config = load_config(write_project(tmp_path, text))
    assert config.email == EmailConfig(
        host="smtp.example.com",
        port=465,
        tls_mode="ssl",
        ca_file=tmp_path / "certs" / "relay-ca.pem",
        username="etl",
        secret="ETL_CRAFT_SMTP_PASSWORD",
        from_address="etl@example.com",
        to=("ops@example.com", "data-team@example.com"),
        subject_prefix="[etl-craft prod]",
    )


@pytest.mark.parametrize(
    ("written", "value"),
    [("8", 8), ("'8'", 8), ('" 8 "', 8), ("010", 10), ("'007'", 7), ("2147483647", WHOLE_NUMBER_MAX)],
    ids=["number", "quoted", "padded", "leading-zero-is-decimal", "quoted-leading-zeros", "largest"],
)
def test_whole_numbers_are_plain_digits_read_in_base_ten(tmp_path: Path, written: str, value: int) -> None:
    settings = load_config(write_project(tmp_path, orchestration(f"  Max_parallel_tasks: {written}\n")))
    assert settings.orchestration.max_parallel_tasks == value
    assert type(settings.orchestration.max_parallel_tasks) is int


@pytest.mark.parametrize(
    ("written", "value"), [("2", 2.0), ("1", 1.0), ("1.5", 1.5), ("'3.25'", 3.25), ("2.", None)],
    ids=["whole", "minimum", "decimal", "quoted", "trailing-dot"],
)
def test_numbers_are_digits_with_an_optional_decimal_part(tmp_path: Path, written: str, value: float | None) -> None:
    write_project(tmp_path, orchestration(f"  Retry_backoff: {written}\n"))
    if value is None:
        assert load_error(tmp_path) == (
            f"craft-connector.yml: Orchestration.Retry_backoff is {written}; expected a number of at least 1.0"
        )
    else:
        backoff = load_config(tmp_path).orchestration.retry_backoff
        assert backoff == value and type(backoff) is float


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Asia/Kolkata"])
def test_iana_time_zones_are_accepted(tmp_path: Path, zone: str) -> None:
    settings = load_config(write_project(tmp_path, orchestration(f"  Timezone: {zone}\n"))).orchestration
    assert settings.timezone == zone


def test_heartbeat_just_under_half_the_lease_is_accepted(tmp_path: Path) -> None:
    text = orchestration("  Lease_seconds: 31\n  Heartbeat_seconds: 15\n")
    assert load_config(write_project(tmp_path, text)).orchestration.heartbeat_seconds == 15


def test_a_boolean_key_takes_true_or_false_only() -> None:
    flag = Key("Test", "Enabled", KeyType.BOOLEAN, "a flag", default=False)
    assert _check(flag, True, None) is True
    assert _check(flag, False, None) is False
    for value in ("true", 1, None):
        with pytest.raises(ConfigurationError) as info:
            _check(flag, value, None)
        assert str(info.value) == f"craft-connector.yml: Test.Enabled is {value!r}; expected true or false"


# ------------------------------------------------------------------------------------------- the key table


def test_the_table_describes_every_key_once_with_a_meaning_and_a_consistent_shape() -> None:
    paths = [key.path for key in KEYS]
    assert len(paths) == len(set(paths))
    assert {key.section for key in KEYS} == {s.name for s in SECTIONS}
    for key in KEYS:
        assert key.meaning.strip().endswith("."), key.path
        assert not (key.required and key.default is not None), key.path
        if key.type in (KeyType.INTEGER, KeyType.NUMBER):
            assert key.minimum is not None, key.path
        assert bool(key.choices) == (key.type is KeyType.CHOICE), key.path
        assert bool(key.pattern) == bool(key.pattern_meaning), key.path
    for rule in RULES:
        assert rule.section in {s.name for s in SECTIONS} and rule.meaning.endswith(".")


@pytest.mark.parametrize(("section", "cls"), [("Email", EmailConfig), ("Orchestration", OrchestrationConfig)])
def test_each_section_object_has_one_field_per_key(section: str, cls: type) -> None:
    assert [f.name for f in dataclasses.fields(cls)] == [key.field for key in keys_of(section)]


def test_every_default_passes_its_own_check() -> None:
    for key in KEYS:
        if key.default is not None:
            assert _check(key, key.default, None) == key.default, key.path


def test_every_section_key_and_rule_is_in_the_configuration_reference() -> None:
    page = _generator().configuration_page()
    for section in SECTIONS:
        state = "required" if section.required else "optional"
        assert f"\n## {section.name} ({state})\n" in page
    for key in KEYS:
        rows = [line for line in page.splitlines() if line.startswith(f"| `{key.name}` | {key.type.value} |")]
        assert rows, f"{key.path} is not documented"
        assert any(key.meaning in row for row in rows), key.path
    assert "Planned" not in page and "not supported yet" not in page
    for rule in RULES:
        assert f"- {rule.meaning}\n" in page
    for topic in ("**Secrets**", ".env", "**Paths**", "project directory", "CONFIG_SHA256"):
        assert topic in page


def test_the_example_in_the_configuration_reference_loads(tmp_path: Path) -> None:
    page = _generator().configuration_page()
    example = re.search(r"```yaml\n(.*?)```", page, re.DOTALL)
    assert example
    config = load_config(write_project(tmp_path, example.group(1)))
    assert config.email is None
    bare = load_config(write_project(tmp_path / "bare", BASE)).orchestration
    assert config.orchestration == dataclasses.replace(bare, timezone="Europe/Paris")


# ------------------------------------------------------------------------------------------------ fingerprint


def test_sha256_is_equal_for_explicit_defaults_and_equivalent_spellings(tmp_path: Path) -> None:
    absent = load_config(write_project(tmp_path / "a", BASE + EMAIL)).sha256
    explicit = load_config(
        write_project(
            tmp_path / "b",
            BASE
            + EMAIL.replace("[ops@example.com]", "\n    - ops@example.com")
            + "  port: '587'\n  tls_mode: starttls\n"
            + "Orchestration:\n  Retry_backoff: 2\n  Max_parallel_tasks: '4'\n  Gate_wait_minutes: 060\n",
        )
    ).sha256
    assert absent == explicit


@pytest.mark.parametrize(
    "change",
    [
        "Orchestration:\n  Max_parallel_tasks: 5\n",
        "Orchestration:\n  Retry_backoff: 2.5\n",
        "Orchestration:\n  Timezone: Europe/Paris\n",
        "Orchestration:\n  Timezone: UTC\n",
        EMAIL,
        EMAIL + "  port: 2525\n",
        EMAIL + "  tls_mode: ssl\n",
        EMAIL + "  ca_file: ca.pem\n",
        EMAIL + "  subject_prefix: '[x]'\n",
        EMAIL_AUTH,
        EMAIL_AUTH.replace("ETL_CRAFT_SMTP_PASSWORD", "OTHER_SMTP_PASSWORD"),
        EMAIL.replace("[ops@example.com]", "[ops@example.com, dev@example.com]"),
    ],
    ids=[
        "max-parallel", "backoff", "timezone", "timezone-utc", "email-added", "port", "tls-mode", "ca-file", "prefix",
        "username-and-secret", "secret-name", "recipient",
    ],
)
def test_sha256_covers_the_new_sections(tmp_path: Path, change: str) -> None:
    reference = BASE + (EMAIL if "Orchestration" in change else "")
    changed = BASE + change if "Email" in change else reference + change
    before = load_config(write_project(tmp_path / "a", reference)).sha256
    after = load_config(write_project(tmp_path / "b", changed)).sha256
    assert before != after


def test_sha256_does_not_depend_on_the_email_secret_value_or_the_project_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = email("  ca_file: ca.pem\n", base=EMAIL_AUTH)
    first = load_config(write_project(tmp_path / "a", text, env="ETL_CRAFT_SMTP_PASSWORD=one\n")).sha256
    monkeypatch.setenv("ETL_CRAFT_SMTP_PASSWORD", "two")
    assert load_config(write_project(tmp_path / "elsewhere" / "b", text)).sha256 == first


# ----------------------------------------------------------------------------------------- B48, B55, B56, B58

SECRET_BEARING = {
    "Engine": (
        "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db.example.com/etl\n  secret: SECRET_VAR\n"
        "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n",
        lambda config: config.engine,
    ),
    "Warehouse": (
        "Engine:\n  dialect: sqlite\n  path: engine.db\n"
        "Warehouse:\n  dialect: postgresql\n  url: postgresql://dw@dw.example.com/dw\n  secret: SECRET_VAR\n",
        lambda config: config.warehouse,
    ),
    "Email": (
        BASE + EMAIL + "  username: etl\n  secret: SECRET_VAR\n",
        lambda config: config.email,
    ),
}


@pytest.mark.parametrize(
    "host", ["etl:hunter2@smtp.example.com", "etl@smtp.example.com", "smtp://etl:hunter2@smtp.example.com"]
)
def test_b48_email_host_with_user_information_is_refused_without_showing_it(
    tmp_path: Path, host: str
) -> None:
    write_project(tmp_path, email(base=EMAIL.replace("smtp.example.com", host, 1)))
    message = load_error(tmp_path)
    assert message == (
        "craft-connector.yml: Email.host holds user information (an @; the value is not shown, it may hold a "
        "password); give the host name alone, the user in Email.username and the name of the password's variable "
        "in Email.secret"
    )
    assert "hunter2" not in message


@pytest.mark.parametrize("section", ["Engine", "Warehouse", "Email"])
@pytest.mark.parametrize("value", ["123456", "1.5", "[hunter2]", "{pw: hunter2}"], ids=["int", "float", "list", "map"])
def test_b48_a_secret_that_is_not_text_is_refused_without_showing_it(tmp_path: Path, section: str, value: str) -> None:
    text = SECRET_BEARING[section][0].replace("secret: SECRET_VAR", f"secret: {value}")
    write_project(tmp_path, text)
    message = load_error(tmp_path)
    assert message == (
        f"craft-connector.yml: {section}.secret must be the name of a variable (letters, digits, _), not a "
        "password; put the password in that variable (environment or .env)"
    )
    assert "123456" not in message and "hunter2" not in message


def test_b55_email_ca_file_resolves_against_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = write_project(tmp_path / "proj", email("  ca_file: certs/relay-ca.pem\n"))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    from_elsewhere = load_config(project).email
    monkeypatch.chdir(tmp_path)
    from_parent = load_config(Path("proj")).email
    assert from_elsewhere is not None and from_parent is not None
    assert from_elsewhere.ca_file == from_parent.ca_file == project / "certs" / "relay-ca.pem"
    assert from_elsewhere.ca_file.is_absolute()


def test_b55_email_ca_file_keeps_an_absolute_path_and_a_symlinked_project(tmp_path: Path) -> None:
    absolute = tmp_path / "pki" / "ca.pem"
    real = write_project(tmp_path / "real", email(f"  ca_file: {absolute}\n"))
    assert load_config(real).email.ca_file == absolute  # type: ignore[union-attr]
    write_project(real, email("  ca_file: ca.pem\n"))
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert load_config(link).email.ca_file == link / "ca.pem"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            BASE + EMAIL + "  port: 25\n  port: 2525\n",
            "craft-connector.yml: the key 'port' appears twice in Email (lines 11 and 12); keep one of them",
            id="email-port",
        ),
        pytest.param(
            BASE + "Orchestration:\n  Retries: 1\n  Lease_seconds: 60\n  Retries: 2\n",
            "craft-connector.yml: the key 'Retries' appears twice in Orchestration (lines 8 and 10); keep one of them",
            id="orchestration-retries",
        ),
        pytest.param(
            BASE + "Orchestration: {}\n" + EMAIL + "Orchestration:\n  Retries: 2\n",
            "craft-connector.yml: the key 'Orchestration' appears twice at the top level (lines 7 and 12); "
            "keep one of them",
            id="orchestration-twice",
        ),
        pytest.param(
            BASE + "Email:\n  host: a\n  from_address: etl@example.com\n  to: [a@example.com]\n"
            + "  to: [b@example.com]\n",
            "craft-connector.yml: the key 'to' appears twice in Email (lines 10 and 11); keep one of them",
            id="email-recipients",
        ),
    ],
)
def test_b56_duplicate_key_in_email_or_orchestration_is_refused_with_both_lines(
    tmp_path: Path, text: str, message: str
) -> None:
    write_project(tmp_path, text)
    assert load_error(tmp_path) == message


@pytest.mark.parametrize("blank", ["", " ", "\t"], ids=["empty", "space", "tab"])
def test_b58_blank_email_secret_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    config = load_config(write_project(tmp_path, email(base=EMAIL_AUTH)))
    assert config.email is not None
    monkeypatch.setenv("ETL_CRAFT_SMTP_PASSWORD", blank)
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.email)
    assert str(info.value) == "variable ETL_CRAFT_SMTP_PASSWORD in the environment is empty; set it to the secret"


@pytest.mark.parametrize("line", ["ETL_CRAFT_SMTP_PASSWORD=", "ETL_CRAFT_SMTP_PASSWORD='  '"], ids=["empty", "quoted"])
def test_b58_blank_email_secret_in_env_file_is_refused(tmp_path: Path, line: str) -> None:
    config = load_config(write_project(tmp_path, email(base=EMAIL_AUTH), env=line + "\n"))
    assert config.email is not None
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.email)
    assert str(info.value) == (
        f"variable ETL_CRAFT_SMTP_PASSWORD in {tmp_path / '.env'} is empty; set it to the secret"
    )


def test_the_email_secret_is_read_on_demand_environment_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(write_project(tmp_path, email(base=EMAIL_AUTH), env="ETL_CRAFT_SMTP_PASSWORD=dot\n"))
    assert config.email is not None and config.email.secret == "ETL_CRAFT_SMTP_PASSWORD"
    assert config.secret_value(config.email) == "dot"
    monkeypatch.setenv("ETL_CRAFT_SMTP_PASSWORD", "env")
    assert config.secret_value(config.email) == "env"


def test_a_missing_email_secret_variable_is_refused_naming_it(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, email(base=EMAIL_AUTH)))
    assert config.email is not None
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(config.email)
    assert str(info.value) == (
        f"variable ETL_CRAFT_SMTP_PASSWORD is not set in the environment or in {tmp_path / '.env'}; "
        "set it to the secret"
    )


# ------------------------------------------------------------------------------------- secrets never leak

OTHER_ERRORS = [
    ("Orchestration:\n  Max_parallel_tasks: 0\n", "Orchestration.Max_parallel_tasks is 0"),
    ("Orchestration:\n  Timezone: Mars/Olympus\n", "Orchestration.Timezone is 'Mars/Olympus'"),
    ("Orchestration:\n  Retries: 1\n  Retries: 2\n", "appears twice"),
    ("Unknown: {}\n", "unknown section 'Unknown'"),
]


@pytest.mark.parametrize("section", sorted(SECRET_BEARING))
@pytest.mark.parametrize("where", ["environment", "env-file"])
def test_a_secret_value_appears_in_no_repr_message_or_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, section: str, where: str
) -> None:
    text, holder_of = SECRET_BEARING[section]
    env = f"SECRET_VAR={SENTINEL}\nSECRET_VAX={SENTINEL}-near\n"
    if where == "environment":
        monkeypatch.setenv("SECRET_VAR", SENTINEL)
        env = f"SECRET_VAX={SENTINEL}-near\n"
    caplog.set_level(logging.DEBUG)
    project = write_project(tmp_path / "p", text, env=env)
    config = load_config(project)
    holder = holder_of(config)
    assert config.secret_value(holder) == SENTINEL
    shown = [repr(config), str(config), repr(holder), repr(config.orchestration), repr(config.email)]
    messages = []
    for extra, expected in OTHER_ERRORS:
        write_project(tmp_path / "broken", text + extra, env=env)
        messages.append(load_error(tmp_path / "broken"))
        assert expected in messages[-1]
    missing = dataclasses.replace(holder, secret="SECRET_VA")  # a near miss of both variables' names
    with pytest.raises(ConfigurationError) as info:
        config.secret_value(missing)
    messages.append(str(info.value))
    assert "did you mean" in messages[-1]
    assert "SECRET_VAR" in repr(config)
    for text_seen in [*shown, *messages, caplog.text, *(r.getMessage() for r in caplog.records)]:
        assert SENTINEL not in text_seen
    assert any("CONFIG_SHA256" in r.getMessage() for r in caplog.records)


def test_project_config_keeps_the_env_file_out_of_its_repr(tmp_path: Path) -> None:
    config = load_config(write_project(tmp_path, email(base=EMAIL_AUTH), env=f"ETL_CRAFT_SMTP_PASSWORD={SENTINEL}\n"))
    assert isinstance(config, ProjectConfig)
    assert SENTINEL not in repr(config)
    assert config.env == {"ETL_CRAFT_SMTP_PASSWORD": SENTINEL}
    assert all(f.name != "env" or not f.repr for f in dataclasses.fields(config))


def _documented_settings() -> list[tuple[str, str]]:
    """Every ```yaml block of docs/ and README.md that sets a craft-connector.yml section, and the scaffold's file."""
    found = [("etlcraft/scaffold/common/craft-connector.yml",
              (ROOT / "etlcraft" / "scaffold" / "common" / CONFIG_FILE).read_text(encoding="utf-8"))]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"^```yaml\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M):
            if re.search(rf"^({'|'.join(s.name for s in SECTIONS)}):", block, flags=re.M):
                found.append((str(path.relative_to(ROOT)), block))
    return found


def test_no_settings_example_in_the_docs_or_the_scaffold_sets_what_is_refused(tmp_path: Path) -> None:
    """A documented or scaffolded craft-connector.yml (a block that shows some sections is completed with the
    scaffold's) loads."""
    examples = _documented_settings()
    scaffold = examples[0][1]
    assert len(examples) >= 3, examples
    for number, (where, block) in enumerate(examples):
        text = block
        for section in SECTIONS:
            if section.required and not re.search(rf"^{section.name}:", block, flags=re.M):
                lines = re.search(rf"^{section.name}:\n(?:  .*\n)+", scaffold, flags=re.M)
                assert lines, section.name
                text += lines.group(0)
        try:
            load_config(write_project(tmp_path / str(number), text))
        except ConfigurationError as exc:
            pytest.fail(f"{where}: {exc}")
