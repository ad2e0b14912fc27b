"""The time limits of the Engine and Warehouse sections: connect_timeout_seconds and statement_timeout_seconds for a
PostgreSQL server, busy_timeout_seconds for a SQLite or DuckDB file. Defaults are filled in for the keys that apply to
the dialect; a key that does not apply is refused; a timeout set both in the URL's query and by its key is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from etlcraft.config.loader import CONFIG_FILE, load_config
from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.timeouts import engine_timeouts
from etlcraft.warehouse.connection import timeout

SQLITE = "Engine:\n  dialect: sqlite\n  path: engine.db\n"
DUCKDB = "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"
PG_ENGINE = "Engine:\n  dialect: postgresql\n  url: postgresql://etl@db.example.com/etl\n"
PG_WAREHOUSE = "Warehouse:\n  dialect: postgresql\n  url: postgresql://analyst@dw.example.com/dw\n"


@pytest.fixture(autouse=True)
def _hermetic_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name != "PYTEST_CURRENT_TEST":
            monkeypatch.delenv(name)


def project(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / CONFIG_FILE).write_text(text, encoding="utf-8")
    return tmp_path


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigurationError) as info:
        load_config(project(tmp_path, text))
    assert info.value.exit_code == 3
    return str(info.value)


def test_defaults__servers_get_connect_and_statement_timeouts__files_a_busy_timeout(tmp_path: Path) -> None:
    servers = load_config(project(tmp_path / "a", PG_ENGINE + PG_WAREHOUSE))
    for connection in (servers.engine, servers.warehouse):
        assert (connection.connect_timeout_seconds, connection.statement_timeout_seconds) == (10, 300)
        assert connection.busy_timeout_seconds is None
    files = load_config(project(tmp_path / "b", SQLITE + DUCKDB))
    assert (files.engine.busy_timeout_seconds, files.warehouse.busy_timeout_seconds) == (30, 120)
    assert files.engine.connect_timeout_seconds is None and files.warehouse.statement_timeout_seconds is None


def test_values_are_read_into_the_connections_and_the_engine_timeouts(tmp_path: Path) -> None:
    text = (PG_ENGINE + "  connect_timeout_seconds: 3\n  statement_timeout_seconds: 45\n"
            + PG_WAREHOUSE + "  connect_timeout_seconds: '7'\n  statement_timeout_seconds: 900\n")
    config = load_config(project(tmp_path, text))
    assert (config.engine.connect_timeout_seconds, config.engine.statement_timeout_seconds) == (3, 45)
    assert (timeout(config.warehouse, "connect"), timeout(config.warehouse, "statement")) == (7, 900)
    limits = engine_timeouts(config.engine)
    assert (limits.connect, limits.statement, limits.configured) == (3, 45, True)


def test_sqlite_busy_timeout_is_read(tmp_path: Path) -> None:
    config = load_config(project(tmp_path, SQLITE + "  busy_timeout_seconds: 5\n" + DUCKDB))
    assert engine_timeouts(config.engine).busy == 5


@pytest.mark.parametrize(("text", "message"), [
    pytest.param(SQLITE + "  connect_timeout_seconds: 5\n" + DUCKDB,
                 "craft-connector.yml: Engine.connect_timeout_seconds does not apply to sqlite; remove it",
                 id="connect-timeout-on-sqlite"),
    pytest.param(SQLITE + DUCKDB + "  statement_timeout_seconds: 5\n",
                 "craft-connector.yml: Warehouse.statement_timeout_seconds does not apply to duckdb; remove it",
                 id="statement-timeout-on-duckdb"),
    pytest.param(PG_ENGINE + "  busy_timeout_seconds: 5\n" + DUCKDB,
                 "craft-connector.yml: Engine.busy_timeout_seconds does not apply to postgresql; remove it",
                 id="busy-timeout-on-postgresql"),
    pytest.param(PG_ENGINE + "  connect_timeout_seconds: 1\n" + DUCKDB,
                 "craft-connector.yml: Engine.connect_timeout_seconds is 1; expected a whole number from 2 to 3600",
                 id="connect-timeout-under-two"),
    pytest.param(PG_ENGINE + "  connect_timeout_seconds: 0\n" + DUCKDB,
                 "craft-connector.yml: Engine.connect_timeout_seconds is 0; expected a whole number from 2 to 3600",
                 id="connect-timeout-zero-is-not-forever"),
    pytest.param(SQLITE + PG_WAREHOUSE + "  statement_timeout_seconds: 86401\n",
                 "craft-connector.yml: Warehouse.statement_timeout_seconds is 86401; expected a whole number from 1 "
                 "to 86400", id="statement-timeout-over-a-day"),
    pytest.param(SQLITE + PG_WAREHOUSE + "  statement_timeout_seconds: 2.5\n",
                 "craft-connector.yml: Warehouse.statement_timeout_seconds is 2.5; expected a whole number from 1 "
                 "to 86400", id="statement-timeout-fraction"),
    pytest.param(SQLITE + "  busy_timeout_seconds: soon\n" + DUCKDB,
                 "craft-connector.yml: Engine.busy_timeout_seconds is 'soon'; expected a whole number from 1 to 86400",
                 id="busy-timeout-text"),
    pytest.param("Engine:\n  dialect: postgresql\n  url: postgresql://etl@db/etl?connect_timeout=5\n"
                 "  connect_timeout_seconds: 10\n" + DUCKDB,
                 "craft-connector.yml: Engine.url sets connect_timeout in its query and "
                 "Engine.connect_timeout_seconds sets it too; keep Engine.connect_timeout_seconds (whole seconds) and "
                 "remove connect_timeout from the URL", id="connect-timeout-twice"),
    pytest.param(SQLITE + "Warehouse:\n  dialect: postgresql\n"
                 "  url: postgresql://a@dw/dw?options=-c%20statement_timeout%3D5000\n  statement_timeout_seconds: 9\n",
                 "craft-connector.yml: Warehouse.url sets statement_timeout in its query and "
                 "Warehouse.statement_timeout_seconds sets it too; keep Warehouse.statement_timeout_seconds (whole "
                 "seconds) and remove statement_timeout from the URL", id="statement-timeout-twice"),
])
def test_a_timeout_that_does_not_fit_is_refused_with_its_message(tmp_path: Path, text: str, message: str) -> None:
    assert refused(tmp_path, text) == message


def test_a_timeout_in_the_url_alone_holds_and_messages_use_it(tmp_path: Path) -> None:
    text = (SQLITE + "Warehouse:\n  dialect: postgresql\n"
            "  url: postgresql://a@dw/dw?connect_timeout=4&options=-c%20statement_timeout%3D7s\n")
    warehouse = load_config(project(tmp_path, text)).warehouse
    assert (timeout(warehouse, "connect"), timeout(warehouse, "statement")) == (4, 7)


def test_the_fingerprint_is_the_same_with_the_defaults_written_or_left_out(tmp_path: Path) -> None:
    absent = load_config(project(tmp_path / "a", PG_ENGINE + DUCKDB)).sha256
    written = load_config(project(tmp_path / "b", PG_ENGINE + "  connect_timeout_seconds: 10\n"
                                  "  statement_timeout_seconds: 300\n" + DUCKDB + "  busy_timeout_seconds: 120\n"))
    changed = load_config(project(tmp_path / "c", PG_ENGINE + "  connect_timeout_seconds: 11\n" + DUCKDB))
    assert absent == written.sha256 != changed.sha256
