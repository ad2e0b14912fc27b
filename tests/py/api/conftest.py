"""A live HTTP API for the tests: a project with one pipeline that has run once (and a secret planted in a task
parameter), tokens of every role and state made by the real CLI, and uvicorn serving the API in a thread of the
test process on a free loopback port, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from etlcraft.api.serve import api_in_thread
from etlcraft.config.loader import load_config
from etlcraft.engine.db import EngineDB
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

SECRET = "planted-s3cret-value"
SECRET_PARAMETER = f"""\
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
  SELECT TASK_ID, 'Api_Token', '{SECRET}' FROM CFG_TASKS WHERE TASK_CODE = 'load';
"""


@dataclass
class Live:
    project: Path
    db: EngineDB
    base: str
    tokens: dict[str, str]  # viewer, operator, admin, expired, revoked -> token

    def cli(self, *args: str) -> dict[str, Any]:
        """The document `etl-craft ARGS --format json` prints."""
        done = etl_craft(*args, "--format", "json", cwd=self.project)
        assert done.code == 0, (args, done.code, done.err)
        doc = json.loads(done.out)
        assert isinstance(doc, dict)
        return doc

    def call(self, method: str, path: str, token: str | None = "operator", **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens.get(token, token)}"} if token else {}
        return httpx.request(method, f"{self.base}{path}", headers=headers, timeout=60, **kwargs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    project = write_project(tmp_path / "p", url, {"flow": [Task("load"), Task("report")]},
                            [("report", "load", "SUCCESS")])
    (project / "migrations" / "0002_secret.sql").write_text(SECRET_PARAMETER)
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "flow", "--run-key", "first", cwd=project).code == 0
    tokens = {}
    for name, role, more in (("viewer", "viewer", ()), ("operator", "operator", ()), ("admin", "admin", ()),
                             ("expired", "admin", ("--expires", "1m")), ("revoked", "admin", ())):
        done = etl_craft("token", "create", "--name", name, "--role", role, *more, "--format", "json", cwd=project)
        assert done.code == 0, done.err
        tokens[name] = json.loads(done.out)["token"]
    assert etl_craft("token", "revoke", "--name", "revoked", cwd=project).code == 0
    config = load_config(project)
    db = EngineDB(config.engine.url, schema=config.engine.schema or "etl_craft")
    address = f"127.0.0.1:{_free_port()}"
    problems: list[str] = []
    with api_in_thread(db, config, address, problems.append) as server:
        assert server is not None, problems
        yield Live(project, db, f"http://{address}", tokens)
    db.dispose()
