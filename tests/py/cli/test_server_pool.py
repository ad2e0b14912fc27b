"""Orchestration.Db_pool_size sizes etl-craft server's Engine DB pool: a fixed pool of that many connections, none
opened beyond it (the default 10 when the file does not set it), and doctor's connection budget counts the same
figure for the server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import etlcraft.cli.server as server_command
from etlcraft.cli import cli
from etlcraft.engine.db import EngineDB
from tests.py.support.cli import etl_craft

WAREHOUSE = "Warehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"


def _project(root: Path, engine_url: str, orchestration: str) -> Path:
    root.mkdir(parents=True)
    for folder in ("sql_files", "ingestion_scripts", "migrations"):
        (root / folder).mkdir()
    (root / "craft-connector.yml").write_text(
        f"Engine:\n  dialect: postgresql\n  url: {engine_url}\n{WAREHOUSE}{orchestration}", encoding="utf-8")
    return root


def _server_db(monkeypatch: pytest.MonkeyPatch, root: Path) -> EngineDB:
    """The Engine DB `etl-craft server` opens for the project at `root`, caught where it would start serving."""
    opened: list[EngineDB] = []

    def serve(db: EngineDB, *_args: Any, **_kwargs: Any) -> int:
        opened.append(db)
        return 0

    monkeypatch.setattr(server_command, "serve", serve)
    result = CliRunner().invoke(cli, ["--project", str(root), "server"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [db] = opened
    return db


@pytest.mark.parametrize(("orchestration", "size"), [
    pytest.param("Orchestration:\n  Db_pool_size: 24\n", 24, id="set"),
    pytest.param("", 10, id="the-default"),
])
def test_server__opens_a_fixed_pool_of_db_pool_size_connections(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, orchestration: str, size: int) -> None:
    # No connection is opened: the pool is only sized (the URL names no database that exists).
    root = _project(tmp_path / "p", "postgresql://etl_craft@127.0.0.1:5432/never_opened", orchestration)
    db = _server_db(monkeypatch, root)
    try:
        pool: Any = db.engine.pool
        assert (pool.size(), pool._max_overflow) == (size, 0)  # no overflow: never more than Db_pool_size
    finally:
        db.dispose()


@pytest.mark.postgres
@pytest.mark.process
def test_doctor__counts_db_pool_size_as_the_server_pool(tmp_path: Path, empty_pg_url: str) -> None:
    root = _project(tmp_path / "p", empty_pg_url, "Orchestration:\n  Db_pool_size: 20\n")
    assert etl_craft("migrate", cwd=root).code == 0
    done = etl_craft("doctor", "--format", "json", cwd=root)
    [budget] = [c for c in json.loads(done.out)["checks"] if c["name"] == "connection budget"]
    assert budget["detail"].startswith("20 of max_connections ")
    assert "server pool 20 + 0 active worker(s) 0" in budget["detail"]
