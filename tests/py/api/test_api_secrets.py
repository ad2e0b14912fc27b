"""Nothing secret leaves the API: a password planted in a task parameter and in the Engine DB connection (a role
with a password, read by `etl-craft server` from the variable Engine.secret names), with a task that fails with the
full connection URL in its error, appears in no response of any GET endpoint, in /metrics or in the server's log."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from tests.py.api.conftest import _free_port
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, wait_for, write_project

pytestmark = [pytest.mark.process, pytest.mark.postgres]

LEAKY = """\
import os

from etlcraft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    url = f"postgresql://{os.environ['LEAK_USER']}:{os.environ['LEAK_PASSWORD']}@127.0.0.1:5432/db"
    print(f"connecting to {url} with {task.parameters}")
    raise RuntimeError(f"could not connect to {url}: connection refused")
"""


def test_secrets__in_a_parameter_and_the_engine_url__in_no_response_metric_or_log(pg_url: str,
                                                                                    tmp_path: Path) -> None:
    role, password, planted = f"etl_{uuid.uuid4().hex[:8]}", f"pw-{uuid.uuid4().hex}", f"prm-{uuid.uuid4().hex}"
    url = make_url(pg_url)
    with psycopg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False),
                         autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'")
    try:
        _check(url.set(username=role).render_as_string(hide_password=False), role, password, planted, tmp_path)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"REASSIGN OWNED BY {role} TO CURRENT_USER")
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def _check(engine_url: str, role: str, password: str, planted: str, tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", engine_url, {"flow": [Task("load", script="leaky.py")]}, [],
                            scripts={"leaky.py": LEAKY})
    (project / "migrations" / "0002_secret.sql").write_text(
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'Db_Password', "
        f"'{planted}' FROM CFG_TASKS WHERE TASK_CODE = 'load';\n")
    address = f"127.0.0.1:{_free_port()}"
    with (project / "craft-connector.yml").open("a") as config:
        config.write(f"  Api_address: {address}\n")
    text = (project / "craft-connector.yml").read_text().replace("  url:", "  secret: LEAK_PASSWORD\n  url:", 1)
    (project / "craft-connector.yml").write_text(text)
    env = {"LEAK_PASSWORD": password, "LEAK_USER": role}
    assert etl_craft("migrate", cwd=project, env=env).code == 0
    made = etl_craft("token", "create", "--name", "ci", "--role", "admin", "--format", "json", cwd=project, env=env)
    headers = {"Authorization": f"Bearer {json.loads(made.out)['token']}"}
    server = start_etl_craft("server", cwd=project, log=tmp_path / "server.log", env=env)
    api = f"http://{address}/api/v1"
    answers: dict[str, str] = {}
    try:
        wait_for(lambda: _answers(f"{api}/health"), what="the server's API")
        run_id = httpx.post(f"{api}/pipelines/flow/runs", headers=headers, json={"reason": "leak"}).json()[
            "pipeline_run_id"]
        wait_for(lambda: httpx.get(f"{api}/runs/{run_id}", headers=headers).json()["run"]["status"] == "FAILED",
                 what="the run to fail")
        attempt = httpx.get(f"{api}/attempts/1", headers=headers).json()
        assert "could not connect to postgresql://" in attempt["attempt"]["error_message"], attempt  # it did fail so
        for path in ("/health", "/pipelines", "/pipelines/flow", "/pipelines/flow/runs", f"/runs/{run_id}",
                     f"/runs/{run_id}/tasks", f"/runs/{run_id}/tasks/load/explain", "/attempts/1",
                     "/attempts/1/log", "/audit", "/tokens", "/pipelines/nothing", "/runs/999"):
            answers[path] = httpx.get(f"{api}{path}", headers=headers).text
        answers["/metrics"] = httpx.get(f"http://{address}/metrics", headers=headers).text
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    answers["server log"] = (tmp_path / "server.log").read_text()
    for where, said in answers.items():
        assert password not in said and planted not in said, (where, said)
    assert "***" in answers["/attempts/1/log"] and "***" in answers["/attempts/1"]


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False
