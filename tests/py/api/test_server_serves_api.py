"""`etl-craft server` serves the HTTP API at Orchestration: Api_address while it leads, and drives what the API
queues: a triggered run and a rerun end SUCCESS without any other command; SIGTERM stops the API with the server."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from tests.py.api.conftest import _free_port
from tests.py.support.cli import etl_craft, start_etl_craft
from tests.py.support.project import Task, wait_for, write_project

pytestmark = pytest.mark.process


def test_server__serves_the_api__and_runs_what_it_queues(tmp_path: Path) -> None:
    project = write_project(tmp_path / "p", None, {"flow": [Task("load"), Task("report")]},
                            [("report", "load", "SUCCESS")])
    address = f"127.0.0.1:{_free_port()}"
    with (project / "craft-connector.yml").open("a") as config:
        config.write(f"  Api_address: {address}\n")
    assert etl_craft("migrate", cwd=project).code == 0
    made = etl_craft("token", "create", "--name", "ci", "--role", "operator", "--format", "json", cwd=project)
    headers = {"Authorization": f"Bearer {json.loads(made.out)['token']}"}
    api = f"http://{address}/api/v1"
    server = start_etl_craft("server", cwd=project, log=tmp_path / "server.log")
    try:
        def answers() -> bool:
            try:
                return httpx.get(f"{api}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False
        wait_for(answers, what="the server's API")
        run_id = httpx.post(f"{api}/pipelines/flow/runs", headers=headers, json={"reason": "from ci"}).json()[
            "pipeline_run_id"]

        def status() -> str:
            return str(httpx.get(f"{api}/runs/{run_id}", headers=headers).json()["run"]["status"])
        wait_for(lambda: status() == "SUCCESS", what="the triggered run to end")
        marked = httpx.post(f"{api}/runs/{run_id}/tasks/report/mark", headers=headers,
                            json={"status": "FAILED", "reason": "bad rows"})
        assert marked.status_code == 200, marked.text
        rerun = httpx.post(f"{api}/runs/{run_id}/tasks/report/rerun", headers=headers, json={})
        assert rerun.status_code == 200, rerun.text
        wait_for(lambda: status() == "SUCCESS", what="the rerun to end")
        actions = [(e["actor"], e["what"]) for e in json.loads(etl_craft("audit", "--format", "json",
                                                                          cwd=project).out)["entries"]
                   if e["kind"] == "action"]
        assert ("ci", "run --rerun --init-only") in actions and ("ci", "run --init-only") in actions
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(60)
    assert code == 0, (tmp_path / "server.log").read_text()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{api}/health", timeout=2)
