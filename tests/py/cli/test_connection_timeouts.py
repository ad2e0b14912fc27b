"""No command hangs on a server that does not answer, through the real command line: an Engine DB or warehouse that
accepts TCP and never speaks fails within connect_timeout_seconds naming the server, the key and the remedy; an Engine
DB statement that outlives statement_timeout_seconds is cancelled with a message naming the key, while migrate waits
for another migrate as long as it takes; a SQLite Engine DB held by another process fails after busy_timeout_seconds;
a warehouse that refuses the password names the Warehouse section and its secret variable, never the password.

The subprocess timeout is the guard against a hang: each command must end well within it."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from etlcraft.core.errors import error_specs
from etlcraft.engine.render import MIGRATE_LOCK_KEY
from tests.py.support.cli import Result, etl_craft
from tests.py.support.silent_server import password_refusing_server, silent_server

pytestmark = pytest.mark.process

#: Far more than any command here needs, far less than the 130 s psycopg waits for a server by default.
GUARD = 60
ENGINE_DB, WAREHOUSE = error_specs()["ENGINE_DB"].exit, error_specs()["WAREHOUSE"].exit
SENTINEL = "Sentinel-dw-pass-7c1e-never-shown"
OFFLINE = "or pass --offline to skip these checks"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("timeouts")
    assert etl_craft("init", "demo", cwd=root).code == 0
    return root / "demo"


@pytest.fixture
def project(demo: Path, tmp_path: Path) -> Path:
    """A fresh copy of the example project, its Engine DB and warehouse not created yet."""
    copy = tmp_path / "demo"
    copy.mkdir()
    for path in demo.rglob("*"):
        target = copy / path.relative_to(demo)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            target.write_bytes(path.read_bytes())
    return copy


def set_section(project: Path, section: str, body: str) -> None:
    """Replace the section of craft-connector.yml with `body` (its indented lines)."""
    path = project / "craft-connector.yml"
    text = path.read_text(encoding="utf-8")
    text = re.sub(rf"(?m)^{section}:\n(?:[ \t]+\S.*\n?)*", f"{section}:\n{body}", text)
    path.write_text(text, encoding="utf-8")


def cli(project: Path, *args: str) -> Result:
    done = etl_craft(*args, cwd=project, timeout=GUARD)
    assert "Traceback" not in done.out + done.err, done.err
    return done


# -- Engine DB ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("list",), ("migrate",), ("status", "--pipeline-code", "shop_ingest")],
                         ids=["list", "migrate", "status"])
def test_engine_db_silent_server__command_fails_within_the_connect_timeout_naming_server_and_key(
        project: Path, args: tuple[str, ...]) -> None:
    with silent_server() as server:
        set_section(project, "Engine", f"  dialect: postgresql\n  url: postgresql://etl@127.0.0.1:{server.port}/etl\n"
                                       "  connect_timeout_seconds: 2\n")
        done = cli(project, *args)
    assert done.code == ENGINE_DB, done.err
    assert done.err.strip() == (
        f"error: cannot reach the Engine DB at postgresql://etl@127.0.0.1:{server.port}/etl: no answer within 2 s "
        "(Engine.connect_timeout_seconds in craft-connector.yml); check that PostgreSQL runs at "
        f"127.0.0.1:{server.port} and that no firewall drops the packets, then try again, or raise "
        "Engine.connect_timeout_seconds in craft-connector.yml")


def test_engine_db_silent_server__engine_url_option__fails_within_the_default_connect_timeout(project: Path) -> None:
    with silent_server() as server:
        done = cli(project, "--engine-url", f"postgresql://etl@127.0.0.1:{server.port}/etl", "list")
    assert done.code == ENGINE_DB, done.err
    assert "no answer within 10 s (connect_timeout in the query of --engine-url); " in done.err


def test_engine_copy_to_a_silent_server__fails_within_the_url_connect_timeout_naming_to(project: Path) -> None:
    assert cli(project, "migrate").code == 0
    with silent_server() as server:
        url = f"postgresql://etl@127.0.0.1:{server.port}/etl?connect_timeout=2"
        done = cli(project, "engine", "copy", "--to", url)
    assert done.code == ENGINE_DB, done.err
    assert done.err.strip() == (
        f"error: cannot reach the Engine DB at {url}: no answer within 2 s (connect_timeout in the query of --to); "
        f"check that PostgreSQL runs at 127.0.0.1:{server.port} and that no firewall drops the packets, then try "
        "again, or raise connect_timeout in the query of --to")


@pytest.fixture
def pg_project(project: Path, pg_url: str) -> Iterator[tuple[Path, str]]:
    """The example project on the PostgreSQL Engine DB `pg_url`, its metadata applied, with a statement timeout of
    1 s; and the plain URL of that database."""
    url = make_url(pg_url).render_as_string(hide_password=False)
    set_section(project, "Engine", f"  dialect: postgresql\n  url: {url}\n  statement_timeout_seconds: 1\n")
    done = cli(project, "migrate")
    assert done.code == 0, done.err
    yield project, url


@pytest.mark.postgres
def test_engine_db_statement__waiting_past_the_statement_timeout__is_cancelled_naming_the_key(
        pg_project: tuple[Path, str]) -> None:
    project, url = pg_project
    with psycopg.connect(url) as dba:
        dba.execute("LOCK TABLE etl_craft.cfg_pipelines IN ACCESS EXCLUSIVE MODE")  # held until the rollback
        done = cli(project, "list")
        dba.rollback()
    assert done.code == ENGINE_DB, done.err
    assert done.err.startswith(f"error: the Engine DB at {url} cancelled a statement (")
    assert done.err.strip().endswith(
        "that ran longer than its limit of 1 s (Engine.statement_timeout_seconds in craft-connector.yml); a lock held "
        "by another session (see pg_stat_activity) or an overloaded server makes a statement wait that long: find the "
        "cause, or raise the limit")
    assert cli(project, "list").code == 0, "without the lock, the same command works"


@pytest.mark.postgres
def test_migrate__waits_for_another_migrate_longer_than_the_statement_timeout(pg_project: tuple[Path, str]) -> None:
    project, url = pg_project
    other = psycopg.connect(url)
    other.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK_KEY,))  # another migrate, for 3 s
    release = threading.Timer(3, other.rollback)
    release.start()
    try:
        done = cli(project, "migrate")
    finally:
        release.join()
        other.close()
    assert done.code == 0, done.err


def test_sqlite_engine_db_held_by_another_process__a_write_fails_after_the_busy_timeout(project: Path) -> None:
    set_section(project, "Engine", "  dialect: sqlite\n  path: .etl-craft/engine.db\n  busy_timeout_seconds: 1\n")
    assert cli(project, "migrate").code == 0
    holder = sqlite3.connect(project / ".etl-craft" / "engine.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = cli(project, "pause", "--pipeline-code", "shop_ingest", "--reason", "maintenance")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert done.code == ENGINE_DB, done.err
    assert done.err.strip() == (
        f"error: the Engine DB file {project / '.etl-craft' / 'engine.db'} stayed locked by another process for 1 s "
        "(Engine.busy_timeout_seconds in craft-connector.yml); a SQLite Engine DB has one writer at a time: wait for "
        "the other etl-craft command to end (or end it) and try again, raise the limit, or use PostgreSQL for an "
        "Engine DB that several processes share")


# -- warehouse ----------------------------------------------------------------------------------------------------


def warehouse_on(project: Path, port: int, extra: str = "") -> None:
    set_section(project, "Warehouse", f"  dialect: postgresql\n  url: postgresql://analyst@127.0.0.1:{port}/dw\n"
                                      f"  secret: DW_PASSWORD\n{extra}")
    (project / ".env").write_text(f"DW_PASSWORD={SENTINEL}\n", encoding="utf-8")
    assert cli(project, "migrate").code == 0


def warning_of(done: Result) -> str:
    warnings = [line for line in done.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, done.err
    return warnings[0]


def test_warehouse_silent_server__validate_warns_within_the_connect_timeout_and_rehash_fails(project: Path) -> None:
    with silent_server() as server:
        warehouse_on(project, server.port, "  connect_timeout_seconds: 2\n")
        validated = cli(project, "validate")
        rehashed = cli(project, "rehash", "--target", "main.orders")
    offline = cli(project, "validate", "--offline")
    reason = (f"cannot reach the warehouse at postgresql://analyst@127.0.0.1:{server.port}/dw: no answer within 2 s "
              f"(Warehouse.connect_timeout_seconds); check that PostgreSQL runs at 127.0.0.1:{server.port} and that "
              "no firewall drops the packets, then try again, or raise Warehouse.connect_timeout_seconds")
    assert warning_of(validated) == f"warning: the warehouse checks were skipped: {reason}; {OFFLINE}"
    assert validated.code == offline.code, "an unreachable warehouse leaves validate's exit code alone"
    assert (rehashed.code, rehashed.err.strip()) == (WAREHOUSE, f"error: {reason}")


def test_warehouse_silent_server__run_fails_the_task_within_the_connect_timeout_and_explain_says_why(
        project: Path) -> None:
    with silent_server() as server:
        warehouse_on(project, server.port, "  connect_timeout_seconds: 2\n")
        ran = cli(project, "run", "--pipeline-code", "shop_ingest", "--run-key", "silent")
    assert ran.code == error_specs()["RUN_FAILED"].exit, ran.out + ran.err
    explained = cli(project, "explain", "--pipeline-code", "shop_ingest", "--run-key", "silent", "--task-code",
                    "ingest_customers")
    assert (f"error: WarehouseError: cannot reach the warehouse at postgresql://analyst@127.0.0.1:{server.port}/dw: "
            "no answer within 2 s (Warehouse.connect_timeout_seconds)") in explained.out


def test_duckdb_warehouse_held_open_by_another_process__validate_warns_saying_so(project: Path) -> None:
    assert cli(project, "migrate").code == 0
    path = project / "warehouse.duckdb"
    code = f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('held', flush=True); time.sleep(60)"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            validated = cli(project, "validate")
        finally:
            holder.kill()
    warning = warning_of(validated)
    assert warning.startswith(f"warning: the warehouse checks were skipped: cannot open the warehouse {path}: "
                              "another process has the file open (")
    assert warning.endswith("); a DuckDB file is open in one process at a time: wait for that process to end, then "
                            f"try again; {OFFLINE}")


def test_warehouse_password_refused__names_the_warehouse_section_and_secret_variable_not_the_password(
        project: Path) -> None:
    with password_refusing_server() as server:
        warehouse_on(project, server.port)
        validated = cli(project, "validate")
        rehashed = cli(project, "rehash", "--target", "main.orders")
    assert server.passwords and set(server.passwords) == {SENTINEL}, "the password of DW_PASSWORD was sent"
    reason = (f"the warehouse at postgresql://analyst@127.0.0.1:{server.port}/dw refused the login of user analyst: "
              'password authentication failed for user "analyst"; check that the variable DW_PASSWORD '
              "(Warehouse.secret, read from the environment or the project's .env) holds the password of user analyst")
    assert warning_of(validated) == f"warning: the warehouse checks were skipped: {reason}; {OFFLINE}"
    assert (rehashed.code, rehashed.err.strip()) == (WAREHOUSE, f"error: {reason}")
    for done in (validated, rehashed):
        assert SENTINEL not in done.out + done.err
