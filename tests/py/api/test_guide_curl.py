"""Every `curl` line of docs/guides/http-api.md's ```sh blocks runs, in the page's order, with the real curl against a
live API whose project has pipeline `orders` with task `load` run once (run 1, attempt 1), with $API and
$ETL_CRAFT_TOKEN set as the page's Authentication section sets them. Each answers 2xx, or the status a trailing
`# NNN ...` comment on its line says."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from etlcraft.api.serve import api_in_thread
from etlcraft.config.loader import load_config
from etlcraft.engine.db import EngineDB
from tests.py.api.conftest import _free_port
from tests.py.support.cli import etl_craft
from tests.py.support.project import Task, write_project

pytestmark = pytest.mark.process

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "http-api.md"


def curl_lines(markdown: str) -> list[tuple[str, int | None]]:
    """Each curl command of the ```sh blocks (continuation lines joined), with the status its comment names."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", markdown, flags=re.DOTALL):
        for command in block.replace("\\\n", " ").splitlines():
            if command.startswith("curl "):
                line, _, comment = command.partition("  # ")
                status = re.match(r"(\d{3}) ", comment)
                found.append((line.strip(), int(status.group(1)) if status else None))
    return found


@pytest.fixture
def orders_api(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment the guide's commands read: API (the live server's /api/v1) and an operator ETL_CRAFT_TOKEN."""
    project = write_project(tmp_path / "p", None, {"orders": [Task("load")]}, [])
    assert etl_craft("migrate", cwd=project).code == 0
    assert etl_craft("run", "--pipeline-code", "orders", cwd=project).code == 0
    made = etl_craft("token", "create", "--name", "ci", "--role", "operator", "--format", "json", cwd=project)
    assert made.code == 0, made.err
    config = load_config(project)
    db = EngineDB(config.engine.url)
    address = f"127.0.0.1:{_free_port()}"
    problems: list[str] = []
    with api_in_thread(db, config, address, problems.append) as server:
        assert server is not None, problems
        yield {"API": f"http://{address}/api/v1", "ETL_CRAFT_TOKEN": json.loads(made.out)["token"]}
    db.dispose()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_guide_curl_examples__each_answers_as_the_guide_says(orders_api: dict[str, str]) -> None:
    examples = curl_lines(GUIDE.read_text(encoding="utf-8"))
    assert len(examples) >= 10 and any(status for _, status in examples), examples
    env = {**os.environ, **orders_api}
    for command, status in examples:
        done = subprocess.run(["bash", "-c", f"{command} -o /dev/null -w '\\n%{{http_code}}'"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        answered = int(done.stdout.splitlines()[-1])
        assert done.returncode == 0 and (answered == status if status else 200 <= answered < 300), \
            (command, answered, done.stdout, done.stderr)
